"""Search spaces: the papers' tuning ranges (thesis Tables 2.4-2.6, §4.6) read from YAML and validated.

A space file holds `params` (the tuned hyperparameters with their range and scale, optionally
conditional on another setting) and `fixed` (trainer config settings every trial shares: cell,
dataset, layers, parameter budget, BPTT, batch size, dropout samples, steps). Hyperparameter names
are the contract of DESIGN.md; fixed settings are trainer config fields, checked by
`trainer.make_config`. Every error names the file, the parameter and the problem, so a typo in a
user's own space file is caught before a sweep starts rather than by the first failed trial.

File format::

    description: Mogrifier LSTM on word-level PTB
    source: thesis Table 2.4
    fixed: {cell: mogrifier_lstm, dataset: ptb, num_layers: 2, ...}
    params:
      learning_rate: {low: 0.001, high: 0.004, scale: log}
      t_max: {low: exp(2), high: exp(5), scale: log}
      mogrifier_rounds: {low: 0, high: 6, scale: int, when: {cell: mogrifier_lstm}}
      cell: {choices: [lstm, mogrifier_lstm]}
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import yaml

from trainer import ConfigError, TrainConfig, make_config
from trainer.config import Cell

SPACES_ENV = "RNNTUNE_SPACES_DIR"
BUILTIN_SPACES_DIR = Path(__file__).resolve().parent.parent / "search_spaces"

# The tunable hyperparameters of DESIGN.md, plus `cell` (a space may tune the cell as a categorical).
HYPERPARAMETERS = (
    "learning_rate",
    "input_embedding_ratio",
    "l2_penalty",
    "input_dropout",
    "inter_layer_dropout",
    "cell_output_dropout",
    "state_dropout",
    "output_dropout",
    "mogrifier_rounds",
    "mogrifier_rank",
    "t_max",
    "max_time_steps",
    "dyneval_learning_rate",
    "dyneval_decay_rate",
    "dyneval_epsilon",
)
CATEGORICAL = {"cell": get_args(Cell)}
INTEGER_NAMES = frozenset({"mogrifier_rounds", "mogrifier_rank", "max_time_steps"})
SCALES = ("linear", "log", "int", "categorical")
# Set by the orchestrator for each trial; a space may not fix them.
RESERVED_SETTINGS = frozenset({"run_dir"})
# Stand-in used only to validate fixed settings of a dataset whose files the user supplies later.
_PLACEHOLDER_DATA_DIR = "data"
_TOP_KEYS = frozenset({"description", "source", "fixed", "params"})
_PARAM_KEYS = frozenset({"low", "high", "scale", "when", "choices"})
_EXP = re.compile(r"^\s*exp\(\s*([-+0-9.eE]+)\s*\)\s*$")


class SpaceError(ValueError):
    """A search space that cannot be used; the message names the file, the parameter and the problem."""


@dataclass(frozen=True)
class Param:
    """One tuned hyperparameter: a numeric range with its scale, or a list of choices."""

    name: str
    scale: str
    low: float | int | None = None
    high: float | int | None = None
    choices: tuple[str, ...] = ()
    when: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scale": self.scale}
        if self.scale == "categorical":
            out["choices"] = list(self.choices)
        else:
            out["low"], out["high"] = self.low, self.high
        if self.when:
            out["when"] = {k: list(v) for k, v in self.when.items()}
        return out

    def contains(self, value: Any) -> bool:
        if self.scale == "categorical":
            return value in self.choices
        return self.low <= value <= self.high

    def describe_range(self) -> str:
        if self.scale == "categorical":
            return "{" + ", ".join(self.choices) + "}"
        return f"[{_fmt(self.low)}, {_fmt(self.high)}]"


@dataclass(frozen=True)
class SearchSpace:
    """A validated search space: tuned params (in sampling order) and the fixed trainer settings."""

    name: str
    params: tuple[Param, ...]
    fixed: Mapping[str, Any]
    description: str = ""
    source: str = ""
    path: str | None = None

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def is_active(self, param: Param, values: Mapping[str, Any]) -> bool:
        """Whether a conditional param applies given the values sampled so far and the fixed settings."""
        for key, allowed in param.when.items():
            current = values.get(key, self.fixed.get(key, TrainConfig.model_fields[key].default))
            if current not in allowed:
                return False
        return True

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Sample one point through an Optuna trial (define-by-run), honouring conditional params."""
        values: dict[str, Any] = {}
        for p in self.params:
            if not self.is_active(p, values):
                continue
            if p.scale == "categorical":
                values[p.name] = trial.suggest_categorical(p.name, list(p.choices))
            elif p.scale == "int":
                values[p.name] = trial.suggest_int(p.name, int(p.low), int(p.high))
            else:
                values[p.name] = trial.suggest_float(p.name, p.low, p.high, log=p.scale == "log")
        return values

    def trial_config(self, params: Mapping[str, Any], run_dir: str | os.PathLike) -> dict[str, Any]:
        """The trainer config values of one trial: fixed settings, then the sampled params."""
        return {**self.fixed, **params, "run_dir": str(run_dir)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "fixed": dict(self.fixed),
            "params": {p.name: p.to_dict() for p in self.params},
        }

    def with_overrides(
        self,
        ranges: Mapping[str, Any] | None = None,
        fixed: Mapping[str, Any] | None = None,
    ) -> "SearchSpace":
        """A copy with some ranges replaced and some settings fixed (`--range`, `--set`).

        `ranges` maps a name to "low:high" or "low:high:scale" (or a dict with low/high/scale); a
        name not yet in the space needs its scale. `fixed` maps a setting to a value; fixing a tuned
        hyperparameter removes it from the tuned ones.
        """
        raw = self.to_dict()
        where = f"{self.name} (overrides)"
        for name, spec in (ranges or {}).items():
            entry = raw["params"].get(name, {})
            entry = {k: v for k, v in entry.items() if k not in ("low", "high", "choices")}
            entry.update(_parse_range_override(where, name, spec))
            raw["params"][name] = entry
        for name, value in (fixed or {}).items():
            raw["params"].pop(name, None)
            raw["fixed"][name] = value
        # A conditional param whose condition a new fixed setting rules out (e.g. --set cell=lstm on
        # a Mogrifier space drops mogrifier_rounds) no longer applies.
        for name, entry in list(raw["params"].items()):
            for key, allowed in (entry.get("when") or {}).items():
                if key in (fixed or {}) and fixed[key] not in allowed:
                    raw["params"].pop(name)
                    break
        return parse_space(raw, name=self.name, where=where, path=self.path)


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _number(where: str, name: str, key: str, raw: Any) -> float | int:
    if isinstance(raw, bool):
        raise SpaceError(f"{where}: parameter {name}: {key} must be a number, got {raw!r}")
    if isinstance(raw, (int, float)):
        return raw
    if isinstance(raw, str):
        m = _EXP.match(raw)
        if m:
            return math.exp(float(m.group(1)))
        try:
            return float(raw)
        except ValueError:
            pass
    raise SpaceError(
        f"{where}: parameter {name}: {key} must be a number or exp(x), got {raw!r}"
    )


