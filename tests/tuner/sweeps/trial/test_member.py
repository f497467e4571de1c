"""A population member's checkpoints, on plain values and real folders (no Ray cluster)."""

from __future__ import annotations

import json

import pytest
from ray.tune import Checkpoint

from tuner.sweeps.trial import member


@pytest.mark.parametrize(
    ("step", "given", "start", "expected"),
    [
        (40, 20, 30, True),  # the next perturbation step: the scheduler needs it
        (30, 20, 20, False),  # between perturbation steps
        (40, 40, 40, False),  # the step it restarted from: the scheduler holds that checkpoint
        (40, 20, 40, True),  # retried in place from a folder at the sync point: the scheduler lacks it
        (40, None, 40, False),  # a resumed member's start: its population first meets past it
        (60, None, 40, True),
    ],
)
def test_a_member_sends_a_checkpoint_at_each_perturbation_step_the_scheduler_lacks(
    step, given, start, expected
):
    assert member.sends_checkpoint(step, 20, given, start) is expected


def test_a_saved_checkpoint_names_its_member_and_step_and_restores_only_anothers(tmp_path) -> None:
    source, own = tmp_path / "source", tmp_path / "own"
    source.mkdir()
    own.mkdir()
    (source / "last.pt").write_bytes(b"source model")
    (own / "last.pt").write_bytes(b"own model")
    with member.saved(source, "b", {"step": 40, "val_loss": 3.5}) as checkpoint:
        kept = Checkpoint.from_directory(str(tmp_path / "kept"))
        checkpoint.to_directory(kept.path)
    assert member.given_step(kept) == 40 and member.given_step(None) is None
    assert json.loads((tmp_path / "kept" / member.MEMBER_FILE).read_text())["ray_trial_id"] == "b"
    assert member.restore(kept, own, "b", max_steps=80) is False  # its own: the folder holds it
    assert (own / "last.pt").read_bytes() == b"own model"
    assert member.restore(kept, own, "a", max_steps=80) is True
    assert (own / "last.pt").read_bytes() == b"source model"
    assert member.restore(kept, own, "a", max_steps=40) is False  # at the last step: no copy
