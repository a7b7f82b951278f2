"""A staged Parquet table read a slice of its columns at a time.

The engine (Sail 0.7.2) takes time to plan a query that grows faster than the width of the
table it reads: one aggregate per column over 4,000 columns took 21.5 s in one query and
7.4 s as four queries of 1,000 columns each reading only its own columns. A statement whose
result per column does not depend on the other columns (a column's counts, its kinds) is
therefore asked of slices of the columns, each slice read from the files with a schema of
its columns only, so that no query sees the whole width.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Sequence
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkload.normalize.summary import Summary

# Columns per query: narrow enough that a query's planning stays cheap per column, wide
# enough that the few tenths of a second each query costs (a count over 1,000 columns took
# 0.15 s) add up to little. See docs/performance.md, C1.
SLICE_COLUMNS = 500

_Item = TypeVar("_Item")


@dataclasses.dataclass(frozen=True)
class StagedTable:
    """The Parquet folder ``uri`` that normalize wrote, whose schema is ``schema``."""

    spark: SparkSession
    uri: str
    schema: T.StructType
    # The rows' counts and bounds per column, where this process wrote them (a flat table,
    # see normalize/flat_json.py): the profile's first pass then asks the engine nothing.
    summary: Summary | None = None

    def read(self, names: Collection[str]) -> DataFrame:
        """The rows of the columns ``names`` only (the first column when there are none, so
        that rows can still be counted)."""
        wanted = set(names)
        fields = [field for field in self.schema.fields if field.name in wanted] or self.schema.fields[:1]
        return self.spark.read.schema(T.StructType(fields)).parquet(self.uri)


def slices(items: Sequence[_Item], size: int = SLICE_COLUMNS) -> Iterator[Sequence[_Item]]:
    """``items`` (columns) in consecutive slices of at most ``size``; one empty slice for none."""
    if not items:
        yield items
    for start in range(0, len(items), size):
        yield items[start : start + size]
