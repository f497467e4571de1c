"""The shipped space files: the papers' ranges, found by name, valid under the exported JSON schema."""

from __future__ import annotations

import json
import math
import textwrap

import jsonschema
import pytest
import yaml

from tuner.space import BUILTIN_SPACES_DIR, SpaceError, list_spaces, load_space
from tuner.space.schema import SCHEMA_FILE, json_schema, json_schema_text

# The paper recipes (tests/tuner/space/test_recipes.py), the old names kept as links to them, and the rest.
RECIPES = [
    f"mogrifier_paper_{task}_{model}"
    for task in ("ptb", "wt2", "enwik8")
    for model in ("lstm", "mogrifier_lstm")
] + [f"circling_back_ptb_{model}" for model in ("lstm", "rlstm", "mogrifier_lstm", "mogrifier_rlstm")]
RECIPES += ["mogrifier_paper_ptb_char_mogrifier_lstm", "mogrifier_paper_mwc_mogrifier_lstm"]
RECIPES += [f"circling_back_{task}_mogrifier_rlstm" for task in ("wt2", "ptb_char", "enwik8", "text8")]
RECIPES += ["maupome_meurs_ptb_char", "maupome_meurs_text8"]
SHIPPED = [
    *RECIPES,
    "mogrifier_lstm",
    "mogrifier_lstm_enwik8",
    "lstm",
    "rlstm",
    "dyneval",
    "tiny",
    "reverse_copy",
]

TABLE_2_4 = {
    "learning_rate": (0.001, 0.004, "log"),
    "input_embedding_ratio": (0.0, 2.0, "linear"),
    "l2_penalty": (5e-6, 1e-3, "log"),
    "input_dropout": (0.0, 0.9, "linear"),
    "inter_layer_dropout": (0.0, 0.95, "linear"),
    "state_dropout": (0.0, 0.8, "linear"),
    "output_dropout": (0.0, 0.95, "linear"),
    "mogrifier_rounds": (0, 6, "int"),
    "mogrifier_rank": (-20, 100, "int"),
}
TABLE_2_5 = {
    "learning_rate": (0.001, 0.004, "log"),
    "l2_penalty": (5e-6, 1e-3, "log"),
    "input_dropout": (0.0, 0.2, "linear"),
    "inter_layer_dropout": (0.0, 0.2, "linear"),
    "state_dropout": (0.0, 0.25, "linear"),
    "output_dropout": (0.0, 0.25, "linear"),
    "mogrifier_rounds": (0, 6, "int"),
    "mogrifier_rank": (-20, 100, "int"),
}
TABLE_2_6 = {
    "max_time_steps": (1, 20, "int"),
    "dyneval_learning_rate": (1e-6, 1e-3, "log"),
    "dyneval_decay_rate": (1e-6, 1e-2, "log"),
    "dyneval_epsilon": (1e-8, 1e-2, "log"),
}


def ranges(name: str) -> dict:
    return {n: (p.low, p.high, p.scale) for n, p in load_space(name).params.items()}


def test_every_shipped_file_loads_and_is_listed():
    listed = list_spaces()
    for name in SHIPPED:
        assert name in listed
        space = load_space(name)
        assert space.params and space.fixed and space.name == name
    assert sorted(p.stem for p in BUILTIN_SPACES_DIR.glob("*.yaml")) == sorted(SHIPPED)


def test_paper_ranges_are_exact():
    assert ranges("mogrifier_lstm") == TABLE_2_4
    lstm = dict(TABLE_2_4)
    del lstm["mogrifier_rounds"], lstm["mogrifier_rank"]
    assert ranges("lstm") == lstm
    assert ranges("mogrifier_lstm_enwik8") == TABLE_2_5
    assert ranges("dyneval") == TABLE_2_6
    # The Mogrifier RLSTM: no inter-layer dropout, and embedding size = hidden size (Circling Back §3).
    rlstm = {k: v for k, v in TABLE_2_4.items() if k not in ("inter_layer_dropout", "input_embedding_ratio")}
    rlstm["cell_output_dropout"] = (0.0, 0.95, "linear")
    rlstm["t_max"] = (math.exp(2), math.exp(5), "log")
    assert ranges("rlstm") == rlstm


