"""`rnntune compare`: the table and verdict in the terminal, `--json` equal to the API's answer,
exit 2 for studies of different tasks (naming the setting) or a missing study."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from tests.tuner.api.fixtures import live_server
from tests.tuner.compare_studies import make_compared
from tuner.api import ApiSettings
from tuner.cli import main


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("compare-cli")
    db_url = f"sqlite:///{root / 'cmp.db'}"
    rng = np.random.default_rng(2)
    mog = make_compared(db_url, "mog", root, 4.0 + 0.3 * rng.random(20), pruned=5)
    lstm = 4.3 + 0.3 * rng.random(12)
    make_compared(db_url, "lstm", root, lstm, cell="lstm")
    make_compared(db_url, "lstm2", root, lstm[::-1], cell="lstm")  # the same values: no verdict either way
    make_compared(db_url, "short", root, 4.0 + 0.3 * rng.random(12), overrides={"max_steps": 100, "bptt": 16})
    mog.set_user_attr(
        "finalize",
        {
            "0": {
                "value": 4.01,
                "params": {},
                "reruns": [{"seed": 1, "val_loss": 4.1}, {"seed": 2, "val_loss": 4.2}],
            }
        },
    )
    return {"db_url": db_url, "root": root}


def test_compare_prints_the_table_and_the_verdicts(env, capsys):
    assert main(["compare", "mog", "lstm", "lstm2", "--db", env["db_url"]]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("task: dataset=builtin, max_steps=200, hidden_size=48")
    header = next(line for line in lines if line.startswith("study"))
    assert "E[best of 12] [90% band]" in header and "reruns of the best" in header
    mog = next(line for line in lines if line.startswith("mog "))
    assert "mogrifier_lstm" in mog and "trial 0: 4.1500 ± 0.0707 (n=2)" in mog
    lstm = next(line for line in lines if line.startswith("lstm "))
    assert "not finalised: rnntune finalize lstm --top 3 --seeds 3" in lstm
    assert "mog is better than lstm by " in text and "at 12 trials" in text
    assert "lstm and lstm2 are not separable at this budget, 12 trials" in text
    assert "at equal training steps (" in text and text.rstrip().splitlines()[-1].startswith("test: Per pair")


def test_json_is_what_the_api_answers(env, capsys):
    assert main(["compare", "mog", "lstm", "--db", env["db_url"], "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    with live_server(ApiSettings(db_url=env["db_url"], storage_root=env["root"])) as url:
        served = httpx.get(f"{url}/compare", params={"studies": "mog,lstm"}, timeout=60).json()
    assert printed == served


def test_studies_of_different_tasks_exit_2_naming_the_settings(env, capsys):
    assert main(["compare", "mog", "short", "--db", env["db_url"]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: studies: not the same task: ")
    assert "max_steps differs (mog: 200, short: 100)" in err and "bptt differs (mog: 32, short: 16)" in err


def test_a_missing_study_or_a_single_name_exit_2(env, capsys):
    assert main(["compare", "mog", "nope", "--db", env["db_url"]]) == 2
    assert "no study named 'nope'" in capsys.readouterr().err
    assert main(["compare", "mog", "--db", env["db_url"]]) == 2
    assert "give 2 to 8 study names, got 1" in capsys.readouterr().err


def test_fronts_on_shared_axes_say_which_study_wins_where(tmp_path, capsys):
    """`rnntune compare --front num_params`: each study's front, the front of both together with
    each point's study (worked by hand in the comments), and the plot on shared axes."""
    from tests.tuner.api.fixtures import make_mo_study

    db = f"sqlite:///{tmp_path / 's.db'}"
    make_mo_study(db, "a", tmp_path / "a")  # front (num_params, loss): (2000, 4.6) (3000, 4.2) (4800, 3.9)
    make_mo_study(db, "b", tmp_path / "b", trials=[(4.1, 2500), (4.45, 1500), (3.95, 4000)])
    plot = tmp_path / "fronts.html"
    assert (
        main(["compare", "a", "b", "--front", "num_params", "--plot", str(plot), "--db", db, "--json"]) == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert [p["number"] for p in result["studies"][0]["front"]] == [4, 2, 0]
    assert [p["number"] for p in result["studies"][1]["front"]] == [1, 0, 2]
    # a's (2000, 4.6) loses to b's (1500, 4.45), a's (3000, 4.2) to b's (2500, 4.1): b wins below 4800
    assert [(w["study"], w["number"]) for w in result["winners"]] == [("b", 1), ("b", 0), ("b", 2), ("a", 0)]
    page = plot.read_text()
    assert '"name":"a"' in page and '"name":"b"' in page and "best of all" in page
    assert main(["compare", "a", "b", "--front", "num_params", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "a: front of (num_params, val_loss): #4 (2000, 4.6000)" in text
    assert main(["compare", "a", "b", "--front", "speed", "--db", db]) == 2
    assert "unknown measure 'speed'" in capsys.readouterr().err