def _parse_range_override(where: str, name: str, spec: Any) -> dict[str, Any]:
    if isinstance(spec, Mapping):
        return dict(spec)
    if isinstance(spec, (list, tuple)) and len(spec) in (2, 3):
        parts = list(spec)
    elif isinstance(spec, str):
        parts = spec.split(":")
    else:
        parts = []
    if len(parts) not in (2, 3):
        raise SpaceError(
            f"{where}: parameter {name}: a range override is low:high or low:high:scale, got {spec!r}"
        )
    out: dict[str, Any] = {"low": _yaml_scalar(parts[0]), "high": _yaml_scalar(parts[1])}
    if len(parts) == 3:
        out["scale"] = str(parts[2]).strip()
    return out


def _yaml_scalar(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError:
            return raw
    return raw


def _parse_param(where: str, name: str, spec: Any) -> Param:
    known = (*HYPERPARAMETERS, *CATEGORICAL)
    if name not in known:
        raise SpaceError(
            f"{where}: parameter {name}: unknown hyperparameter; known: {', '.join(known)}"
        )
    if not isinstance(spec, Mapping):
        raise SpaceError(
            f"{where}: parameter {name}: expected a mapping with low, high and scale, got {spec!r}"
        )
    extra = sorted(set(spec) - _PARAM_KEYS)
    if extra:
        raise SpaceError(
            f"{where}: parameter {name}: unknown key(s) {', '.join(extra)}; "
            f"allowed: {', '.join(sorted(_PARAM_KEYS))}"
        )
    when = _parse_when(where, name, spec.get("when"))
    if name in CATEGORICAL:
        return _parse_categorical(where, name, spec, when)
    if "choices" in spec:
        raise SpaceError(f"{where}: parameter {name}: choices are only allowed for: {', '.join(CATEGORICAL)}")
    scale = spec.get("scale", "linear")
    if scale not in ("linear", "log", "int"):
        raise SpaceError(
            f"{where}: parameter {name}: unknown scale {scale!r}; allowed: linear, log, int"
        )
    for key in ("low", "high"):
        if key not in spec:
            raise SpaceError(f"{where}: parameter {name}: missing {key}")
    low = _number(where, name, "low", spec["low"])
    high = _number(where, name, "high", spec["high"])
    if name in INTEGER_NAMES and scale != "int":
        raise SpaceError(f"{where}: parameter {name}: takes integers; use scale: int")
    if scale == "int":
        if name not in INTEGER_NAMES:
            raise SpaceError(
                f"{where}: parameter {name}: is real-valued; use scale linear or log, not int"
            )
        for key, value in (("low", low), ("high", high)):
            if float(value) != int(value):
                raise SpaceError(f"{where}: parameter {name}: {key} must be an integer, got {value!r}")
        low, high = int(low), int(high)
    else:
        low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise SpaceError(f"{where}: parameter {name}: low and high must be finite")
    if low >= high:
        raise SpaceError(
            f"{where}: parameter {name}: low ({_fmt(low)}) must be below high ({_fmt(high)})"
        )
    if scale == "log" and low <= 0:
        raise SpaceError(
            f"{where}: parameter {name}: a log-scale range must lie above 0, got [{_fmt(low)}, {_fmt(high)}]"
        )
    return Param(name=name, scale=scale, low=low, high=high, when=when)


def _parse_categorical(where: str, name: str, spec: Mapping, when: Mapping) -> Param:
    allowed = CATEGORICAL[name]
    scale = spec.get("scale", "categorical")
    if scale != "categorical":
        raise SpaceError(f"{where}: parameter {name}: is categorical; give choices, not scale {scale!r}")
    if "low" in spec or "high" in spec:
        raise SpaceError(f"{where}: parameter {name}: is categorical; give choices, not low/high")
    choices = spec.get("choices")
    if not isinstance(choices, list) or len(choices) < 2:
        raise SpaceError(f"{where}: parameter {name}: choices must list at least two of: {', '.join(allowed)}")
    bad = [c for c in choices if c not in allowed]
    if bad:
        raise SpaceError(
            f"{where}: parameter {name}: unknown choice(s) {', '.join(map(str, bad))}; allowed: {', '.join(allowed)}"
        )
    if len(set(choices)) != len(choices):
        raise SpaceError(f"{where}: parameter {name}: choices repeat a value")
    return Param(name=name, scale="categorical", choices=tuple(choices), when=when)


def _parse_when(where: str, name: str, raw: Any) -> dict[str, tuple[Any, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not raw:
        raise SpaceError(f"{where}: parameter {name}: when must map a setting to its value(s), e.g. {{cell: mogrifier_lstm}}")
    out = {}
    for key, value in raw.items():
        if key not in TrainConfig.model_fields:
            raise SpaceError(f"{where}: parameter {name}: condition on unknown setting {key!r}")
        out[key] = tuple(value) if isinstance(value, list) else (value,)
    return out


def _check_fixed(where: str, fixed: Mapping[str, Any], params: Iterable[Param]) -> None:
    for key in fixed:
        if key in RESERVED_SETTINGS:
            raise SpaceError(f"{where}: fixed setting {key}: set by the sweep for each trial; remove it")
        if key not in TrainConfig.model_fields:
            raise SpaceError(
                f"{where}: fixed setting {key}: unknown trainer setting; known: {', '.join(TrainConfig.model_fields)}"
            )
    params = list(params)
    both = sorted({p.name for p in params} & set(fixed))
    if both:
        raise SpaceError(f"{where}: parameter {both[0]}: both tuned and fixed; keep one")
    base = dict(fixed)
    if base.get("dataset", "builtin") not in ("builtin", "reverse_copy") and not base.get("data_dir"):
        base["data_dir"] = _PLACEHOLDER_DATA_DIR
    try:
        make_config(base)
    except ConfigError as err:
        raise SpaceError(f"{where}: fixed settings rejected by the trainer: {err}") from None
    # Each end of each range must also be a config the trainer accepts.
    for p in params:
        ends = p.choices if p.scale == "categorical" else (p.low, p.high)
        for value in ends:
            try:
                make_config({**base, p.name: value})
            except ConfigError as err:
                raise SpaceError(
                    f"{where}: parameter {p.name}: value {_fmt(value)} of its range is rejected by the trainer: {err}"
                ) from None


def _check_conditions(where: str, params: list[Param], fixed: Mapping[str, Any]) -> list[Param]:
    """Check each condition can hold; order params so a condition's subject is sampled first."""
    names = {p.name for p in params}
    for p in params:
        for key, allowed in p.when.items():
            if key == p.name:
                raise SpaceError(f"{where}: parameter {p.name}: a parameter cannot be conditional on itself")
            if key in names:
                subject = next(q for q in params if q.name == key)
                if subject.when:
                    raise SpaceError(f"{where}: parameter {p.name}: conditions may not be nested ({key} is itself conditional)")
                if not any(subject.contains(v) for v in allowed):
                    raise SpaceError(
                        f"{where}: parameter {p.name}: condition {key} in {list(allowed)} never holds; "
                        f"{key} ranges over {subject.describe_range()}"
                    )
            else:
                value = fixed.get(key, TrainConfig.model_fields[key].default)
                if value not in allowed:
                    raise SpaceError(
                        f"{where}: parameter {p.name}: condition {key} in {list(allowed)} never holds; "
                        f"{key} is fixed to {value!r}"
                    )
    return sorted(params, key=lambda p: bool(p.when))


def parse_space(raw: Any, *, name: str, where: str, path: str | None = None) -> SearchSpace:
    """Validate the mapping read from a space file (or stored in a study) into a SearchSpace."""
    if not isinstance(raw, Mapping):
        raise SpaceError(f"{where}: a search space is a mapping with params and fixed, got {type(raw).__name__}")
    extra = sorted(set(raw) - _TOP_KEYS - {"name"})
    if extra:
        raise SpaceError(f"{where}: unknown key(s) {', '.join(extra)}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    params_raw = raw.get("params") or {}
    fixed = raw.get("fixed") or {}
    if not isinstance(params_raw, Mapping) or not params_raw:
        raise SpaceError(f"{where}: params must map at least one hyperparameter to its range")
    if not isinstance(fixed, Mapping):
        raise SpaceError(f"{where}: fixed must map trainer settings to values")
    params = [_parse_param(where, str(k), v) for k, v in params_raw.items()]
    _check_fixed(where, fixed, params)
    params = _check_conditions(where, params, fixed)
    return SearchSpace(
        name=name,
        params=tuple(params),
        fixed=dict(fixed),
        description=str(raw.get("description") or ""),
        source=str(raw.get("source") or ""),
        path=path,
    )


def space_dirs() -> list[Path]:
    """Where space files are looked up by name: RNNTUNE_SPACES_DIR (os.pathsep-separated), then built-ins."""
    dirs = [Path(p) for p in os.environ.get(SPACES_ENV, "").split(os.pathsep) if p]
    return [*dirs, BUILTIN_SPACES_DIR]


def find_space(name_or_path: str | os.PathLike) -> Path:
    """The file of a space given by path or by name (searched in `space_dirs()`)."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or os.sep in str(name_or_path):
        if candidate.is_file():
            return candidate
        raise SpaceError(f"search space file {candidate} does not exist")
    for d in space_dirs():
        for suffix in (".yaml", ".yml"):
            path = d / f"{name_or_path}{suffix}"
            if path.is_file():
                return path
    known = ", ".join(sorted(list_spaces())) or "none"
    raise SpaceError(f"unknown search space {str(name_or_path)!r}; known: {known} (or give a file path)")


def load_space(name_or_path: str | os.PathLike) -> SearchSpace:
    """Read and validate a space by name or path."""
    path = find_space(name_or_path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SpaceError(f"{path}: not valid YAML: {err}") from None
    return parse_space(raw, name=path.stem, where=str(path), path=str(path.resolve()))


def space_from_dict(raw: Mapping[str, Any]) -> SearchSpace:
    """Rebuild a space stored in a study (`space_def` attr) so a resumed sweep ignores later file edits."""
    name = str(raw.get("name") or "stored")
    return parse_space(raw, name=name, where=f"stored space {name}")


def list_spaces() -> dict[str, Path]:
    """Space name -> file, for every file in `space_dirs()` (earlier dirs shadow later ones)."""
    out: dict[str, Path] = {}
    for d in reversed(space_dirs()):
        if d.is_dir():
            for path in sorted([*d.glob("*.yaml"), *d.glob("*.yml")]):
                out[path.stem] = path
    return dict(sorted(out.items()))


def parse_assignments(items: Iterable[str], flag: str) -> dict[str, str]:
    """Split `name=value` command-line items (`--range`, `--set`); values stay strings."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise SpaceError(f"{flag} expects name=value, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def parse_set_values(items: Iterable[str]) -> dict[str, Any]:
    """`--set name=value` items with YAML-typed values (1e-3, true, null, cuda)."""
    return {k: _yaml_scalar(v) for k, v in parse_assignments(items, "--set").items()}
