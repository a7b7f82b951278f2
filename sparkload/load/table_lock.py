"""One commit at a time per table, among the writers on this machine.

A range rewrite (``range_rewrite``) reads rows of its table and overwrites them in one
write. The embedded engine (Sail 0.7.2) fixes the version that write reads when it plans
the read, and the version its commit is checked against for conflicts when it plans the
overwrite, a little later; a commit by another writer landing in between is overwritten
without a conflict. Seen in the two-writer race test: a nested table's rewrite planned on
version 58, committed after another writer's version 59, and put back nested rows version
59 had removed. An exclusive lock on a file per table, held by each commit attempt from its
first read to its commit, closes that window for every writer on this machine (processes
and threads alike, since each attempt opens the lock file anew). Tables outside a local
folder have no lock: there merges stay MERGEs, whose commit conflicts with any other
(``range_rewrite.usable``).

The lock is a ``flock``: a writer that dies releases it, so none is ever left behind.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from sparkload.common import file_lock
from sparkload.load.table import DeltaTable

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def held(table: DeltaTable) -> Iterator[None]:
    """Hold ``table``'s commit lock (waiting for another writer's commit to end); nothing
    where the table has none."""
    path = table.lock_path()
    if path is None:
        yield
        return
    handle = file_lock.acquire(path, wait=False)
    if handle is None:
        logger.info("table '%s': waiting for another writer's commit to end", table.name)
        handle = file_lock.acquire(path, wait=True)
        assert handle is not None
    try:
        yield
    finally:
        file_lock.release(handle)
