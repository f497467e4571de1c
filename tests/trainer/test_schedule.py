"""Settings that change mid-run: a retuned resume, `Trainer.run(until=...)` and the schedule that
`train` replays as population-based training runs a member (a fresh Trainer per segment)."""

from __future__ import annotations

import json

import pytest
import torch

from tests.trainer.test_loop import tiny
from trainer import MUTABLE_SETTINGS, ConfigError, Trainer, train
from trainer.checkpoint import read_checkpoint

CHANGE = {"learning_rate": 0.001, "input_dropout": 0.2}
SCHEDULE = [{"step": 10, "settings": CHANGE}]


@pytest.fixture(autouse=True)
def one_thread():
    """Bitwise comparisons: one intra-op thread, so every reduction sums in one order."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def curve(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def raw_weights(run_dir):
    return read_checkpoint(run_dir / "last.pt")["raw"]


def test_a_replay_is_the_two_stage_restart(tmp_path):
    seen: list[dict] = []
    replay = train(tiny(tmp_path / "a", schedule=SCHEDULE), report=seen.append)

    first = Trainer(tiny(tmp_path / "b"))
    assert first.run(until=10) is None and first.step == 10
    retuned = Trainer(tiny(tmp_path / "b", **CHANGE), retune=True)
    assert retuned.run(report=lambda m: pytest.fail("past until: nothing to report"), until=10) is None
    manual = Trainer(tiny(tmp_path / "b", **CHANGE), retune=True).run()

    assert replay.best_val_loss == manual.best_val_loss and replay.steps == manual.steps == 30
    a, b = curve(tmp_path / "a" / "run"), curve(tmp_path / "b" / "run")
    assert [m["val_loss"] for m in a] == [m["val_loss"] for m in b]
    assert all(
        torch.equal(x, y)
        for x, y in zip(raw_weights(tmp_path / "a" / "run"), raw_weights(tmp_path / "b" / "run"))
    )
    assert [m["step"] for m in seen] == [10, 20, 30]  # the boundary's evaluation reported once
    assert [m["lr"] for m in seen] == [0.003, 0.001, 0.001]
    # config.yaml records the config that replays the run, not the last segment's settings
    assert (tmp_path / "a" / "run" / "config.yaml").read_text() == tiny(
        tmp_path / "a", schedule=SCHEDULE
    ).to_yaml()


def test_a_replay_follows_the_plain_run_until_its_change(tmp_path):
    train(tiny(tmp_path / "a", schedule=SCHEDULE))
    train(tiny(tmp_path / "b"))
    scheduled, plain = curve(tmp_path / "a" / "run"), curve(tmp_path / "b" / "run")
    assert scheduled[0]["val_loss"] == plain[0]["val_loss"]
    assert all(s["val_loss"] != p["val_loss"] for s, p in zip(scheduled[1:], plain[1:]))


def test_a_retune_still_refuses_a_change_of_shape(tmp_path):
    train(tiny(tmp_path, max_steps=10))
    with pytest.raises(ConfigError, match="learning_rate"):
        Trainer(tiny(tmp_path, learning_rate=0.001))  # no retune: as before
    with pytest.raises(ConfigError, match="hidden_size"):
        Trainer(tiny(tmp_path, hidden_size=48, learning_rate=0.001), retune=True)


@pytest.mark.parametrize(
    "schedule, message",
    [
        (
            [{"step": 10, "settings": {"hidden_size": 48}}],
            r"schedule\[0\]\.settings\.hidden_size: not a setting",
        ),
        (
            [{"step": 10, "settings": {"learning_rate": 2.0}}],
            r"schedule\[0\]\.settings\.learning_rate: .*less",
        ),
        (
            [{"step": 10, "settings": {"state_dropout": 1.0}}],
            r"schedule\[0\]\.settings\.state_dropout: .*less",
        ),
        ([{"step": 15, "settings": {}}], r"schedule\[0\]\.step: 15 must be a multiple of eval_every"),
        ([{"step": 30, "settings": {}}], r"schedule\[0\]\.step: 30 .* below max_steps"),
        (
            [{"step": 20, "settings": {}}, {"step": 10, "settings": {}}],
            r"schedule\[1\]\.step: 10 must be above",
        ),
        ([{"step": 0, "settings": {}}], r"schedule\.0\.step"),
    ],
)
def test_schedule_errors_name_the_field(tmp_path, schedule, message):
    with pytest.raises(ConfigError, match=message):
        tiny(tmp_path, schedule=schedule)


def test_a_replay_stopped_and_started_again_ends_as_one_run(tmp_path):
    schedule = [*SCHEDULE, {"step": 20, "settings": {"l2_penalty": 1e-3}}]
    whole = train(tiny(tmp_path / "a", max_steps=40, schedule=schedule))
    for stop_at in (10, 30):  # at a change's evaluation, then inside the last segment

        def stop(metrics, stop_at=stop_at):
            return metrics["step"] == stop_at

        stopped = train(tiny(tmp_path / "b", max_steps=40, schedule=schedule), report=stop)
        assert stopped.stopped == "callback" and stopped.steps == stop_at
    seen: list[dict] = []
    resumed = train(tiny(tmp_path / "b", max_steps=40, schedule=schedule), report=seen.append)
    assert [m["step"] for m in seen] == [30, 40]  # the evaluation the stop left unseen, then the rest
    assert resumed.best_val_loss == whole.best_val_loss and resumed.test_loss == whole.test_loss
    assert [m["val_loss"] for m in curve(tmp_path / "a" / "run")] == [
        m["val_loss"] for m in curve(tmp_path / "b" / "run")
    ]


def test_settings_at_applies_every_change_up_to_the_step(tmp_path):
    schedule = [*SCHEDULE, {"step": 20, "settings": {"learning_rate": 0.0005, "l2_penalty": 0.0}}]
    cfg = tiny(tmp_path, max_steps=40, schedule=schedule)
    assert cfg.settings_at(0) == cfg and cfg.settings_at(9) == cfg
    at_10 = cfg.settings_at(10)
    assert (at_10.learning_rate, at_10.input_dropout, at_10.l2_penalty) == (0.001, 0.2, cfg.l2_penalty)
    at_25 = cfg.settings_at(25)
    assert (at_25.learning_rate, at_25.input_dropout, at_25.l2_penalty) == (0.0005, 0.2, 0.0)
    assert at_25.schedule == cfg.schedule and at_25.hidden_size == cfg.hidden_size
    assert {
        "learning_rate",
        "l2_penalty",
        "input_dropout",
        "downprojected_output_dropout",
    } <= MUTABLE_SETTINGS
