"""The renderer reads an .env as docker-compose reads it: compared with Compose's own resolution.

docker-compose 1.29 reads the .env with python-dotenv; `docker-compose config` prints every
variable it resolved. A setting read differently by the renderer would put an inline comment, a
quote or a blank into a manifest or the Secret where the containers of `docker compose up` have none.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.tuner.deploy.inputs import ROOT
from tuner.deploy.inputs import parse_env, read_env

# Lines that readers get wrong, one setting each (the values hold no `$`, which `config` would print
# escaped; <TAB> and <BLANKS> stand for a tab and trailing blanks). BACKSLASH_END's closing quote is
# escaped, so its value runs on to CLOSER's first quote and the three settings are broken; no single
# quote may follow UNCLOSED's, which would close it.
TRICKY = r"""
# a comment line
   # an indented comment
PLAIN=value
INLINE=value # a comment
INLINE_TAB=value<TAB># after a tab
TIGHT=value#no-comment
TRAILING=value<BLANKS>
EMPTY=
EMPTY_COMMENT= # only a comment
KEY_ONLY
SPACED = two words
DOUBLE="a # b" # a comment
SINGLE='a # b'
QUOTED_BLANK=" "
BLANK_SINGLE='   '
DOUBLE_ESCAPES="tab\tquote\"end"
SINGLE_ESCAPES='back\slash \' quote'
export EXPORTED=yes
export =broken
INNER=x"y"z
EQUALS=a=b=c
REFERENCE=${PLAIN}-${MISSING:-fallback}-${EMPTY:-kept-empty}
MULTILINE="first
second"
DUPLICATE=first
DUPLICATE=second
URL=http://bob:pw@mlflow:5000/path?q=1#frag
not a setting
GARBAGE="closed" trailing words
BACKSLASH_END="a\\"
SWALLOWED=x
CLOSER=" "
AFTER_CLOSER=read on
UNCLOSED='never closed
AFTER=read on
""".replace("<TAB>", "\t").replace("<BLANKS>", "   ")
# Every name a line of TRICKY begins with, broken ones too, and one that no line sets.
NAMES = sorted({*re.findall(r"^(?:export )?([A-Z][A-Z_]*)", TRICKY, re.MULTILINE), "UNSET"})


def compose_resolves(env_file: Path, names: list[str], workdir: Path) -> dict[str, str | None]:
    """What docker-compose substitutes for each of `names` from `env_file` (None: not set there)."""
    compose_file = workdir / "docker-compose.yml"
    environment = {name: f"${{{name}-UNSET-MARK}}" for name in names}
    compose_file.write_text(
        yaml.safe_dump(
            {"version": "3.9", "services": {"probe": {"image": "busybox", "environment": environment}}}
        )
    )
    done = subprocess.run(
        ["docker-compose", "--env-file", str(env_file), "-f", str(compose_file), "config"],
        capture_output=True,
        text=True,
        cwd=workdir,
        env={"PATH": os.environ["PATH"], "HOME": str(workdir)},  # the shell's variables would win
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)["services"]["probe"]["environment"]
    return {name: None if resolved[name] == "UNSET-MARK" else str(resolved[name]) for name in names}


@pytest.fixture
def compose() -> str:
    found = shutil.which("docker-compose")
    if found is None:
        pytest.skip("docker-compose (1.29, which reads .env with python-dotenv) is not installed")
    version = subprocess.run([found, "version", "--short"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("1."), version.stdout
    return found


@pytest.mark.parametrize(
    "text", [TRICKY, "\ufeffFIRST=bom\r\nSECOND='crlf' # c\r\n"], ids=["tricky", "bom-crlf"]
)
def test_every_setting_reads_as_compose_resolves_it(compose: str, tmp_path: Path, text: str) -> None:
    env_file = tmp_path / "cluster.env"
    env_file.write_text(text, encoding="utf-8")
    names = NAMES if text is TRICKY else ["FIRST", "SECOND", "UNSET"]
    ours = read_env(env_file)
    assert {name: ours.get(name) for name in names} == compose_resolves(env_file, names, tmp_path)


def test_the_tricky_lines_are_read_as_intended() -> None:
    """The cases the comparison covers, spelled out (so a Compose that changed would show here)."""
    settings = parse_env(TRICKY)
    assert settings["INLINE"] == settings["INLINE_TAB"] == settings["TRAILING"] == "value"
    assert settings["TIGHT"] == "value#no-comment" and settings["DOUBLE"] == settings["SINGLE"] == "a # b"
    assert settings["EMPTY_COMMENT"] == "# only a comment" and settings["KEY_ONLY"] == ""
    assert settings["QUOTED_BLANK"] == " " and settings["DOUBLE_ESCAPES"] == 'tab\tquote"end'
    assert settings["SINGLE_ESCAPES"] == "back\\slash ' quote" and settings["MULTILINE"] == "first\nsecond"
    assert settings["REFERENCE"] == "value-fallback-" and settings["DUPLICATE"] == "second"
    broken = {"GARBAGE", "BACKSLASH_END", "SWALLOWED", "CLOSER", "UNCLOSED", "not"}
    assert not broken & set(settings) and settings["AFTER_CLOSER"] == settings["AFTER"] == "read on"


def test_the_shipped_example_reads_as_compose_reads_it(compose: str, tmp_path: Path) -> None:
    example = ROOT / ".env.example"
    names = sorted(read_env(example))
    assert names and {name: read_env(example)[name] for name in names} == compose_resolves(
        example, names, tmp_path
    )
