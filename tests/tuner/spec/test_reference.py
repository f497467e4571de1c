"""docs/contracts.md holds the spec's reference table as the spec renders it, and names every study
attribute the code writes."""

from __future__ import annotations

import re
from pathlib import Path

from tuner.spec.reference import table

ROOT = Path(__file__).resolve().parents[3]
CONTRACTS = (ROOT / "docs" / "contracts.md").read_text()
# A study attribute the code writes: set_user_attr("name", ...), set_study_user_attr(id, "name", ...),
# or a module constant NAME_ATTR = "name" naming one.
WRITES = re.compile(
    r'set_user_attr\(\s*"([a-z_]+)"|set_study_user_attr\([^,]+,\s*"([a-z_]+)"|[A-Z_]*ATTR = "([a-z_]+)"'
)


def test_the_spec_table_is_current():
    assert table() in CONTRACTS, "regenerate it: python -m tuner.spec.reference"


def test_every_study_attribute_written_is_documented():
    section = CONTRACTS.split("## Study (Optuna RDB storage)", 1)[1].split("\n## ", 1)[0]
    written = set()
    for path in (ROOT / "tuner").rglob("*.py"):
        for match in WRITES.finditer(path.read_text()):
            written.add(next(g for g in match.groups() if g))
    assert written, "the scan found no attribute writes"
    undocumented = sorted(name for name in written if f"`{name}`" not in section)
    assert not undocumented, f"study or trial attributes missing from docs/contracts.md: {undocumented}"
