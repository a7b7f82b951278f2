"""A table's commit lock in a bucket (``bucket_lock``): a lease object beside the tables,
taken, renewed, released and taken over by conditional PUTs against a real S3 API server
on 127.0.0.1 (moto's server mode, ``tests/s3_server.py``)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sparkload.engine.object_store import apply_s3_settings
from sparkload.load import bucket_lock, table_lock
from sparkload.load.table import LOCKS_FOLDER, PathTable

if TYPE_CHECKING:
    from s3_server import S3Bucket

pytest_plugins = ("s3_server",)
# The embedded engine's extra brings obstore (a JVM session's environment has none).
obstore = pytest.importorskip("obstore")
pytestmark = [pytest.mark.timeout(120)]

REPOSITORY = Path(__file__).resolve().parents[1]


@pytest.fixture
def dataset(s3_bucket: S3Bucket) -> str:
    """A dataset's folder in the bucket, with this process's S3 settings completed as a
    pipeline completes them (``AWS_ALLOW_HTTP`` for the http:// endpoint)."""
    apply_s3_settings(s3_bucket.url)
    return f"{s3_bucket.url}/lake/shop"


def lease_uri(dataset: str, table: str = "orders") -> str:
    return f"{dataset}/{LOCKS_FOLDER}/{table}.lock"


def store_of(bucket: S3Bucket) -> Any:
    return obstore.store.S3Store(bucket.name)


def lease_key(table: str = "orders") -> str:
    return f"lake/shop/{LOCKS_FOLDER}/{table}.lock"


def test_a_table_in_a_bucket_has_a_lease_beside_the_tables(s3_bucket: S3Bucket, dataset: str) -> None:
    """The lease lies where the local lock would (``<dataset>/_sparkload_locks/<table>.lock``),
    names its holder and its expiry while held, and is gone once released."""
    lock = PathTable(None, dataset, "orders").commit_lock()
    assert isinstance(lock, bucket_lock.BucketLease)
    assert lock.try_acquire()
    try:
        assert s3_bucket.object_keys() == [lease_key()]
        body = json.loads(bytes(obstore.get(store_of(s3_bucket), lease_key()).bytes()))
        assert str(os.getpid()) in body["holder"]
        assert time.time() < body["expires"] <= time.time() + bucket_lock.DEFAULT_LEASE_SECONDS
    finally:
        lock.release()
    assert s3_bucket.object_keys() == []


def test_a_second_writer_waits_for_the_lease_and_says_so_once(
    dataset: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Two holds of one table's lock, as two commit attempts take them (``table_lock.held``):
    the second waits until the first is released, and logs once that it waits."""
    table = PathTable(None, dataset, "orders")
    first = table.commit_lock()
    assert first is not None and first.try_acquire()
    entered = threading.Event()

    def second() -> None:
        with table_lock.held(table):
            entered.set()

    caplog.set_level(logging.INFO, logger=table_lock.__name__)
    waiter = threading.Thread(target=second)
    waiter.start()
    time.sleep(2.0)
    assert not entered.is_set()
    first.release()
    waiter.join(timeout=30)
    assert entered.is_set()
    waits = [r for r in caplog.records if "waiting for another writer's commit" in r.getMessage()]
    assert len(waits) == 1


def test_a_held_lease_is_renewed_past_its_length(s3_bucket: S3Bucket, dataset: str) -> None:
    """A holder renews its lease while it holds it: nobody takes it over after the lease's
    length, however long the commit takes."""
    holder = bucket_lock.lease(lease_uri(dataset), lease_s=2.5)
    assert holder is not None and holder.try_acquire()
    first_etag = obstore.head(store_of(s3_bucket), lease_key())["e_tag"]
    try:
        deadline = time.monotonic() + 6.0  # more than two leases
        while time.monotonic() < deadline:
            other = bucket_lock.lease(lease_uri(dataset), lease_s=2.5)
            assert other is not None and not other.try_acquire()
            time.sleep(0.2)
        assert obstore.head(store_of(s3_bucket), lease_key())["e_tag"] != first_etag
    finally:
        holder.release()
    assert s3_bucket.object_keys() == []


CHILD = textwrap.dedent(
    """
    import sys, time
    from sparkload.load import bucket_lock
    lease = bucket_lock.lease(sys.argv[1], lease_s=float(sys.argv[2]))
    assert lease is not None and lease.try_acquire()
    print("held", flush=True)
    time.sleep(600)
    """
)


def test_a_writer_killed_while_holding_the_lease_leaves_one_that_expires(
    s3_bucket: S3Bucket, dataset: str
) -> None:
    """A writer that dies (kill -9) cannot release its lease: the next writer waits for the
    lease to expire, then takes it over."""
    lease_s = 4.0
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, lease_uri(dataset), str(lease_s)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPOSITORY,  # this checkout's sparkload
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        left = json.loads(bytes(obstore.get(store_of(s3_bucket), lease_key()).bytes()))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    killed_at = time.time()
    lock = bucket_lock.lease(lease_uri(dataset), lease_s=lease_s)
    assert lock is not None and not lock.try_acquire()
    lock.acquire()
    try:
        taken_at = time.time()
        # Not before the lease the killed writer renewed last expired; soon after it.
        assert taken_at >= left["expires"]
        assert taken_at - killed_at < lease_s + 5.0
        body = json.loads(bytes(obstore.get(store_of(s3_bucket), lease_key()).bytes()))
        assert body["holder"] == lock.holder != left["holder"]
    finally:
        lock.release()


def test_of_several_takers_of_an_expired_lease_exactly_one_wins(s3_bucket: S3Bucket, dataset: str) -> None:
    """Takers that all read the same expired lease overwrite it conditionally on its etag:
    the store lets one of them."""
    expired = {"holder": "gone", "expires": time.time() - 1}
    obstore.put(store_of(s3_bucket), lease_key(), json.dumps(expired).encode())
    takers = [bucket_lock.lease(lease_uri(dataset), lease_s=30) for _ in range(6)]
    start = threading.Barrier(len(takers))
    won: list[bucket_lock.BucketLease] = []

    def take(lease: bucket_lock.BucketLease | None) -> None:
        assert lease is not None
        start.wait()
        if lease.try_acquire():
            won.append(lease)

    threads = [threading.Thread(target=take, args=(lease,)) for lease in takers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(won) == 1
    body = json.loads(bytes(obstore.get(store_of(s3_bucket), lease_key()).bytes()))
    assert body["holder"] == won[0].holder
    won[0].release()


def test_an_object_that_is_no_lease_is_refused_by_name(s3_bucket: S3Bucket, dataset: str) -> None:
    """Something else at the lease's key is never taken for a free or an expired lease."""
    obstore.put(store_of(s3_bucket), lease_key(), b"not a lease")
    lock = bucket_lock.lease(lease_uri(dataset))
    assert lock is not None
    with pytest.raises(ValueError, match=f"commit lock {lease_key()}: the object holds no lease"):
        lock.try_acquire()
    assert bytes(obstore.get(store_of(s3_bucket), lease_key()).bytes()) == b"not a lease"


def test_no_lease_where_commits_are_not_conditional_by_etag(
    dataset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the store cannot take a conditional update by etag, or the URL is no S3 one,
    there is no lease: merges there stay MERGEs (``range_rewrite.usable``)."""
    assert bucket_lock.lease(lease_uri(dataset)) is not None
    assert bucket_lock.lease("gs://bucket/lake/shop/_sparkload_locks/orders.lock") is None
    monkeypatch.setenv("AWS_CONDITIONAL_PUT", "dynamo:locks")
    assert bucket_lock.lease(lease_uri(dataset)) is None
    assert PathTable(None, dataset, "orders").commit_lock() is None


def test_the_lease_length_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOAD__COMMIT_LEASE_SECONDS", "2.5")
    assert bucket_lock.lease_seconds() == 2.5
    monkeypatch.setenv("LOAD__COMMIT_LEASE_SECONDS", "0")
    with pytest.raises(ValueError, match="commit_lease_seconds"):
        bucket_lock.lease_seconds()
