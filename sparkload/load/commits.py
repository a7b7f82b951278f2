"""A table's commit, prepared (and checked) before any table of the load is committed.

A commit that ``follows`` another table's commits runs after them (a nested table after
its root table, whose rows it reads), and not at all if one of them fails. Its ``settle``
runs after it, and again when a resumed load finds the commit made: housekeeping of the
table that belongs with the commit but is not part of it (gathering a tombstone table's
files, ``keyed_merge``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sparkload.load.table import DeltaTable

# What a commit does to its table (an append, a MERGE, ...), given the table.
TableAction = Callable[[DeltaTable], None]


@dataclasses.dataclass
class TableCommit:
    table: str
    rows: int
    disposition: str
    action: TableAction
    follows: str | None = None
    settle: TableAction | None = None
