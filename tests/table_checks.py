"""Assertions on whole tables, read back by both delta-rs and Spark.

delta-rs hands back aware UTC datetimes, Spark naive UTC ones; both are compared as naive
UTC, so expected cells are written as the documents print them.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Sequence
from typing import Any

from conftest import delta_rows, spark_rows

import sparkload as sl
from sparkload.common.system_columns import SYSTEM_COLUMNS

READERS = (delta_rows, spark_rows)
# Row bookkeeping; validity columns are data the examples show, so they stay.
ID_COLUMNS = frozenset(SYSTEM_COLUMNS)


def naive_utc(value: Any) -> Any:
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


def _order(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def table_rows(
    read: Callable[..., list[dict[str, Any]]], pipeline: sl.Pipeline, table: str
) -> list[dict[str, Any]]:
    """A table's rows without the id bookkeeping, timestamps as naive UTC, in a fixed order."""
    rows = [{k: naive_utc(v) for k, v in row.items() if k not in ID_COLUMNS} for row in read(pipeline, table)]
    return sorted(rows, key=_order)


def assert_table(pipeline: sl.Pipeline, table: str, expected: Sequence[dict[str, Any]]) -> None:
    """The table holds exactly ``expected`` (every column, every row), through both readers."""
    want = sorted((dict(r) for r in expected), key=_order)
    for read in READERS:
        assert table_rows(read, pipeline, table) == want, f"read by {read.__name__}"


def _tuple_order(values: tuple[Any, ...]) -> list[tuple[bool, Any]]:
    return [(True, 0) if v is None else (False, v) for v in values]


def project(pipeline: sl.Pipeline, table: str, *columns: str) -> list[tuple[Any, ...]]:
    """The given columns of every row (NULLs last), the same through both readers."""
    seen = []
    for read in READERS:
        rows = (tuple(naive_utc(r[c]) for c in columns) for r in read(pipeline, table))
        seen.append(sorted(rows, key=_tuple_order))
    assert seen[0] == seen[1], "delta-rs and Spark disagree"
    return seen[0]


def row_count(pipeline: sl.Pipeline, table: str) -> int:
    counts = {len(read(pipeline, table)) for read in READERS}
    assert len(counts) == 1, "delta-rs and Spark disagree"
    return counts.pop()