def test_fixed_task_settings_follow_the_papers():
    ptb = load_space("mogrifier_lstm").fixed  # the Mogrifier paper's recipe (§3.3): one dropout sample
    assert (ptb["num_layers"], ptb["num_params"], ptb["bptt"], ptb["batch_size"], ptb["dropout_samples"]) == (
        2,
        24_000_000,
        70,
        64,
        1,
    )
    enwik8 = load_space("mogrifier_lstm_enwik8").fixed
    assert (enwik8["dataset"], enwik8["num_layers"], enwik8["bptt"], enwik8["dropout_samples"]) == (
        "enwik8",
        4,
        500,
        1,
    )
    assert "input_embedding_ratio" in enwik8  # not tuned on Enwik8 (Appendix 2.A)
    assert load_space("rlstm").fixed["architecture"] == "residual"
    assert load_space("tiny").fixed["dataset"] == "builtin"


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_files_validate_under_the_json_schema(name):
    path = BUILTIN_SPACES_DIR / f"{name}.yaml"
    jsonschema.Draft202012Validator(json_schema()).validate(yaml.safe_load(path.read_text()))
    assert path.read_text().startswith("# yaml-language-server: $schema=../docs/search-space.schema.json\n")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"params": {"learning_rat": {"low": 0.001, "high": 0.004, "scale": "log"}}}, "learning_rat"),
        ({"params": {"learning_rate": {"low": 0.001, "high": 0.004, "scale": "cubic"}}}, "cubic"),
        ({"params": {"learning_rate": {"low": "small", "high": 0.004, "scale": "log"}}}, "small"),
        ({"params": {}}, "should be non-empty"),
        ({"params": {"mogrifier_rank": {"low": -20, "high": 100}}}, "'scale' is a required property"),
        ({"params": {"input_dropout": {"low": 0, "high": 1, "scale": "int"}}}, "is not valid under any"),
        ({"params": {"cell": {"choices": ["lstm", "gru"]}}}, "'gru' is not one of"),
        ({"fixed": {"layers": 2}}, "layers"),
        ({"ranges": {}}, "ranges"),
    ],
)
def test_the_json_schema_rejects_malformed_files(change, message):
    raw = {**yaml.safe_load((BUILTIN_SPACES_DIR / "tiny.yaml").read_text()), **change}
    with pytest.raises(jsonschema.ValidationError) as err:
        jsonschema.Draft202012Validator(json_schema()).validate(raw)
    assert message in str(err.value)


def test_committed_schema_file_is_current():
    """Regenerate with `rnntune spaces schema > docs/search-space.schema.json` when this fails."""
    assert SCHEMA_FILE.read_text() == json_schema_text()
    schema = json.loads(SCHEMA_FILE.read_text())
    assert "learning_rate" in schema["properties"]["params"]["propertyNames"]["enum"]


def test_invalid_yaml_and_unknown_name(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("params: [unclosed\n")
    with pytest.raises(SpaceError, match="not valid YAML"):
        load_space(path)
    with pytest.raises(SpaceError, match=r"unknown search space 'nope'; known: .*tiny"):
        load_space("nope")
    path.write_text(
        textwrap.dedent("""
        name: other
        fixed: {hidden_size: 16}
        params: {learning_rate: {low: 0.001, high: 0.002, scale: log}}
    """)
    )
    with pytest.raises(SpaceError, match=r"unknown key.s. name; a space is named after its file"):
        load_space(path)


def test_user_space_dir_by_name(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text(
        "fixed: {dataset: builtin, hidden_size: 16}\nparams:\n  learning_rate: {low: 0.001, high: 0.002, scale: log}\n"
    )
    monkeypatch.setenv("RNNTUNE_SPACES_DIR", str(tmp_path))
    assert "mine" in list_spaces()
    space = load_space("mine")
    assert space.param("learning_rate").high == 0.002 and space.path == str(tmp_path / "mine.yaml")


def test_reverse_copy_space_follows_the_mogrifier_paper():
    """Mogrifier paper §4.3: 10M weights, vocabulary 1000, no dropout; lr, l2, embedding size, r, k tuned."""
    space = load_space("reverse_copy")
    fixed = space.fixed
    assert (fixed["dataset"], fixed["num_params"], fixed["reverse_copy_vocab"]) == (
        "reverse_copy",
        10_000_000,
        1000,
    )
    names = set(space.params)
    assert names == {
        "cell",
        "learning_rate",
        "l2_penalty",
        "input_embedding_ratio",
        "mogrifier_rounds",
        "mogrifier_rank",
    }
    assert not any("dropout" in n for n in names | set(fixed))
