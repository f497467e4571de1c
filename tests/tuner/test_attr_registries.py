"""One place names each study attribute (`tuner/study_attrs.py`) and each trial attribute
(`tuner/trial_attrs.py`). docs/contracts.md's tables are generated from them, and no module reads or
writes an attribute by a string of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tuner import study_attrs, trial_attrs

ROOT = Path(__file__).resolve().parents[2]
KEYS = [a.key for a in study_attrs.ALL]
TRIAL_KEYS = [a.key for a in trial_attrs.ALL]
# A study attribute named by a literal: X.set_user_attr("key" on a study, set_study_user_attr(id,
# "key", or any `...attrs.get("key"` / `...attrs["key"]` / `"key" in ...attrs` with a study key.
LITERAL = re.compile(
    r'(?:study\.set_user_attr\(\s*|set_study_user_attr\([^,()]+,\s*|attrs(?:\.get\(|\[))"(?P<a>[a-z_]+)"'
    r'|"(?P<b>[a-z_]+)" (?:not )?in [\w.]*attrs\b'
)


# A trial attribute named by a literal: trial.set_user_attr("key", set_trial_user_attr(id, "key",
# `...attrs.get("key"` / `...attrs["key"]`, `user_attrs={"key"` or `"key" in ...attrs`.
TRIAL_LITERAL = re.compile(
    r'(?:set_user_attr\(\s*|set_trial_user_attr\([^,()]+,\s*|attrs(?:\.get\(|\[)|user_attrs=\{)"(?P<a>[a-z_]+)"'
    r'|"(?P<b>[a-z_]+)" (?:not )?in [\w.]*attrs\b'
)


def literal_study_keys(text: str) -> list[str]:
    return [k for m in LITERAL.finditer(text) if (k := m["a"] or m["b"]) in KEYS]


def literal_trial_keys(text: str) -> list[str]:
    return [k for m in TRIAL_LITERAL.finditer(text) if (k := m["a"] or m["b"]) in TRIAL_KEYS]


@pytest.mark.parametrize("registry", [study_attrs, trial_attrs], ids=["study", "trial"])
def test_the_table_in_the_contracts_page_is_current(registry):
    contracts = (ROOT / "docs" / "contracts.md").read_text()
    assert registry.table() in contracts, f"regenerate it: python -m {registry.__name__}"


@pytest.mark.parametrize("keys", [KEYS, TRIAL_KEYS], ids=["study", "trial"])
def test_each_key_is_named_once(keys):
    assert len(keys) == len(set(keys)) and all(re.fullmatch(r"[a-z_]+", k) for k in keys)
    assert {study_attrs.SPACE_DEF, study_attrs.STATUS, study_attrs.SPEC} <= set(KEYS)
    assert {trial_attrs.RUN_DIR, trial_attrs.WALL_TIME_S, trial_attrs.ERROR} <= set(TRIAL_KEYS)


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
    for line in (
        'live.trial.set_user_attr("wall_time_s", 1.0)',
        'storage.set_trial_user_attr(trial_id, "error", reason)',
        't.user_attrs.get("retry_of")',
        'attrs["checkpoint"]',
        'enqueue_trial(params, user_attrs={"retry_of": 3})',
        'if "needs_retry" in trial.user_attrs:',
    ):
        assert literal_trial_keys(line), line


@pytest.mark.parametrize(
    ("scan", "own"),
    [(literal_study_keys, "study_attrs.py"), (literal_trial_keys, "trial_attrs.py")],
    ids=["study", "trial"],
)
def test_no_module_names_an_attribute_by_a_string(scan, own):
    found = {
        str(path.relative_to(ROOT)): keys
        for path in (ROOT / "tuner").rglob("*.py")
        if path.name != own and (keys := scan(path.read_text()))
    }
    assert not found, f"use tuner.{own.removesuffix('.py')} instead of these strings: {found}"


@pytest.mark.parametrize("registry", [study_attrs, trial_attrs], ids=["study", "trial"])
def test_a_value_of_the_wrong_type_is_refused_naming_the_key_before_it_is_stored(registry):
    class Target:
        def __init__(self) -> None:
            self.stored: dict = {}

        def set_user_attr(self, key, value):
            self.stored[key] = value

    key, good, bad = (
        (study_attrs.STATUS, "running", "runing")
        if registry is study_attrs
        else (trial_attrs.WALL_TIME_S, 1.5, "1.5 s")
    )
    target = Target()
    key.write(target, good)
    assert target.stored == {key: good} and type(next(iter(target.stored))) is str
    with pytest.raises(TypeError, match=rf"attribute {key}: '{bad}' is not "):
        key.write(target, bad)
    with pytest.raises(TypeError, match=rf"attribute {key}: '{bad}' is not "):
        registry.write(target, key, bad)  # a key chosen at run time
    assert target.stored == {key: good}
    with pytest.raises(KeyError, match="'no_such_key' is not a declared attribute"):
        registry.checked("no_such_key", 1)


# A read of an attribute that bypasses its key's type: `attrs.get(study_attrs.KEY` or `attrs[KEY]`
# not followed by an assignment (building a dict of attributes to write is fine).
UNTYPED_READ = re.compile(
    r"\.get\((?:study|trial)_attrs\.[A-Z_]+|\[(?:study|trial)_attrs\.[A-Z_]+\](?!\s*=[^=])"
)


def test_the_read_scan_finds_an_untyped_read():
    """The check below can fail: each untyped way of reading an attribute is caught."""
    for line in (
        "row.user_attrs.get(study_attrs.STATUS)",
        "t.user_attrs[trial_attrs.RUN_DIR]",
        "a[study_attrs.SPEC] == b",
    ):
        assert UNTYPED_READ.search(line), line
    assert not UNTYPED_READ.search("attrs[study_attrs.SPEC] = spec.stored()")
    assert not UNTYPED_READ.search("study_attrs.STATUS.of(row.user_attrs)")


def test_every_module_reads_attributes_typed_through_their_keys():
    found = {
        str(path.relative_to(ROOT)): UNTYPED_READ.findall(text)
        for path in (ROOT / "tuner").rglob("*.py")
        if UNTYPED_READ.search(text := path.read_text())
    }
    assert not found, f"read these through KEY.of(attrs) or KEY.required(attrs): {found}"


def test_a_key_is_its_stored_string_and_reads_its_value():
    import pickle

    attrs = {"status": "running"}
    assert study_attrs.STATUS == "status" and study_attrs.STATUS in attrs
    assert study_attrs.STATUS.of(attrs) == "running" and study_attrs.STATUS.required(attrs) == "running"
    assert study_attrs.SPEC.of(attrs) is None and study_attrs.WIDENED.of(attrs, []) == []
    with pytest.raises(KeyError, match="attribute space_def is not stored"):
        study_attrs.SPACE_DEF.required(attrs)
    # Ray and multiprocessing pickle attribute dicts: a key travels as the plain string.
    assert type(pickle.loads(pickle.dumps(study_attrs.STATUS))) is str


def test_each_type_is_read_from_the_keys_annotation_and_a_key_without_one_is_refused():
    import sys
    import types

    from tuner.attr_registry import Key, Registry

    module = types.ModuleType("attrs_under_test")
    registry = Registry()
    module.__annotations__ = {"LIMIT": Key[int]}
    module.LIMIT = registry("limit", "a test", "a number")
    module.UNTYPED = registry("untyped", "a test", "anything")
    sys.modules[module.__name__] = module
    try:
        with pytest.raises(TypeError, match="attribute untyped is declared without a Key"):
            registry.typed_by(module.__name__)
    finally:
        del sys.modules[module.__name__]
    assert [(a.key, a.kind) for a in registry.all] == [("limit", int)]  # read before the refusal
    assert [a.kind for a in study_attrs.ALL if a.key == "checkpoint_bytes"] == [int]


def test_values_are_checked_in_their_stored_json_form():
    """What Optuna stores is JSON: a tuple is a list there, and a float attribute takes an int."""
    assert trial_attrs.checked(trial_attrs.GPU_IDS, ("0", "1")) == ("0", "1")
    assert trial_attrs.checked(trial_attrs.WALL_TIME_S, 3) == 3
    with pytest.raises(TypeError, match="attribute gpu_ids"):
        trial_attrs.checked(trial_attrs.GPU_IDS, [0, 1])  # Ray's ids are strings
    with pytest.raises(TypeError, match="attribute status"):
        study_attrs.checked(study_attrs.STATUS, None)


def test_the_atomic_write_checks_every_value_and_stores_none_of_a_bad_set(tmp_path):
    import optuna

    from tuner.storage.attrs import set_study_attrs

    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 's.db'}")
    study = optuna.create_study(study_name="s", storage=storage)
    with pytest.raises(TypeError, match="attribute widened"):
        set_study_attrs(storage, "s", {study_attrs.STATUS: "running", study_attrs.WIDENED: "wider"})
    assert study.user_attrs == {}
    set_study_attrs(storage, "s", {study_attrs.STATUS: "running", study_attrs.WIDENED: []})
    assert optuna.load_study(study_name="s", storage=storage).user_attrs == {
        "status": "running",
        "widened": [],
    }


def test_the_training_path_attribute_takes_every_path_the_trainer_reports():
    """`cuda_path_used` is declared here without importing the trainer (the API reads this module):
    its values must be the trainer's own list."""
    import typing

    from trainer.cells.paths import PathUsed

    for path in typing.get_args(PathUsed):
        assert trial_attrs.checked(trial_attrs.CUDA_PATH_USED, path) == path
    declared = next(a.kind for a in trial_attrs.ALL if a.key == trial_attrs.CUDA_PATH_USED)
    assert set(typing.get_args(declared)) == set(typing.get_args(PathUsed))
