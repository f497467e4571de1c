"""docs/contracts.md holds the spec's reference table as the spec renders it (the study and trial
attributes' tables are checked with their registries, tests/tuner/test_attr_registries.py)."""

from __future__ import annotations

from pathlib import Path

from tuner.spec.reference import table

ROOT = Path(__file__).resolve().parents[3]
CONTRACTS = (ROOT / "docs" / "contracts.md").read_text()


def test_the_spec_table_is_current():
    assert table() in CONTRACTS, "regenerate it: python -m tuner.spec.reference"
