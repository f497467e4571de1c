"""bench/replicate.py's table logic: verdicts, shared runs, and the markdown a report becomes."""

from __future__ import annotations

import math

import pytest


def test_verdict_is_a_welch_test_at_five_percent(replicate):
    from bench.replication_rows import verdict

    low, high = [1.0, 1.1, 0.9], [2.0, 2.1, 1.9]
    assert verdict(low, high) == "yes"
    assert verdict(high, low) == "no"
    noisy = [1.05, 0.2, 1.9]
    assert verdict(noisy, [1.1, 1.2, 1.0]).startswith("within noise (same direction")
    assert verdict([1.0, None, math.nan], high) == "yes"  # failed seeds are left out
    assert verdict([None], high) == "not run"
    assert verdict([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]) == "within noise (equal means)"  # a tie has no direction
    assert verdict([1.0, 2.0, 3.0], [3.0, 1.0, 2.0]) == "within noise (equal means)"


def test_two_standard_errors_are_not_enough_at_three_seeds(replicate):
    """The RLSTM row's figures (3.302 ± 0.014 against 3.387 ± 0.040 bpc): the gap is more than two
    standard errors of the difference (0.085 > 0.049), but Welch's p is 0.054, so not a "yes"."""
    from bench.replication_rows import stated, verdict, welch_p

    rlstm, lstm = [3.288, 3.302, 3.316], [3.347, 3.387, 3.427]
    se = math.sqrt(0.014**2 / 3 + 0.040**2 / 3)
    assert 2 * se < 3.387 - 3.302
    assert welch_p(rlstm, lstm) == pytest.approx(0.054, abs=0.002)
    assert verdict(rlstm, lstm) == "within noise (same direction)"
    assert stated(rlstm, lstm) == "within noise (same direction), Welch p = 0.054"


def test_rounds_judge_wants_the_minimum_at_five_or_six(replicate):
    """Mogrifier paper §4.1: "r ∈ {5, 6}"; a minimum at r = 4 is only "partly"."""
    from bench.replication_rows import judge_rounds

    curve = {f"r={r}": [3.0 - 0.1 * min(r, 5) + d for d in (0.0, 0.01, -0.01)] for r in range(7)}
    comparison, agrees = judge_rounds(curve)
    assert agrees == "yes" and "lowest at r=5" in comparison
    flat_then_best_at_one = {k: [v[0] + (-1.0 if k == "r=1" else 0.0)] * 3 for k, v in curve.items()}
    assert judge_rounds(flat_then_best_at_one)[1] == "partly"
    best_at_four = {
        k: [v[0] + (-1.0 if k == "r=4" else 0.0) + d for d in (0.0, 0.01, -0.01)] for k, v in curve.items()
    }
    comparison, agrees = judge_rounds(best_at_four)
    assert "lowest at r=4" in comparison and agrees == "partly"


def test_averaging_judges_can_fail(replicate):
    """2TA against the raw iterate is judged on test losses, where 2TA's validation choice can lose."""
    from bench.replication_rows import judge_averaging, judge_switch

    good, bad = [1.0, 1.01, 0.99], [1.5, 1.51, 1.49]
    assert judge_averaging({"2TA": good, "raw iterate": bad, "best fixed tail": good})[1] == "yes"
    comparison, agrees = judge_averaging({"2TA": bad, "raw iterate": good, "best fixed tail": bad})
    assert agrees == "no" and comparison.startswith("2TA < raw: no")
    assert judge_switch({"2TA": good, "switch": [1.0, 0.99, 1.01]})[1] == "yes"  # on par
    assert judge_switch({"2TA": good, "switch": bad})[1] == "no"  # 2TA improving on TA contradicts
    assert judge_switch({"2TA": bad, "switch": good})[1] == "no"  # and so does 2TA clearly worse


