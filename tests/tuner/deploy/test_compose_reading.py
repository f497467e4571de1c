"""tuner/deploy/compose.py and inputs.py read Compose's files by Compose's rules."""

from __future__ import annotations

import pytest

from tuner.deploy.compose import (
    ComposeError,
    docker_size_to_quantity,
    duration_seconds,
    interpolate,
    load_services,
    with_defaults,
)
from tuner.deploy.inputs import merged, parse_env


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${A:-d}", "a"),
        ("${EMPTY:-d}", "d"),
        ("${EMPTY-d}", ""),
        ("${MISSING-d}", "d"),
        ("${MISSING}", ""),
        ("$$HOME and ${A}", "$HOME and a"),
        ("x${A}y${MISSING:-z}", "xayz"),
    ],
)
def test_interpolation_follows_compose(text: str, expected: str) -> None:
    assert interpolate(text, {"A": "a", "EMPTY": ""}) == expected


def test_a_required_setting_left_empty_is_an_error_naming_it() -> None:
    with pytest.raises(ComposeError, match="PW: set PW"):
        interpolate("${PW:?set PW}", {"PW": ""})
    assert interpolate("${PW?set PW}", {"PW": ""}) == ""


def test_env_files_parse_as_compose_reads_them() -> None:
    text = "# comment\n\nA=1\nB=\"two words\"\nC='x'\nD=a=b\nexport E=5\nnot a setting\n"
    assert parse_env(text) == {"A": "1", "B": "two words", "C": "x", "D": "a=b", "E": "5"}


def test_sizes_and_durations() -> None:
    assert [docker_size_to_quantity(s) for s in ("2gb", "512m", "64K", "1073741824")] == [
        "2Gi",
        "512Mi",
        "64Ki",
        "1073741824",
    ]
    assert [duration_seconds(d) for d in ("5s", "1m30s", "2h")] == [5, 90, 7200]
    with pytest.raises(ComposeError):
        docker_size_to_quantity("2 parsecs")
    with pytest.raises(ComposeError):
        duration_seconds("")


def test_the_gpu_override_replaces_environment_entries() -> None:
    base, gpu = load_services()["sweep"], load_services(gpu=True)["sweep"]
    assert base.environment["RNNTUNE_SET"] == "${RNNTUNE_SET:-}"
    assert gpu.environment["RNNTUNE_SET"] == "${RNNTUNE_SET:-device=auto}"
    assert list(gpu.environment) == list(base.environment)


def test_values_merge_key_by_key() -> None:
    assert merged({"a": {"b": 1, "c": 2}, "d": [1]}, {"a": {"c": 3}, "d": [2]}) == {
        "a": {"b": 1, "c": 3},
        "d": [2],
    }


def test_compose_defaults_fill_what_the_env_leaves_empty() -> None:
    services = load_services()
    filled = with_defaults({"RAY_AUTH_MODE": "", "RAY_HEAD_NUM_CPUS": "3", "RNNTUNE_SET": ""}, services)
    assert filled["RAY_AUTH_MODE"] == "token" and filled["RNNTUNE_MPS"] == "auto"
    assert filled["RAY_HEAD_NUM_CPUS"] == "3" and filled["RNNTUNE_SET"] == ""
    assert "POSTGRES_PASSWORD" not in filled and "RAY_AUTH_TOKEN" not in filled
