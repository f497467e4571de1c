"""Noise-aware finalisation: `rerun` (a study's best configurations with fresh seeds, thesis Appendix 2.B) and `launch` (as a child process for the API)."""
