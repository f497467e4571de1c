"""The rules a sweep applies to its trials: early stopping (ASHA, Hyperband brackets), the
study-level stop, Ray's schedulers built from them, and checkpoint retention."""
