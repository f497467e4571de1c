"""One place names each study attribute: `tuner/study_attrs.py`. docs/contracts.md's table is
generated from it, and no module reads or writes a study attribute by a string of its own."""

from __future__ import annotations

import re
from pathlib import Path

from tuner import study_attrs

ROOT = Path(__file__).resolve().parents[2]
KEYS = [a.key for a in study_attrs.ALL]
# A study attribute named by a literal: X.set_user_attr("key" on a study, set_study_user_attr(id,
# "key", or any `...attrs.get("key"` / `...attrs["key"]` / `"key" in ...attrs` with a study key.
LITERAL = re.compile(
    r'(?:study\.set_user_attr\(\s*|set_study_user_attr\([^,()]+,\s*|attrs(?:\.get\(|\[))"(?P<a>[a-z_]+)"'
    r'|"(?P<b>[a-z_]+)" (?:not )?in [\w.]*attrs\b'
)


def literal_study_keys(text: str) -> list[str]:
    return [k for m in LITERAL.finditer(text) if (k := m["a"] or m["b"]) in KEYS]


def test_the_table_in_the_contracts_page_is_current():
    contracts = (ROOT / "docs" / "contracts.md").read_text()
    assert study_attrs.table() in contracts, "regenerate it: python -m tuner.study_attrs"


def test_each_key_is_named_once():
    assert len(KEYS) == len(set(KEYS)) and all(re.fullmatch(r"[a-z_]+", k) for k in KEYS)
    assert {study_attrs.SPACE_DEF, study_attrs.STATUS, study_attrs.SPEC} <= set(KEYS)


def test_the_scan_finds_a_literal_key():
    """The check below can fail: each way of naming a key by a string is caught."""
    for line in (
        'study.set_user_attr("status", "x")',
        'storage.set_study_user_attr(row.study_id, "status", s)',
        'row.user_attrs.get("space_def")',
        'attrs["warm_start"]',
        'if "space_def" not in study.user_attrs:',
    ):
        assert literal_study_keys(line), line
    assert not literal_study_keys('trial.user_attrs.get("run_dir")')  # a trial attribute


def test_no_module_names_a_study_attribute_by_a_string():
    found = {
        str(path.relative_to(ROOT)): keys
        for path in (ROOT / "tuner").rglob("*.py")
        if path.name != "study_attrs.py" and (keys := literal_study_keys(path.read_text()))
    }
    assert not found, f"use tuner.study_attrs instead of these strings: {found}"
