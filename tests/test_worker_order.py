"""`make test`'s order of tests on two pytest workers (tests/conftest.py), with plain items."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import longest_first, two_worker_order

ROOT = Path(__file__).resolve().parents[1]


class Item:
    def __init__(self, nodeid: str, *markers: str) -> None:
        self.nodeid, self.markers = nodeid, markers

    def get_closest_marker(self, name: str) -> object:
        return name if name in self.markers else None


def test_the_exclusive_test_leads_and_the_second_half_starts_with_the_fewest_item_modules() -> None:
    few = [Item(f"tests/a.py::t{n}") for n in range(2)]
    many = [Item(f"tests/b.py::t[{n}]") for n in range(6)]
    slow = [Item(f"tests/s.py::t{n}", "slow") for n in range(4)]
    compose = Item("tests/c.py::t", "slow", "exclusive")
    order = two_worker_order([*few, *slow[:2], compose, *many, *slow[2:]])
    # Worksteal's first half (7 of 15) ends with the short parametrised cases; the module of few
    # (longer) tests falls to the second worker, before its end-to-end tests.
    assert order == [compose, slow[0], slow[2], *many, *few, slow[1], slow[3]]


def test_end_to_end_tests_run_longest_first_by_their_recorded_seconds() -> None:
    recorded = json.loads((ROOT / "tests" / "slow_durations.json").read_text())
    longest = max(recorded, key=recorded.get)
    shortest = min(recorded, key=recorded.get)
    unknown = Item("tests/new.py::t", "slow")  # not recorded yet: the median
    slow = [Item(shortest, "slow"), unknown, Item(longest, "slow")]
    assert [i.nodeid for i in longest_first(slow)] == [longest, unknown.nodeid, shortest]


def test_every_recorded_test_still_exists() -> None:
    """A renamed or deleted test leaves a stale line in tests/slow_durations.json: `make
    test-durations` writes it again."""
    for nodeid in json.loads((ROOT / "tests" / "slow_durations.json").read_text()):
        path, *names = nodeid.split("::")
        text = (ROOT / path).read_text()
        defined = f"def {names[-1].split('[')[0]}(" in text
        inherited = len(names) == 2 and f"class {names[0]}(" in text  # a suite's test, e.g. Optuna's
        assert defined or inherited, nodeid


def test_the_durations_script_reads_node_ids_off_pytests_junit_report(tmp_path) -> None:
    """scripts/slow-durations turns pytest's own JUnit XML into the node ids pytest collects, for a
    test in a class and one with parameters."""
    report = tmp_path / "report.xml"
    selected = [
        "tests/test_worker_order.py::test_the_exclusive_test_leads_and_the_second_half_starts_with_the_fewest_item_modules"
    ]
    selected.append(
        "tests/tuner/samplers/test_contracts.py::TestSamplerContracts::test_float[random-distribution0]"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:xdist",
            f"--junitxml={report}",
            *selected,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    written = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "slow-durations"), str(report)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert sorted(json.loads(written.stdout)) == sorted(selected)
