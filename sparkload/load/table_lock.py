"""One commit at a time per table, among every writer of its destination.

A range rewrite (``range_rewrite``) reads rows of its table and overwrites them in one
write. The embedded engine (Sail 0.7.2) fixes the version that write reads when it plans
the read, and the version its commit is checked against for conflicts when it plans the
overwrite, a little later; a commit by another writer landing in between is overwritten
without a conflict. Seen in the two-writer race test: a nested table's rewrite planned on
version 58, committed after another writer's version 59, and put back nested rows version
59 had removed. A lock per table, held by each commit attempt from its first read to its
commit, closes that window. Two kinds serve (``DeltaTable.commit_lock``):
- a table in a local folder: an exclusive ``flock`` on a file beside the tables, for every
  writer on this machine (processes and threads alike, since each attempt opens the lock
  file anew); a writer that dies releases it, so none is ever left behind;
- a table in an S3 bucket: a lease object beside the tables (``bucket_lock``), for every
  writer of the bucket; a writer that dies leaves a lease that expires.
Tables without either have no lock: there merges stay MERGEs, whose commit conflicts with
any other (``range_rewrite.usable``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Protocol

from sparkload.common import file_lock

logger = logging.getLogger(__name__)


class CommitLock(Protocol):
    """One commit attempt's hold on its table's lock."""

    def try_acquire(self) -> bool:
        """Take the lock if no other writer holds it; False (at once) where one does."""

    def acquire(self) -> None:
        """Take the lock, waiting for the writer that holds it."""

    def release(self) -> None: ...


class FileLock:
    """The lock of a local file (``flock``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def try_acquire(self) -> bool:
        self._handle = file_lock.acquire(self.path, wait=False)
        return self._handle is not None

    def acquire(self) -> None:
        self._handle = file_lock.acquire(self.path, wait=True)

    def release(self) -> None:
        if self._handle is not None:
            file_lock.release(self._handle)
            self._handle = None


class LockedTable(Protocol):
    """What ``held`` needs of a table (``load.table.DeltaTable``, which imports this module
    for its locks)."""

    name: str

    def commit_lock(self) -> CommitLock | None: ...


@contextlib.contextmanager
def held(table: LockedTable) -> Iterator[bool]:
    """Hold ``table``'s commit lock (waiting for another writer's commit to end); nothing
    where the table has none. Yields whether a lock is held."""
    lock = table.commit_lock()
    if lock is None:
        yield False
        return
    if not lock.try_acquire():
        logger.info("table '%s': waiting for another writer's commit to end", table.name)
        lock.acquire()
    try:
        yield True
    finally:
        lock.release()
