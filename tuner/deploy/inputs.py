"""The renderer's two inputs: the .env that Compose reads, and a values file over values.yaml.

The .env is read with the rules docker-compose 1.29 applies to it (python-dotenv's grammar, see
`parse_env`), so the same file drives both: a setting read differently here would put a comment,
a quote or a blank into a manifest or the Secret where Compose has none. The values file is merged
key by key over the defaults in values.yaml; what it may contain is the business of `refusals`.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

import yaml

DEFAULT_VALUES = Path(__file__).with_name("values.yaml")


# python-dotenv's grammar, one piece at a time: it reads a piece with its own regex and never goes
# back into it (hence the atomic groups), so a broken line is skipped from where the reading failed.
# `export ` and a key (bare, or in single quotes), then blanks:
_KEY = re.compile(r"(?>(?:export[^\S\r\n]+)?)(?:'(?P<quoted>[^']+)'|(?!')(?P<bare>[^=\#\s]+))[^\S\r\n]*")
# `=` and a value: single-quoted, double-quoted (either may span lines), or the rest of the line.
_VALUE = re.compile(
    r"""=(?>[^\S\r\n]*)(?:'(?P<single>(?:\\'|[^'])*)'|"(?P<double>(?:\\"|[^"])*)"|(?!['"])(?P<bare>[^\r\n]*))"""
)
# A comment, then the end of the line.
_END = re.compile(r"(?:[^\S\r\n]*\#[^\r\n]*)?[^\S\r\n]*(?:\r\n|\n|\r|$)")
_BLANKS = re.compile(r"\s*")
_REST_OF_LINE = re.compile(r"[^\r\n]*(?:\r\n|\n|\r)?")
_DOUBLE_ESCAPES = re.compile(r"""\\[\\'"abfnrtv]""")
_SINGLE_ESCAPES = re.compile(r"\\[\\']")
# ${NAME} and ${NAME:-default}: what python-dotenv expands in a value, from the lines above it.
_VARIABLE = re.compile(r"\$\{(?P<name>[^}:]*)(?::-(?P<default>[^}]*))?\}")


def _end(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where `pattern` (one that always matches) ends when read at `position`."""
    match = pattern.match(text, position)
    assert match is not None
    return match.end()


def _unescape(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda m: codecs.decode(m.group(0), "unicode-escape"), text)


def _value(match: re.Match[str] | None) -> str:
    """The value of one binding before expansion ("" for a key without `=`, which Compose sets empty)."""
    if match is None:
        return ""
    if match.group("single") is not None:
        return _unescape(_SINGLE_ESCAPES, match.group("single"))
    if match.group("double") is not None:
        return _unescape(_DOUBLE_ESCAPES, match.group("double"))
    return re.sub(r"\s+#.*", "", match.group("bare")).rstrip()


def _binding(text: str, position: int) -> tuple[tuple[str, str] | None, int]:
    """The (key, raw value) at `position` (None for a comment or a broken line), and where the next starts."""
    key = None if text[position] == "#" else _KEY.match(text, position)
    value = None
    if key is not None:
        position = key.end()
        value = _VALUE.match(text, position) if text.startswith("=", position) else None
        position = position if value is None else value.end()
    end = _END.match(text, position)
    if end is None:
        return None, _end(_REST_OF_LINE, text, position)
    return (None if key is None else (key.group("quoted") or key.group("bare"), _value(value))), end.end()


def _expand(value: str, above: dict[str, str]) -> str:
    """`value` with ${NAME} and ${NAME:-default} replaced from the bindings above it.

    As python-dotenv does: the default applies only to a name not bound above (an empty one stays
    empty). The shell's environment is not consulted: the renderer reads the .env alone.
    """
    return _VARIABLE.sub(lambda m: above.get(m.group("name"), m.group("default")) or "", value)


def parse_env(text: str) -> dict[str, str]:
    """The settings of an .env file's text, as docker-compose 1.29 (python-dotenv) reads them.

    Unquoted values end at a blank followed by `#` (an inline comment) and lose trailing blanks;
    quoted values keep everything between their quotes (a `#` too) and decode backslash escapes;
    a line that is no binding is skipped; a key without `=` is set empty; ${NAME} is a setting above.
    """
    settings: dict[str, str] = {}
    position = _end(_BLANKS, text, 0)
    while position < len(text):
        binding, position = _binding(text, position)
        if binding is not None:
            settings[binding[0]] = _expand(binding[1], settings)
        position = _end(_BLANKS, text, position)
    return settings


def read_env(path: Path) -> dict[str, str]:
    """The settings of the .env file at `path`."""
    return parse_env(path.read_text(encoding="utf-8-sig"))


def default_values() -> dict[str, Any]:
    """values.yaml: every Kubernetes-only choice with its default."""
    data = yaml.safe_load(DEFAULT_VALUES.read_text())
    assert isinstance(data, dict)
    return data


def read_values(path: Path | None) -> dict[str, Any]:
    """The user's values file as written ({} for none); `merged` lays it over the defaults."""
    if path is None:
        return {}
    data = yaml.safe_load(path.read_text())
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a values file is a mapping of keys to values")
    return data


def merged(defaults: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`overrides` laid over `defaults`: mappings merge key by key, anything else replaces."""
    result = dict(defaults)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result
