"""A table's commit lock in a bucket: a lease object beside the tables.

A bucket has no ``flock``, but S3 (and moto, MinIO, R2 …) refuse a conditional PUT whose
condition fails, and that is enough for a lease:
- taken by creating ``<dataset>/_sparkload_locks/<table>.lock`` with ``If-None-Match: *``
  (only one creator succeeds); its body names the holder and when the lease expires;
- renewed by its holder while held, by a PUT with ``If-Match: <etag>`` of the object it
  wrote last (a renewal that finds another etag knows the lease was taken over);
- released by deleting it;
- a lease past its expiry (its holder died, or stalled longer than the lease) is taken
  over by a PUT with ``If-Match`` on the etag read with it: of two takers who read the same
  expired lease, the store lets one overwrite it.

What it assumes: the writers' clocks agree to well within a lease (the expiry is a wall
clock time, read by other machines), and a holder does not stall (a paused VM, a stopped
process) for longer than a lease while holding it; a stalled holder's commit may then
overlap the next holder's, and is caught only where the engine sees the conflict.

The lease is written through ``obstore`` (object_store's S3 client, which the engine's own
Delta writer uses too), built from the standard AWS variables sparkload completes for the
process (``engine.object_store``). Where obstore is missing, the URL is not S3's, or the
commits' conditional PUT is not by etag, there is no lease: ``lease`` returns None and
merges stay MERGEs.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import urllib.parse
import uuid
from typing import TYPE_CHECKING

from sparkload.config import config
from sparkload.engine.object_store import CONDITIONAL_PUT, EXCLUSIVE_COMMITS, is_s3_url

try:
    import obstore
    from obstore.exceptions import AlreadyExistsError, PreconditionError
    from obstore.store import S3Store
except ImportError:  # the `local` extra brings it; without it merges in a bucket stay MERGEs
    obstore = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from obstore import PutResult
    from obstore.store import ObjectStore

logger = logging.getLogger(__name__)

# A lease lasts a minute and its holder renews it every quarter of that. A commit holds its
# table's lock from its first read to its commit: seconds, sometimes minutes for a large
# rewrite, which the renewals carry. A minute bounds how long the other writers wait after
# a holder dies without releasing it, and three renewals in a row can fail (a slow or
# briefly unreachable store) before a live holder loses its lease.
LEASE_SECONDS_CONFIG = "load.commit_lease_seconds"
DEFAULT_LEASE_SECONDS = 60.0
RENEWALS_PER_LEASE = 4
# How often a waiting writer looks at the lease again: a commit lasts seconds.
POLL_SECONDS = 0.5


def lease_seconds() -> float:
    """The lease length: ``[load] commit_lease_seconds`` (LOAD__COMMIT_LEASE_SECONDS), else
    a minute."""
    value = float(config.get(LEASE_SECONDS_CONFIG, DEFAULT_LEASE_SECONDS))
    if value <= 0:
        raise ValueError(f"{LEASE_SECONDS_CONFIG} must be a positive number of seconds, not {value}")
    return value


def lease(uri: str, lease_s: float | None = None) -> BucketLease | None:
    """The lease at ``uri`` (``s3://bucket/key``); None where there can be none (see the
    module's text)."""
    if obstore is None or not is_s3_url(uri):
        return None
    if os.environ.get(CONDITIONAL_PUT, EXCLUSIVE_COMMITS).strip().lower() != EXCLUSIVE_COMMITS:
        return None  # a lock table (dynamo:…) takes creates, not updates by etag
    parts = urllib.parse.urlsplit(uri)
    length = lease_seconds() if lease_s is None else lease_s
    return BucketLease(S3Store(parts.netloc), parts.path.lstrip("/"), length)


class BucketLease:
    """One attempt's hold on the lease at ``key`` in ``store`` (a new object per attempt,
    as ``table_lock`` takes one)."""

    def __init__(self, store: ObjectStore, key: str, lease_s: float) -> None:
        self.store = store
        self.key = key
        self.lease_s = lease_s
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"
        self._etag: str | None = None
        self._expires = 0.0
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def _body(self) -> tuple[bytes, float]:
        expires = time.time() + self.lease_s
        return json.dumps({"holder": self.holder, "expires": expires}).encode(), expires

    def try_acquire(self) -> bool:
        """Take the lease if it is free or expired; False (at once) where another holds it."""
        body, expires = self._body()
        try:
            written = obstore.put(self.store, self.key, body, mode="create")
        except (AlreadyExistsError, PreconditionError):
            taken = self._take_over_expired()
            if taken is None:
                return False
            written = taken
        self._held(written["e_tag"], expires)
        return True

    def _take_over_expired(self) -> PutResult | None:
        try:
            found = obstore.get(self.store, self.key)
            body = bytes(found.bytes())
        except FileNotFoundError:
            return None  # released meanwhile: the next attempt creates it
        try:
            held = json.loads(body)
            expires = float(held["expires"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(
                f"commit lock {self.key}: the object holds no lease that sparkload wrote (no "
                f"holder and expiry); delete it once no writer of the table is running"
            ) from None
        if time.time() <= expires:
            return None
        body, _ = self._body()
        try:
            written = obstore.put(self.store, self.key, body, mode={"e_tag": found.meta["e_tag"]})
        except (PreconditionError, FileNotFoundError):
            return None  # another taker, or its holder, was first
        logger.warning(
            "commit lock %s: took over the expired lease of %s (its writer stopped without releasing it)",
            self.key,
            held.get("holder"),
        )
        return written

    def acquire(self) -> None:
        """Take the lease, waiting for its holder to release it or for it to expire."""
        while not self.try_acquire():
            time.sleep(min(POLL_SECONDS, self.lease_s / RENEWALS_PER_LEASE))

    def _held(self, etag: str | None, expires: float) -> None:
        self._etag, self._expires = etag, expires
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew, name=f"lease {self.key}", daemon=True)
        self._renewer.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / RENEWALS_PER_LEASE):
            body, expires = self._body()
            try:
                written = obstore.put(self.store, self.key, body, mode={"e_tag": self._etag})
            except (PreconditionError, FileNotFoundError):
                logger.error(
                    "commit lock %s: the lease was taken over while held (this writer stalled "
                    "longer than its %.0f s lease); another writer's commit may overlap this one",
                    self.key,
                    self.lease_s,
                )
                self._expires = 0.0
                return
            except Exception as error:  # the store unreachable for now: the next renewal retries
                failure = type(error).__name__
                logger.warning("commit lock %s: renewing the lease failed (%s)", self.key, failure)
                continue
            self._etag, self._expires = written["e_tag"], expires

    def release(self) -> None:
        """Delete the lease, while it is certainly still this holder's: one past its expiry
        (or taken over) may be another's now, and is left to expire (or to its new holder)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        if time.time() + self.lease_s / RENEWALS_PER_LEASE < self._expires:
            obstore.delete(self.store, self.key)
        self._etag, self._expires = None, 0.0
