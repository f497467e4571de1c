"""The rules a sweep applies to its trials: early stopping (ASHA, Hyperband brackets, the rank
agreement between rungs and its back-off), the study-level stop, Ray's schedulers built from them,
checkpoint retention, and the tuning procedure (rnntune's or the papers', `procedure`)."""
