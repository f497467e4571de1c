"""The tests' port picker: a Ray node gets seven ports in a row, and the kernel may hand a port it
just released out again (a head failed to start with its metrics port equal to its GCS port)."""

from __future__ import annotations

from tests.postgres import free_port


def test_free_port_never_hands_out_the_same_port_twice():
    ports = [free_port() for _ in range(300)]  # the kernel alone repeated 1 to 7 of 300 here
    assert len(set(ports)) == len(ports)
