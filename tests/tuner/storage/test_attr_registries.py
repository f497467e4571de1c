"""One place names each study attribute (`tuner/storage/study_attrs.py`) and each trial attribute
(`tuner/storage/trial_attrs.py`). docs/contracts.md's tables are generated from them, and no module reads or
writes an attribute by a string of its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tuner.storage import study_attrs, trial_attrs

ROOT = Path(__file__).resolve().parents[3]
KEYS = [a.key for a in study_attrs.ALL]
TRIAL_KEYS = [a.key for a in trial_attrs.ALL]
# Where a string names an attribute: the key argument of set_user_attr(KEY, ...),
# set_study_user_attr(id, KEY, ...) and set_trial_user_attr(id, KEY, ...); a subscript or `.get(KEY`
# of anything named *attrs; `KEY in ...attrs`; the keys of a `user_attrs={...}` argument. Read from
# the syntax tree, so quotes of either kind and f-strings are all seen.
SETTERS = {"set_user_attr": 0, "set_study_user_attr": 1, "set_trial_user_attr": 1}


def _is_attrs(node: ast.AST) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name.endswith("attrs")


def _named_keys(tree: ast.AST) -> list[ast.expr]:
    """Every expression in `tree` that stands where an attribute's key goes."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            position = SETTERS.get(node.func.attr)
            if position is not None and len(node.args) > position:
                found.append(node.args[position])
            if node.func.attr == "get" and _is_attrs(node.func.value) and node.args:
                found.append(node.args[0])
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "user_attrs" and isinstance(keyword.value, ast.Dict):
                    found += [k for k in keyword.value.keys if k is not None]
        if isinstance(node, ast.Subscript) and _is_attrs(node.value):
            found.append(node.slice)
        if (
            isinstance(node, ast.Compare)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            and any(_is_attrs(c) for c in node.comparators)
        ):
            found.append(node.left)
    return found


def literal_keys(text: str, keys: list[str]) -> list[str]:
    """The attribute keys of `keys` that `text` names by a string literal, and `f"..."` for each
    f-string in a key's place (whatever it would name)."""
    named = []
    for expr in _named_keys(ast.parse(text)):
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str) and expr.value in keys:
            named.append(expr.value)
        elif isinstance(expr, ast.JoinedStr):
            named.append('f"..."')
    return named


def literal_study_keys(text: str) -> list[str]:
    return literal_keys(text, KEYS)


def literal_trial_keys(text: str) -> list[str]:
    return literal_keys(text, TRIAL_KEYS)


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
        "study.set_user_attr('status', 'x')",
        'storage.set_study_user_attr(row.study_id, "status", s)',
        'row.user_attrs.get("space_def")',
        'attrs["warm_start"]',
        "attrs['warm_start']",
        'if "space_def" not in study.user_attrs: pass',
        'x = attrs[f"{name}"]',
    ):
        assert literal_study_keys(line), line
    assert not literal_study_keys('trial.user_attrs.get("run_dir")')  # a trial attribute
    assert not literal_study_keys('warm["studies"]')  # a value's own field, not an attribute
    for line in (
        'live.trial.set_user_attr("wall_time_s", 1.0)',
        'storage.set_trial_user_attr(trial_id, "error", reason)',
        't.user_attrs.get("retry_of")',
        "t.user_attrs['retry_of']",
        'attrs["checkpoint"]',
        'enqueue_trial(params, user_attrs={"retry_of": 3})',
        'if "needs_retry" in trial.user_attrs: pass',
        'trial.set_user_attr(f"retry_{kind}", 1)',
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


def test_each_type_is_declared_with_its_key_and_agrees_with_the_annotation():
    """The registry takes each type explicitly; mypy reads the `Key[T]` annotation: the two agree."""
    import typing

    from tuner.storage.attr_registry import Key, Registry

    registry = Registry()
    limit = registry("limit", int, "a test", "a number")
    assert [(a.key, a.kind) for a in registry.all] == [("limit", int)] and limit == "limit"
    with pytest.raises(ValueError, match="attribute limit is declared twice"):
        registry("limit", str, "a test", "again")
    assert [a.kind for a in study_attrs.ALL if a.key == "checkpoint_bytes"] == [int]
    for module in (study_attrs, trial_attrs):
        hints = typing.get_type_hints(module)
        annotated = {
            str(getattr(module, name)): typing.get_args(hint)[0]
            for name, hint in hints.items()
            if typing.get_origin(hint) is Key
        }
        assert annotated == {a.key: a.kind for a in module.ALL}, module.__name__


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
