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
    assert verdict([1.0, 2.0, 3.0], [3.0, 1.0, 2.0]) == "within noise (equal means)"  # a tie has no direction


def test_a_degenerate_comparison_is_not_testable_and_gets_no_p(replicate):
    """The reverse-copy row at T = 20: accuracy 0.000 ± 0.000 for both arms. Welch's t is 0/0 there
    (scipy itself returns NaN), so no p is printed and no verdict given; nor for constant sides
    that differ (t = ±inf), nor one run against one run."""
    from scipy import stats

    from bench.replication_rows import stated, verdict, welch_p

    zeros = [0.0, 0.0, 0.0]
    assert math.isnan(stats.ttest_ind(zeros, zeros, equal_var=False).pvalue)
    assert math.isnan(welch_p(zeros, zeros))
    assert verdict(zeros, zeros) == stated(zeros, zeros) == "not testable (no spread across seeds)"
    assert verdict(zeros, [1.0, 1.0, 1.0]) == "not testable (no spread across seeds)"
    assert verdict([1.0], [2.0, None]) == "not testable (one run a side)"
    one_against_many = [1.0, 1.2, 1.1]
    assert welch_p([2.0], one_against_many) == pytest.approx(stats.ttest_1samp(one_against_many, 2.0).pvalue)


def test_welch_p_is_scipys_welch_test(replicate):
    from scipy import stats

    from bench.replication_rows import welch_p

    a, b = [2.9, 2.95, 2.87], [3.0, 2.99, 3.1, None]
    want = stats.ttest_ind([2.9, 2.95, 2.87], [3.0, 2.99, 3.1], equal_var=False).pvalue
    assert welch_p(a, b) == pytest.approx(want, rel=1e-12)


def test_tost_is_two_one_sided_welch_tests_against_the_margin(replicate):
    """TOST (Schuirmann 1987) by hand from Welch's statistic and Student's t: with d the difference
    of the means, se its standard error and ν the Welch–Satterthwaite degrees of freedom,
    p = max(P(T_ν > (d + δ)/se), P(T_ν < (d − δ)/se))."""
    from scipy import stats

    from bench.replication_rows import tost_p

    x, y, margin = [2.900, 2.902, 2.898, 2.901], [2.899, 2.901, 2.897], 0.01
    vx, vy = stats.tvar(x) / len(x), stats.tvar(y) / len(y)
    d, se = sum(x) / len(x) - sum(y) / len(y), math.sqrt(vx + vy)
    nu = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    want = max(stats.t.sf((d + margin) / se, nu), stats.t.cdf((d - margin) / se, nu))
    assert tost_p(x, y, margin) == pytest.approx(want, rel=1e-9)
    assert tost_p(x, y, margin) < 0.05  # within ±0.01
    assert tost_p(x, [v + 0.05 for v in y], margin) > 0.5  # 0.05 apart: not within ±0.01


def test_parity_needs_evidence_not_a_large_p(replicate):
    """The switch row as measured (3 seeds): Welch p = 0.96 is no evidence of parity; TOST within
    ±0.01 bpc (Circling Back §7's negligible gap) does not pass, so the row is "inconclusive"."""
    from bench.replication_rows import judge_switch, welch_p

    two_ta = [2.8920539196088857, 2.918398629520061, 2.8960348830450275]
    switch = [2.8920539196088857, 2.9144943561327614, 2.901410001335772]
    assert welch_p(two_ta, switch) == pytest.approx(0.96, abs=0.01)
    comparison, agrees = judge_switch({"2TA": two_ta, "switch": switch})
    assert agrees == "inconclusive" and "TOST within ±0.01" in comparison


def test_partly_needs_a_part_that_passes(replicate):
    """The RLSTM row as measured: neither half passes (p = 0.054 and 0.071), so it is not "partly"."""
    from bench.replication_rows import combine, rows

    values = {
        "Mogrifier RLSTM": [2.857726447814257, 2.867612613235801, 2.808019108611335],
        "Mogrifier LSTM": [2.8920539196088857, 2.918398629520061, 2.8960348830450275],
        "RLSTM": [3.3082026633256447, 3.311228870050227, 3.2854147043492374],
        "LSTM": [3.3511382789857818, 3.37836631263817, 3.430237875834173],
    }
    rlstm = next(r for r in rows("small") if r.name == "rlstm")
    assert rlstm.judge(values)[1] == "within noise (same direction)"
    assert combine("yes", "within noise (same direction)") == "partly"
    assert combine("yes", "no") == "no" and combine("yes", "yes") == "yes"
    assert combine("within noise (same direction)", "inconclusive") == "inconclusive"


