"""POST /studies with hostile search-space input, over real HTTP: a bound that overflows a float and
an unsafe space name are 422s naming the parameter or the name, never a 500 or a stored study."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings

INLINE = {
    "fixed": {"cell": "lstm", "dataset": "builtin", "hidden_size": 16, "max_steps": 20},
    "params": {"learning_rate": {"low": 0.001, "high": 0.004, "scale": "log"}},
}
BODY = {"name": "s", "space": "tiny", "n_trials": 2, "parallel": 1, "sampler": "random"}


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    root = tmp_path_factory.mktemp("space-input")
    settings = ApiSettings(db_url=f"sqlite:///{root / 's.db'}", storage_root=root / "storage")
    with live_server(settings) as base:
        yield base


@pytest.mark.parametrize(
    "change, needle",
    [
        (
            {"overrides": {"ranges": {"learning_rate": "exp(1000):exp(1001)"}}},
            "tiny (overrides): parameter learning_rate: low exp(1000) is too large; bounds must be finite numbers",
        ),
        (
            {"overrides": {"ranges": {"t_max": "exp(2):exp(1e9):log"}}},
            "parameter t_max: high exp(1e9) is too large",
        ),
        (
            {
                "space": {
                    **INLINE,
                    "params": {"t_max": {"low": "exp(2)", "high": "exp(1000)", "scale": "log"}},
                }
            },
            "inline space 'inline': parameter t_max: high exp(1000) is too large",
        ),
        (
            {"space": {**INLINE, "params": {"t_max": {"low": 3, "high": "HUGE", "scale": "log"}}}},
            "parameter t_max: low and high must be finite",
        ),
        ({"space": {**INLINE, "name": "../../zz"}}, "space name '../../zz': String should match pattern"),
        ({"space": {**INLINE, "name": "a/b"}}, "space name 'a/b'"),
    ],
)
def test_bad_space_input_is_a_422_naming_the_problem(url, change, needle):
    # JSON's 1e400 parses as infinity; httpx will not encode one, so it is spliced into the text.
    text = json.dumps({**BODY, **change}).replace('"HUGE"', "1e400")
    response = httpx.post(f"{url}/studies", content=text, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert needle in response.json()["detail"]
    assert httpx.get(f"{url}/studies/s").status_code == 404
    assert httpx.get(f"{url}/studies").json()["total"] == 0


def test_a_safe_inline_name_is_kept(url):
    response = httpx.post(
        f"{url}/studies", json={**BODY, "name": "named", "space": {**INLINE, "name": "my_space.v2"}}
    )
    assert response.status_code == 201, response.text
    assert response.json()["space"] == "my_space.v2"


def _int_settings() -> list[str]:
    """The trainer's integer settings a space may fix (the ones an integer overflow could reach)."""
    from trainer.config import TrainConfig

    props = TrainConfig.model_json_schema()["properties"]
    return sorted(
        name
        for name, prop in props.items()
        if "integer" in {prop.get("type"), *(p.get("type") for p in prop.get("anyOf", []))}
    )


def test_every_numeric_trainer_setting_has_an_upper_bound():
    """A number without a bound reaches the float arithmetic (rungs, token counts) and overflows:
    the 10**400 in `max_steps` was a 500 (`OverflowError` in the early-stopping rungs)."""
    from trainer.config import TrainConfig

    props = TrainConfig.model_json_schema()["properties"]
    unbounded = []
    for name, prop in props.items():
        variants = [prop, *prop.get("anyOf", [])]
        numeric = [v for v in variants if v.get("type") in ("integer", "number")]
        if numeric and not any("maximum" in v or "exclusiveMaximum" in v for v in numeric):
            unbounded.append(name)
    assert unbounded == []


@pytest.mark.parametrize("setting", _int_settings())
def test_a_huge_integer_in_a_fixed_setting_is_a_422_naming_it(url, setting):
    fixed = {**INLINE["fixed"], setting: 10**400}
    text = json.dumps({**BODY, "space": {**INLINE, "fixed": fixed}})
    response = httpx.post(f"{url}/studies", content=text, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert setting in response.json()["detail"]
    assert httpx.get(f"{url}/studies/s").status_code == 404