def test_both_averaging_rows_read_2ta_against_tail_averaging_alike(replicate):
    """The same values of 2TA and a tail average get the same verdict from both rows (the averaging
    row's raw-iterate half agreeing), whichever side is better."""
    from bench.replication_rows import judge_averaging, judge_switch

    raw = [2.0, 2.01, 1.99]  # far above: 2TA < raw holds
    good, on_par, bad = [1.0, 1.01, 0.99], [1.0, 0.99, 1.01], [1.5, 1.51, 1.49]
    for two_ta, tail in ((good, on_par), (good, bad), (bad, good)):
        switch = judge_switch({"2TA": two_ta, "switch": tail})[1]
        averaging = judge_averaging({"2TA": two_ta, "raw iterate": raw, "best fixed tail": tail})[1]
        assert switch == averaging


def test_rows_share_runs_and_union_their_measurements(replicate, tmp_path):
    chosen = replicate.rows("small")
    base = {**replicate.SCALES["small"], "device": "cpu"}
    jobs, plan = replicate.plan_jobs(chosen, base, tmp_path)
    mogrifier = plan[("mogrifier", "Mogrifier LSTM")]
    assert mogrifier == plan[("rounds", "r=5")] == plan[("averaging", "2TA")] == plan[("dyneval", "static")]
    assert plan[("mogrifier", "LSTM")] == plan[("rounds", "r=0")] == plan[("rlstm", "LSTM")]
    assert plan[("averaging_switch", "2TA")] == mogrifier  # the same budget: only the averaging differs
    switch = [jobs[k]["config"] for k in plan[("averaging_switch", "switch")]]
    assert all(c["averaging"] == "switch" and c["max_steps"] == base["max_steps"] for c in switch)
    for key in mogrifier:
        assert jobs[key]["tails"] and jobs[key]["config"]["dyneval"]
    assert not any(jobs[k]["tails"] or jobs[k]["config"]["dyneval"] for k in plan[("rounds", "r=3")])
    seeds = {jobs[k]["config"]["seed"] for k in plan[("rlstm", "Mogrifier RLSTM")]}
    assert seeds == set(replicate.SEEDS)
    assert len({jobs[k]["config"]["run_dir"] for k in jobs}) == len(jobs)
    assert plan[("reverse_copy", "LSTM T=20")] == plan[("reverse_copy_xent", "LSTM T=20")]
    assert {jobs[k]["config"]["dataset"] for k in plan[("reverse_copy", "Mogrifier T=5")]} == {"reverse_copy"}


def test_report_and_markdown(replicate, tmp_path):
    chosen = [r for r in replicate.rows("small") if r.name in ("mogrifier", "averaging")]
    base = {**replicate.SCALES["small"], "device": "cpu"}
    jobs, plan = replicate.plan_jobs(chosen, base, tmp_path)
    results = {}
    for key, job in jobs.items():
        mog = job["config"]["cell"] == "mogrifier_lstm"
        loss = (1.0 if mog else 1.2) + 0.01 * job["config"]["seed"]
        results[key] = {
            "test_loss": loss * math.log(2),
            "final_test_2ta": loss,
            "final_test_raw": loss + 0.3,
            "tails": {0: loss + 0.2, 150: loss + 0.01},  # validation: the tail from 150 is chosen
            "tails_test": {0: loss - 0.5, 150: loss + 0.02},  # ...and judged on test
        }
    report = replicate.build_report(chosen, plan, results)
    rows = {r["name"]: r for r in report["rows"]}
    assert rows["mogrifier"]["agrees"] == "yes"
    assert rows["mogrifier"]["values"]["Mogrifier LSTM"] == pytest.approx([1.0, 1.01, 1.02])
    assert rows["averaging"]["values"]["best fixed tail"] == pytest.approx(
        [(1.0 + 0.01 * s + 0.02) / math.log(2) for s in replicate.SEEDS]
    )
    assert rows["averaging"]["values"]["2TA"] == pytest.approx(
        [(1.0 + 0.01 * s) / math.log(2) for s in (0, 1, 2)]
    )
    from bench.replication_doc import table as markdown_table

    table = markdown_table(report["rows"], "small")
    assert table.count("\n") == 3 and "1.010 ± 0.010" in table and "not run |" in table
    one_failed = dict(results, **{plan[("mogrifier", "LSTM")][0]: {"error": "RuntimeError: boom"}})
    failed = replicate.build_report(chosen, plan, one_failed)["rows"][0]
    assert failed["agrees"] == "not run" and "boom" in failed["comparison"]


