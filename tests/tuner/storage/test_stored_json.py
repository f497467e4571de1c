"""`tuner.storage.stored_json.decode`, the one read of a stored attribute's JSON: every value rnntune
writes reads back as it was; anything else is an `Unreadable` naming why, never an exception."""

from __future__ import annotations

import json

import pytest

from tuner.storage.stored_json import MAX_BYTES, MAX_DEPTH, Unreadable, decode


@pytest.mark.parametrize(
    "value", [None, True, 3, -2.5, "text", [1, "a", None], {"params": {"lr": {"low": 0.001}}}, {"": []}]
)
def test_json_reads_back_as_it_was(value):
    assert decode(json.dumps(value)) == value
    assert decode(json.dumps(value).encode()) == value  # a driver that hands back bytes


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{not json", "is not JSON"),
        ("", "is not JSON"),
        ("9" * 5000, "is not JSON"),  # over Python's 4300-digit int bound
        (nested(5000), "is not JSON"),  # json.loads' own recursion bound
        (nested(MAX_DEPTH + 1), f"deeper than {MAX_DEPTH}"),
        ('"' + "a" * MAX_BYTES + '"', "at most"),
        (b"\xff\xfe", "not UTF-8"),
        (12, "stored as int"),
    ],
)
def test_anything_else_is_unreadable_and_says_why(raw, says):
    found = decode(raw)
    assert isinstance(found, Unreadable) and says in found.reason, found


def test_the_depth_bound_is_exact():
    assert decode(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    assert isinstance(decode(json.dumps({"a": json.loads(nested(MAX_DEPTH))})), Unreadable)