def test_the_mogrifier_row_quotes_table_2s_largest_gap(replicate):
    """Mogrifier paper Table 2, Enwik8 48M: LSTM 1.182 / 1.195, Mogrifier 1.135 / 1.146 (val / test)."""
    from bench.replication_rows import rows

    paper = next(r for r in rows("small") if r.name == "mogrifier").paper
    assert f"{1.195 - 1.146:.3f} test" in paper and f"{1.182 - 1.135:.3f} validation" in paper
    assert "0.012-0.049" in paper


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
    flat_then_best_at_one = {
        k: [v[0] + (-1.0 if k == "r=1" else 0.0) + d for d in (0.0, 0.01, -0.01)] for k, v in curve.items()
    }
    assert judge_rounds(flat_then_best_at_one)[1] == "partly"
    best_at_four = {
        k: [v[0] + (-1.0 if k == "r=4" else 0.0) + d for d in (0.0, 0.01, -0.01)] for k, v in curve.items()
    }
    comparison, agrees = judge_rounds(best_at_four)
    assert "lowest at r=4" in comparison and agrees == "partly"


def test_averaging_judges_can_fail(replicate):
    """2TA against the raw iterate is judged on test losses, where 2TA's validation choice can lose."""
    from bench.replication_rows import judge_averaging, judge_switch

    good, bad = [1.0, 1.001, 0.999], [1.5, 1.501, 1.499]
    assert judge_averaging({"2TA": good, "raw iterate": bad, "best fixed tail": good})[1] == "yes"
    comparison, agrees = judge_averaging({"2TA": bad, "raw iterate": good, "best fixed tail": bad})
    assert agrees == "no" and comparison.startswith("2TA < raw: no")
    assert judge_switch({"2TA": good, "switch": [1.0, 0.999, 1.001]})[1] == "yes"  # within ±0.01
    assert judge_switch({"2TA": good, "switch": bad})[1] == "no"  # 2TA improving on TA contradicts
    assert judge_switch({"2TA": bad, "switch": good})[1] == "no"  # and so does 2TA clearly worse


def test_both_averaging_rows_read_2ta_against_tail_averaging_alike(replicate):
    """The same values of 2TA and a tail average get the same verdict from both rows (the averaging
    row's raw-iterate half agreeing), whichever side is better."""
    from bench.replication_rows import judge_averaging, judge_switch

    raw = [2.0, 2.01, 1.99]  # far above: 2TA < raw holds
    good, on_par, bad = [1.0, 1.001, 0.999], [1.0, 0.999, 1.001], [1.5, 1.501, 1.499]
    for two_ta, tail in ((good, on_par), (good, bad), (bad, good)):
        switch = judge_switch({"2TA": two_ta, "switch": tail})[1]
        averaging = judge_averaging({"2TA": two_ta, "raw iterate": raw, "best fixed tail": tail})[1]
        assert switch == averaging
    noisy = [1.0, 1.05, 0.95]  # neither within ±0.01 nor apart: the tail half passes no test
    assert judge_switch({"2TA": good, "switch": noisy})[1] == "inconclusive"
    averaging = judge_averaging({"2TA": good, "raw iterate": raw, "best fixed tail": noisy})[1]
    assert averaging == "partly"  # its raw-iterate half passes its own test


def test_rows_share_runs_and_union_their_measurements(replicate, tmp_path):
    chosen = replicate.rows("small")
    base = {**replicate.SCALES["small"], "device": "cpu"}
    jobs, plan = replicate.plan_jobs(chosen, base, tmp_path)
    mogrifier = plan[("mogrifier", "Mogrifier LSTM")]
    assert mogrifier == plan[("rounds", "r=5")] == plan[("averaging", "2TA")] == plan[("dyneval", "static")]
    assert plan[("mogrifier", "LSTM")] == plan[("rounds", "r=0")] == plan[("rlstm", "LSTM")]
    assert plan[("averaging_switch", "2TA")] == mogrifier  # the same budget: only the averaging differs
    from bench.replication_rows import SWITCH_PATIENCES

    for patience in SWITCH_PATIENCES:
        switch = [jobs[k]["config"] for k in plan[("averaging_switch", f"switch p={patience}")]]
        assert all(c["averaging"] == "switch" and c["max_steps"] == base["max_steps"] for c in switch)
        assert {c["averaging_patience"] for c in switch} == {patience}
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


def test_the_switch_arm_takes_the_patience_best_on_validation(replicate):
    """The switch's patience tuned as thesis §3.6 tunes Tail Averaging's start: per seed, the
    patience whose final validation loss is lowest, its test loss reported as "switch"."""
    from bench.replication_rows import SWITCH_PATIENCES, rows

    row = next(r for r in rows("small") if r.name == "averaging_switch")
    assert [row.arms[f"switch p={p}"]["averaging_patience"] for p in SWITCH_PATIENCES] == [1, 2, 3, 50]
    best = {0: 2, 1: 50, 2: 1}  # the patience with the lowest validation loss, per seed
    plan, results = {}, {}
    for label in row.arms:
        plan[(row.name, label)] = [f"{label}/{seed}" for seed in range(3)]
        for seed in range(3):
            chosen = label == f"switch p={best[seed]}"
            results[f"{label}/{seed}"] = {
                "final_val_2ta": 1.0 if chosen else 2.0,
                "test_loss": math.log(2) * (10.0 + seed if chosen else 99.0),
            }
    report = replicate.build_report([row], plan, results)["rows"][0]
    assert report["values"]["switch"] == pytest.approx([10.0, 11.0, 12.0])  # bits, the chosen runs'
