"""`make test`'s order of tests on two pytest workers (tests/conftest.py), with plain items."""

from __future__ import annotations

from tests.conftest import two_worker_order


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
