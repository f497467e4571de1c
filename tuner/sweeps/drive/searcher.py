"""A Ray Tune Searcher that owns the Optuna study's ask/tell, with fidelity-correct trial states.

Ray's stock OptunaSearch tells COMPLETE with the last partial value when the scheduler stops a trial,
so a half-trained trial can become "best"; we drive ask/tell ourselves to store PRUNED, FAIL-with-reason
and retries linked by `retry_of` instead.

Only this driver-side object writes to the study: trial workers send their evaluations to Ray Tune,
and `on_trial_result` turns them into intermediate values and user attrs. `TrialEvents` (a Tune
callback, trial_events.py) feeds it the events Searcher hooks do not see: worker errors with their messages and
in-place retries after a worker died.

Fencing: every `ask` first passes the driver's fence (`Fence.check`, the lease renewed at this
driver's epoch in one compare-and-set), and every write goes through the fenced `StudyWriter`
(writer.py); once the lease is lost nothing more is written, and the trials in flight stay
RUNNING for the driver that takes the study over to mark FAIL and retry. A setting that breaks a
bound known before training (`num_params<=24e6`) is told to the study as refused when it is asked
and asked again (`_next_trial`, docs/sweeps.md): Ray Tune never starts it and it uses up no trial. A retry found WAITING (its driver died between enqueueing and asking it) resumes like any
retry: from its attempt's run folder and `last.pt`, with the attempt's curve.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from ray.tune.search import Searcher

from tuner.errors import LeaseLost
from tuner.objectives.goals import Goals
from tuner.objectives.measures import MEASURES
from tuner.policies.population_history import copy_segment, settings_in_force
from tuner.policies.population_rules import copy_took_place
from tuner.space import SearchSpace
from tuner.space.settings import max_steps_and_eval_every
from tuner.storage import trial_attrs
from tuner.storage.confine import resolve_within
from tuner.storage.study import pending_retries
from tuner.sweeps.drive.ask_ahead import MIN_DEPTH, AskAhead
from tuner.sweeps.drive.study_rules import StudyRules
from tuner.sweeps.drive.writer import DB_ERRORS, Fence, LiveTrial, StudyWriter, Tally
from tuner.sweeps.trial.bounds import REFUSED, Refusal, refusal
from tuner.sweeps.trial.lifecycle import METRIC, SEGMENT, Evaluation, TrialEnd, decide
from tuner.sweeps.trial.trial_config import TrialConfig

__all__ = ["METRIC", "Fence", "LiveTrial", "StudySearcher", "Tally"]
# Trials kept asked ahead of Ray Tune's requests by default (ask_ahead.py): a free slot starts one
# at once. The sweep driver sizes it to the trials in flight (`ask_ahead.depth_for`).
ASK_AHEAD = MIN_DEPTH
PENDING = "member-"  # the key of a population member asked but not yet started by Tune
MAX_REFUSED = 200  # settings refused in a row before the sweep ends (a space outside the bound)


class BoundUnreachable(Exception):
    """Every setting asked lately broke a bound known before training: the sweep ends early."""


class StudySearcher(Searcher):
    """Suggests trials by asking the Optuna study; tells it COMPLETE, PRUNED or FAIL as trials end."""

    def __init__(
        self,
        study: optuna.Study,
        space: SearchSpace,
        storage_root: Path,
        budget: int,
        policies: StudyRules | None = None,
        fence: Fence | None = None,
        checkpoint: str | None = None,
        ask_ahead: int = ASK_AHEAD,
        keep_diverged: bool = False,
        goals: Goals | None = None,
        objects: str | None = None,
    ) -> None:
        """`ask_ahead`: trials kept asked ahead of Ray Tune's requests (0: none). `fence`: the lease every ask and tell is checked against (None: unfenced, for callers
        that hold no lease, such as benchmarks). `checkpoint`: the trained model each trial
        evaluates instead of training one (a dynamic-evaluation study, `tuner.sweeps.dyneval.trial`).
        `keep_diverged`: a trial that diverged is COMPLETE at its best value (`procedure: paper`).
        `goals`: the study's objectives and constraints (tuner.objectives.goals); each trial gets the
        bounds it must keep before it trains (`bounds`, checked by the trainable). `objects`: the
        object store location (`s3://...`) each trial copies its run folder to (None: a local study)."""
        super().__init__()
        self._objects = objects
        self._checkpoint = checkpoint
        self._keep_diverged = keep_diverged
        self._policies = policies
        self._writer = StudyWriter(
            study, fence, policies.after_trial if policies is not None else None, goals
        )
        self._bounds = [str(c) for c in (goals or Goals()).constraints if MEASURES[c.name].before_training]
        self._study = study
        self._space = space
        self._root = Path(storage_root)
        self._budget = budget
        self._asked = 0
        self._live: dict[str, LiveTrial] = {}
        self._members: dict[str, int] = {}  # a population's members: Ray's id -> study trial number
        self._retries: deque[FrozenTrial] = deque(pending_retries(study))
        self._max_steps = max_steps_and_eval_every(space.fixed)[0]
        self.stop_reason: str | None = None
        self.ended_early: str | None = None  # the study-level stop rule ended the sweep: why
        self._asking = threading.Lock()  # one ask of the study at a time (this thread or ask-ahead's)
        self._ahead: AskAhead[LiveTrial] = AskAhead(self._ask, ask_ahead, self._may_ask_ahead)

    # --- pickling: Tune saves the searcher in its experiment folder; keep the study (and its
    # database URL, which may hold a password) out of it. The study in SQL is the state to resume.
    def __getstate__(self) -> dict[str, Any]:
        return {"study_name": self._study.study_name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def save(self, checkpoint_path: str) -> None:
        Path(checkpoint_path).write_text(
            f"study {self._study.study_name}: resume with `rnntune sweep --resume {self._study.study_name}`\n"
        )

    def restore(self, checkpoint_path: str) -> None:
        raise NotImplementedError(
            "resume sweeps with `rnntune sweep --resume NAME`; the SQL study holds the state"
        )

    # --- Searcher hooks
    @property
    def live(self) -> dict[str, LiveTrial]:
        return self._live

    @property
    def writable(self) -> bool:
        """Whether this driver may still write to the study (False once its lease is lost)."""
        return self._writer.writable

    @property
    def tally(self) -> Tally:
        """What this driver wrote, for the live table."""
        return self._writer.tally

    @property
    def told(self) -> list[Callable[[FrozenTrial], None]]:
        """Called with each trial as the study is told how it ended (the trackers, tracking.py)."""
        return self._writer.told

    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:  # type: ignore[override]  # Searcher.FINISHED is a str
        if self.stop_reason is not None or self._asked >= self._budget or self.ended_early is not None:
            return Searcher.FINISHED
        if self._policies is not None and (reason := self._policies.stop_reason()) is not None:
            self.ended_early = reason  # no new trial; the ones in flight finish
            return Searcher.FINISHED
        # Counted before a ready trial is taken: ask-ahead's bound (another thread) must never see
        # a taken trial as neither ready nor asked, or it would ask one past the budget.
        self._asked += 1
        try:
            if self._retries:
                live = self._ask_retry(self._retries[0])
            else:
                self._writer.check()  # a trial asked ahead starts only while this driver holds the lease
                live = self._ahead.take() or self._ask()
        except BaseException as err:  # nothing was asked: uncount it, then stop or re-raise
            self._asked -= 1
            if isinstance(err, BoundUnreachable):
                self.ended_early = str(err)  # no new trial; the ones in flight finish
                return Searcher.FINISHED
            if not isinstance(err, LeaseLost):
                raise
            self.stop_reason = str(err)
            return Searcher.FINISHED
        if self._retries:
            self._retries.popleft()
        self._writer.started(live, trial_id)
        self._live[trial_id] = live
        self._ahead.refill()  # the next trial is sampled while this one trains
        return TrialConfig(
            # a population member's retry goes on with the settings in force, not those first sampled
            trainer={**self._space.trial_config(live.params, live.run_dir), **live.settings},
            trial_number=live.trial.number,
            checkpoint=self._checkpoint or None,
            bounds=tuple(self._bounds),
            objects=self._objects,
        ).to_tune()

    def _may_ask_ahead(self, count: int) -> bool:
        """Whether one more trial may be asked ahead with `count` already ready or being asked:
        never past the budget, nor once the sweep stops or retries wait, nor in a sweep with a
        study-level stop rule (`--patience`, `--budget`, ...), which could end it with trials
        asked that never run."""
        return (
            self.stop_reason is None
            and self.ended_early is None
            and not self._retries
            and self.writable
            and (self._policies is None or not self._policies.stop.active)
            and self._asked + count < self._budget
        )

    def _ask(self) -> LiveTrial:
        """The next trial (fenced). Optuna hands out WAITING trials first: one with `retry_of` is a
        retry whose driver died before asking it, and resumes from its attempt like any retry."""
        self._writer.check()
        with self._asking:
            return self._next_trial()

    def _next_trial(self) -> LiveTrial:
        """The next setting that keeps the bounds known before training; those that break one are
        told to the study as refused (`StudyWriter.refuse`) and asked again, so they teach the
        sampler and use up no trial of the budget. BoundUnreachable after `MAX_REFUSED` in a row."""
        for _ in range(MAX_REFUSED):
            if (live := self._asked_trial()) is not None:
                return live
        raise BoundUnreachable(
            f"{MAX_REFUSED} settings in a row broke {', '.join(self._bounds)} before training: "
            "the search space may lie outside the bound"
        )

    def _asked_trial(self) -> LiveTrial | None:
        """One asked trial: a retry resumed from its attempt, or a new setting checked against the
        bounds (None when it broke one and was told refused)."""
        trial = self._study.ask()
        params = self._space.suggest(trial)
        live = LiveTrial(trial=trial, params=params, run_dir=str(self._root / f"trial-{trial.number}"))
        retry_of = trial_attrs.RETRY_OF.of(trial.user_attrs)
        if retry_of is not None:
            self._resume_from(live, self._study.get_trials(deepcopy=False)[int(retry_of)])
            return live
        settings = self._space.trial_config(params, live.run_dir)
        if self._checkpoint or (refused := refusal(settings, self._bounds)) is None:
            return live
        if self._writer.refuse(trial, refused.measures, refused.reason) is None:
            raise LeaseLost("the study's lease was lost while a refused setting was told")
        return None

    def _ask_retry(self, old: FrozenTrial) -> LiveTrial:
        """A new trial with the same params as a dead attempt, its curve so far, and its run folder
        (so the trainer resumes from the attempt's last.pt)."""
        self._writer.check()
        with self._asking:  # enqueue and ask as one: a trial asked ahead meanwhile cannot take the retry
            self._study.enqueue_trial(
                old.params,
                user_attrs={trial_attrs.RETRY_OF: trial_attrs.RETRY_OF.checked(old.number)},
                skip_if_exists=False,
            )
            return self._next_trial()

    def _resume_from(self, live: LiveTrial, old: FrozenTrial) -> None:
        """Make `live` continue the attempt `old`: its run folder and its curve so far. A stored
        run folder outside the study's storage root is not trusted (the database is data, not a
        path to train in): the retry then starts afresh in its own folder."""
        resumed = resolve_within(trial_attrs.RUN_DIR.of(old.user_attrs), (self._root,), self._root)
        if resumed is None:
            return
        live.run_dir = str(resumed)
        for step, value in sorted(old.intermediate_values.items()):
            live.trial.report(value, step)
            live.curve[step] = value
        history = trial_attrs.PBT_HISTORY.of(old.user_attrs)
        if history:  # a population member: its history goes on in the retry, less a copy never made
            own = Path(live.run_dir).resolve()
            if not copy_took_place(history[-1], str(own), *folder_state(own)):
                history = history[:-1]
            trial_attrs.PBT_HISTORY.write(live.trial, history)
            live.attrs[trial_attrs.PBT_HISTORY] = history
            live.settings = settings_in_force(history)

    # --- a population (scheduler pbt/pb2): its members asked at once, then bound to Ray's trials
    def population(self, size: int) -> list[dict[str, Any]]:
        """The configs of up to `size` members (retries of members first), asked now: population-
        based schedulers take no search algorithm, so Tune gets them as its parameter space."""
        configs = []
        for index in range(size):
            config = self.suggest(f"{PENDING}{index}")
            if not isinstance(config, dict):
                break
            configs.append(config)
        return configs

    def bind(self, ray_trial_id: str, trial_number: int) -> None:
        """The member asked as study trial `trial_number` is Ray's `ray_trial_id` (when Tune starts it)."""
        pending = next(
            (
                key
                for key, live in self._live.items()
                if key.startswith(PENDING) and live.trial.number == trial_number
            ),
            None,
        )
        if pending is not None:
            live = self._live.pop(pending)
            self._writer.started(live, ray_trial_id)
            self._live[ray_trial_id] = live
            self._members[ray_trial_id] = trial_number

    def _segment(self, live: LiveTrial, raw: str) -> None:
        """A member's start as its trainable reported it: the step, the settings in force and the
        tuned params of the model it built (what its folder holds, which the history then shows)."""
        start = json.loads(raw)
        names = set(self._space.param_names)
        params = {k: v for k, v in (start.get("params") or {}).items() if k in names}
        self._writer.segment(live, {**start, "params": params, "from_trial": None, "from_value": None})

    def copied(
        self, ray_trial_id: str, source_id: str, step: int, value: float | None, config: dict[str, Any]
    ) -> None:
        """The population scheduler made member `ray_trial_id` copy `source_id`'s checkpoint at
        `step` (whose loss there was `value`) and go on with `config` (the source's, perturbed):
        its history says so, the shape it copied included, before the member restarts."""
        live = self._live.get(ray_trial_id)
        if live is None:
            return
        sent = TrialConfig.from_tune(config)
        mutable = sent.population.mutable if sent.population else ()
        segment = copy_segment(
            step, self._members.get(source_id), value, sent.trainer, mutable, self._space.param_names
        )
        self._writer.segment(live, segment)

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        live = self._live.get(trial_id)
        if live is not None:
            if result.get(SEGMENT):
                self._segment(live, result[SEGMENT])
            self._writer.record(live, Evaluation.from_result(result), result)

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        if error:
            # TrialEvents.on_trial_error follows with the message; the trial is told FAIL there.
            return
        live = self._live.pop(trial_id, None)
        if live is None or not self.writable:
            return
        if result and result.get(REFUSED):  # refused by the trainable (the driver could not size it)
            refused = Refusal(float(result["num_params"]), str(result[REFUSED]))
            self._writer.refuse(live.trial, refused.measures, refused.reason)
            return
        if result:
            if result.get(SEGMENT):
                self._segment(live, result[SEGMENT])
            self._writer.record(live, Evaluation.from_result(result), result)
        outcome = decide(
            TrialEnd.from_result(result),
            curve=live.curve,
            last_step=live.last_step,
            max_steps=self._max_steps,
            stop_reason=self.stop_reason,
            dyneval_space=bool(self._space.fixed.get("dyneval")),
            keep_diverged=self._keep_diverged,
        )
        self._writer.finish(live, outcome)

    def fail_from_worker(self, trial_id: str, message: str) -> None:
        """The trial's worker failed and Ray Tune will not retry it again: FAIL with Ray's message."""
        live = self._live.pop(trial_id, None)
        if live is not None and self.writable:
            self._writer.fail(live, message, needs_retry=False, wall=True)

    def retry_in_place(self, trial_id: str, message: str) -> None:
        """Ray Tune restarts a trial whose worker died: FAIL this attempt, continue as a linked new trial."""
        live = self._live.pop(trial_id, None)
        if live is None or not self.writable:
            return
        old = self._writer.fail(live, message, needs_retry=True, wall=True)
        if old is None:
            return  # lease lost: the next driver retries it
        self.tally.retried += 1
        try:
            retry = self._ask_retry(old)
        except LeaseLost:
            return
        self._writer.started(retry, trial_id)
        self._live[trial_id] = retry
        if trial_id in self._members:  # a member's copies name its latest attempt
            self._members[trial_id] = retry.trial.number

    def interrupt_all(self, reason: str) -> list[int]:
        """Mark every trial still in flight FAIL (to be retried on resume) when the sweep stops.
        Trials it cannot mark (lease lost, database unreachable) stay RUNNING: the next driver
        marks them FAIL and retries them."""
        for unstarted in self._ahead.close():  # asked ahead, never launched: retried on resume
            if self.writable:
                try:
                    self._writer.fail(unstarted, f"not started: {reason}", needs_retry=True)
                except DB_ERRORS:
                    continue
        numbers = []
        for trial_id in list(self._live):
            live = self._live.pop(trial_id)
            numbers.append(live.trial.number)
            if not self.writable:
                continue
            try:
                self._writer.fail(live, f"interrupted: {reason}", needs_retry=True, wall=True)
            except DB_ERRORS:
                continue
        return numbers


def folder_state(run_dir: Path) -> tuple[str | None, int | None]:
    """The run folder and step a member's last.pt was written with ((None, None) without one)."""
    if not (run_dir / "last.pt").is_file():
        return None, None
    from trainer.checkpoint import saved_header  # PyTorch reads it: loaded when a folder has one

    config, step = saved_header(run_dir / "last.pt")
    return str(Path(config["run_dir"]).resolve()), step