def test_pending_runs_leave_the_row_pending(replicate, tmp_path):
    chosen = [r for r in replicate.rows("small") if r.name == "mogrifier"]
    _, plan = replicate.plan_jobs(chosen, {**replicate.SCALES["small"], "device": "cpu"}, tmp_path)
    first = plan[("mogrifier", "LSTM")][0]
    row = replicate.build_report(chosen, plan, {first: {"test_loss": 1.0}})["rows"][0]
    assert row["agrees"] == "pending" and row["comparison"].startswith("5 of its runs")
    from bench.replication_rows import fmt

    assert fmt(row["values"]["LSTM"]).endswith("(n=1)")


def fake_meta(replicate) -> dict:
    return {
        "scale": "small",
        "device": "cpu",
        "workers": 2,
        "wall_s": 600.0,
        "seeds": list(replicate.SEEDS),
        "base": {**replicate.SCALES["small"], "device": "cpu"},
        "runs_done": 1,
        "runs_planned": 1,
        "date": "2026-11-27",
        "command": "python -m bench.replicate --workers 2",
        "machine": {
            "cpu": "a CPU",
            "cpus": 2,
            "platform": "Linux",
            "torch": "2",
            "python": "3",
            "load_average": [1, 2],
        },
    }


def test_the_script_writes_the_whole_document_with_full_rows(replicate, tmp_path):
    """Every table row has the header's 7 cells (a verdict cell included), and the document states
    where it was measured; the --scale ptb line does not claim to compare the papers' recipes."""
    rows = [
        {
            "name": r.name,
            "claim": r.claim,
            "paper": r.paper,
            "paper_ptb": r.paper_ptb,
            "values": {label: [1.0, 1.1, 0.9] for label in r.arms},
            "comparison": "c | with a pipe",
            "agrees": "within noise (equal means)",
        }
        for r in replicate.rows("small")
    ]
    doc = tmp_path / "replication.md"
    text = replicate.write_document(
        doc, rows, fake_meta(replicate), [r.name for r in replicate.rows("small")]
    )
    assert doc.read_text() == text and text.startswith("# A small-scale replication")
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + len(rows)  # the header and one line a row
    cells = [len(line.replace("\\|", "").split("|")) - 2 for line in table]
    assert set(cells) == {7}
    assert "2026-11-27" in text and "a CPU" in text and "python -m bench.replicate --workers 2" in text
    assert "where a row would compare" not in text and "neither paper's recipe" in text


def test_render_judges_saved_rows_again(replicate, tmp_path):
    """--render rewrites the document from results.json with today's judges: a saved rounds row with
    its minimum at r = 4 that an older judge called "yes" is "partly" now."""
    import json

    values = {f"r={r}": [3.0 - 0.1 * r + d for d in (0.0, 0.01, -0.01)] for r in range(5)}
    values |= {"r=5": [2.8, 2.81, 2.79], "r=6": [2.8, 2.81, 2.79]}
    saved = {
        "rows": [
            {
                "name": "rounds",
                "claim": "old claim",
                "paper": "old",
                "paper_ptb": "old",
                "values": values,
                "comparison": "lowest at r=4",
                "agrees": "yes",
            }
        ],
        "meta": fake_meta(replicate),
        "runs": [],
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(saved))
    doc = tmp_path / "doc.md"
    replicate.main(["--render", str(path), "--doc", str(doc)])
    line = next(line for line in doc.read_text().splitlines() if line.startswith("| Rounds curve"))
    assert "| partly |" in line and "lowest at r=4" in line


def test_the_committed_document_is_what_the_script_writes_from_the_committed_results(replicate, tmp_path):
    """docs/replication.md is the script's output for docs/results/replication.json: no hand edits."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    doc = tmp_path / "replication.md"
    replicate.main(["--render", str(root / "docs" / "results" / "replication.json"), "--doc", str(doc)])
    assert doc.read_text() == (root / "docs" / "replication.md").read_text()
