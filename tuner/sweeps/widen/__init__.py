"""Widening a study's range and continuing it: `ranges` (the stored space widened) and `control` (through the API)."""
