"""The first commit of a merge table, safe when two writers create it at once.

A merge table that is not there yet is created by an append of the load's rows: one
commit that writes files of the usual size (a MERGE into an empty table would write one
large file, which every later MERGE would then rewrite). Two writers may both find the
table missing and both append:

- Delta on Apache Spark refuses the second create as a conflict; the commit is retried,
  finds the table there and merges into it like any other load;
- Sail 0.7 commits the second create after the first, unchecked, as an append: both
  writers' rows would stand side by side, keys twice.

So a create whose commit is not the table's first (version 0) *lost the race*: it
withdraws its rows (one MERGE that deletes the rows carrying its load id) and merges them
as if it had started after the other writer. Readers may see both writers' rows for the
moment between the two commits. Each create is recorded in the load package before it is
made (``Creates``), so a load cut short between them finds the lost race again when it is
resumed, and withdraws and merges again (both are idempotent).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkload.common.folder import Folder
from sparkload.common.system_columns import LOAD_ID
from sparkload.load import dispositions, merge_sql
from sparkload.load.commits import TableAction
from sparkload.load.table import DeltaTable

logger = logging.getLogger(__name__)


class Creates:
    """The tables a load set out to create, an empty file each in its package.

    Only the run that claimed the package writes in it, so the folder is listed once, on
    the first question (what an earlier attempt of the load recorded), and this load's own
    records are added as it makes them: in a bucket, a question per table would cost a
    request or two each (a HEAD, and a listing where the file is not there)."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self._lock = threading.Lock()  # the tables' commits run side by side
        self._names: set[str] | None = None

    def record(self, table: str) -> None:
        self.folder.write(table, b"")
        with self._lock:
            if self._names is not None:
                self._names.add(table)

    def recorded(self, table: str) -> bool:
        with self._lock:
            if self._names is None:
                self._names = set(self.folder.file_sizes(""))  # none when no folder
            return table in self._names


def create_or_merge(
    table: DeltaTable,
    rows: Callable[[], DataFrame],
    merge: TableAction,
    load_id: str,
    creates: Creates,
) -> None:
    """Create ``table`` with ``rows()`` if it is not there, else ``merge`` into it; a create
    that lost the race to another writer's is withdrawn and merged (see the module)."""
    if not table.exists():
        creates.record(table.name)
        dispositions.append(table, rows(), load_id)
        if not lost_create_race(table, load_id, creates):
            return
        logger.warning(
            "table %s: another writer created it at the same moment; this load's rows are "
            "withdrawn and merged into it instead",
            table.shown,
        )
    elif not lost_create_race(table, load_id, creates):
        merge(table)
        return
    withdraw(table, load_id)
    merge(table)


def made_by(table: DeltaTable, load_id: str) -> bool:
    """Whether ``table`` is as this load's create left it: its first commit (version 0) is
    the load's and no commit has come after it (another writer that created it first, or
    committed to it since, makes this False)."""
    return table.version() == 0 and table.committed_by(load_id) == 0


def lost_create_race(table: DeltaTable, load_id: str, creates: Creates) -> bool:
    """Whether this load's create of ``table`` landed after another writer's first commit:
    the load's first commit to the table (its create, if it set out to make one) is not
    version 0."""
    if not creates.recorded(table.name):
        return False
    first = min((version for version, tag in table.commit_tags() if tag == load_id), default=None)
    return first is not None and first > 0


def withdraw(table: DeltaTable, load_id: str) -> None:
    """Delete the rows of ``table`` that this load wrote, in one MERGE."""
    ours = table.spark.range(1).select(F.lit(load_id).alias(LOAD_ID))
    merge_sql.merge_into(
        table,
        ours,
        on=merge_sql.columns_match([LOAD_ID]),
        clauses=[merge_sql.when_matched_delete()],
        load_id=load_id,
    )
