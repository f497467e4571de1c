"""The API's best-checkpoint download of a study kept in an object store, checked against the
object itself: what the S3 and GCS end-to-end sweeps share."""

from __future__ import annotations

import hashlib

import httpx

from tuner.storage.object_store import ObjectLocation, ObjectStore


def best_download(url: str, study: str, store: ObjectStore, key: ObjectLocation) -> httpx.Response:
    """GET /studies/STUDY/best/checkpoint from the server at `url`: a 200 whose SHA-256 header and
    body both match the object `key` as the store holds it."""
    expected = hashlib.sha256(b"".join(store.chunks(key))).hexdigest()
    download = httpx.get(f"{url}/studies/{study}/best/checkpoint", timeout=60)
    assert download.status_code == 200, download.text
    assert download.headers["x-checkpoint-sha256"] == expected
    assert hashlib.sha256(download.content).hexdigest() == expected
    return download
