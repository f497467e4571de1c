"""`rnntune spaces`: list, show (with overrides previewed) and the JSON schema."""

from __future__ import annotations

import json

from tests.tuner.space.test_files import SHIPPED
from tuner.cli import main


def test_spaces_command_lists_and_shows(capsys):
    assert main(["spaces"]) == 0
    out = capsys.readouterr().out
    for name in SHIPPED:
        assert name in out
    assert main(["spaces", "show", "rlstm"]) == 0
    out = capsys.readouterr().out
    assert "cell_output_dropout" in out and "inter_layer_dropout" not in out
    assert "[7.38906, 148.413]" in out
    assert main(["spaces", "show", "tiny", "--range", "learning_rate=0.001:0.002", "--set", "cell=lstm"]) == 0
    out = capsys.readouterr().out
    assert "[0.001, 0.002]" in out and "mogrifier_rounds" not in out
    assert main(["spaces", "show", "nope"]) == 2
    assert "unknown search space" in capsys.readouterr().err
    assert main(["spaces", "show", "tiny", "--range", "learning_rate"]) == 2
    assert "--range expects name=value, got 'learning_rate'" in capsys.readouterr().err


def test_spaces_schema_prints_the_json_schema(capsys):
    assert main(["spaces", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["required"] == ["params"] and schema["additionalProperties"] is False
    assert "learning_rate" in schema["properties"]["params"]["propertyNames"]["enum"]
