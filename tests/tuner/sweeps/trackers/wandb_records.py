"""Reads back what W&B wrote to a run's transaction log (`run-<id>.wandb`), as W&B itself reads it.

W&B 0.31 ships no Python reader of its own log (its `wandb-core` service reads it when it syncs),
so this transcribes W&B's reader, `wandb/sdk/internal/datastore.py` (wandb <= 0.19, `DataStore.
scan_data`, `scan_record`, `_read_header`), which `wandb-core` keeps compatible (core/pkg/leveldb):
a LevelDB log in 32 KiB blocks after a 7-byte file header (":W&B", magic 0xBEE1, version 0), each
record a 7-byte header (CRC-32 of the type byte then the data, length, type: 1 full, 2 first,
3 middle, 4 last) and a serialized `wandb.proto.wandb_internal_pb2.Record`; a block's last bytes,
too few for a header, are zero padding. Every checksum is checked, so a file this misreads fails.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2 as pb

HEADER = struct.Struct("<IHB")  # checksum, length, type
FILE_HEADER = struct.Struct("<4sHB")  # ident, magic, version
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> list[pb.Record]:
    """Every record of a `.wandb` file, in the order W&B wrote them."""
    raw = path.read_bytes()
    ident, magic, version = FILE_HEADER.unpack_from(raw, 0)
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0), (ident, magic, version)
    index, out, pending = FILE_HEADER.size, [], b""
    while index < len(raw):
        left = BLOCK - index % BLOCK
        if left < HEADER.size:  # the block's tail: zero padding
            assert raw[index : index + left] == b"\0" * left
            index += left
            continue
        checksum, length, kind = HEADER.unpack_from(raw, index)
        data = raw[index + HEADER.size : index + HEADER.size + length]
        assert checksum == zlib.crc32(data, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF, "corrupt record"
        index += HEADER.size + length
        pending += data
        if kind in (FULL, LAST):
            record = pb.Record()
            record.ParseFromString(pending)
            out.append(record)
            pending = b""
    return out


@dataclass
class WandbRun:
    """One run as its log holds it: its run record, config, history rows, summary and exit code."""

    project: str = ""
    group: str = ""
    name: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None


def _items(items: Any) -> dict[str, Any]:
    """W&B's items as {key: value}: a key is `key`, or `nested_key`'s parts joined by "/"; values
    are JSON as W&B stores them (`value_json`), decoded."""
    return {(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in items}


def read_run(path: Path) -> WandbRun:
    """The run of a `.wandb` file, as the records W&B wrote build it up."""
    run = WandbRun()
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.project, run.group, run.name = (
                record.run.project,
                record.run.run_group,
                record.run.display_name,
            )
            run.config.update(_items(record.run.config.update))
        elif kind == "config":
            run.config.update(_items(record.config.update))
        elif kind == "history":
            run.history.append(_items(record.history.item))
        elif kind == "summary":
            run.summary.update(_items(record.summary.update))
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    return run


def runs_in(directory: Path) -> list[WandbRun]:
    """Every run W&B wrote under `directory` (its `wandb/offline-run-*` folders), read once W&B has
    torn down as the sweep's process does when it exits (`wandb.teardown`, its atexit hook): the
    last run's `finish()` may return before `wandb-core` has written its log (seen: 2 in 20 runs
    of test_wandb.py read the last run's file without its run record)."""
    import wandb

    wandb.teardown()
    return [read_run(p) for p in sorted(directory.glob("wandb/*run-*/run-*.wandb"))]
