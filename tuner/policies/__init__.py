"""The rules a sweep applies to its trials: early stopping (ASHA, Hyperband brackets, the rank
agreement between rungs and its back-off), the study-level stop, Ray's schedulers built from them,
and checkpoint retention."""
