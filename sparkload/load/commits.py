"""A table's commit, prepared (and checked) before any table of the load is committed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sparkload.load.table import DeltaTable


@dataclasses.dataclass
class TableCommit:
    table: str
    rows: int
    disposition: str
    action: Callable[[DeltaTable], None]
