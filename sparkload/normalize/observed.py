"""The profile's first pass taken while Apache Spark writes the staged rows.

A classic Apache Spark session can compute aggregates of the rows a query writes in the
same tasks that write them (``DataFrame.observe``); the driver holds them when the write
returns. The profile's first pass (the rows, the values of each column, which strings may
be of a typed kind, the bounds of integer columns) is such an aggregate, so on those
sessions it is taken from the staging write instead of a job that reads the written files
again: one job less per table and load (on a local JVM, a job costs tenths of a second
before it reads a row). The profile then reads it as it reads the summary Arrow keeps for
the flat tables it writes (normalize/flat_json.py). The same pass takes the smallest and
largest of the row id columns named (a root's ``_sparkload_id``, a nested table's
``_sparkload_root_id``): the load's merges bound their commits by those ranges
(load/key_bounds.py), which then need no query of their own.

Spark Connect sessions (Apache Spark's server, and the embedded engine, which speaks it)
keep the pass of its own: observed metrics of a write sent over Spark Connect are not
relied on (not tried there). Tables of ``SLICE_COLUMNS`` leaves or more keep it too, where
the profile asks slices of the columns apart (normalize/slices.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.engine_family import is_classic
from sparkload.common.sql import quote
from sparkload.normalize.infer import column_aggregates
from sparkload.normalize.slices import SLICE_COLUMNS
from sparkload.normalize.summary import ColumnSummary, Summary


def observing(
    frame: DataFrame, leaves: list[str], ids: Sequence[str] = ()
) -> tuple[DataFrame, Callable[[], Summary] | None]:
    """``frame`` with the first pass over its columns ``leaves`` (and the range of its row
    id columns ``ids``) observed where the session can, and what reads the summary once an
    action on it has run (None where it cannot)."""
    if not is_classic(frame.sparkSession) or not leaves or len(leaves) >= SLICE_COLUMNS:
        return frame, None
    types = {field.name: field.dataType for field in frame.schema.fields}
    aggregates = [F.count(F.lit(1)).alias("__rows")]
    for index, name in enumerate(leaves):
        column_aggregates(aggregates, index, name, types[name], fit_tests=None, bounded=None)
    for index, name in enumerate(ids):
        column = F.col(quote(name))
        aggregates += [
            F.count(column).alias(f"idn{index}"),
            F.min(column).alias(f"idmin{index}"),
            F.max(column).alias(f"idmax{index}"),
        ]
    observation = Observation()
    observed = frame.observe(observation, *aggregates)
    return observed, lambda: summary_of(observation.get, {name: types[name] for name in leaves}, ids)


def summary_of(
    stats: Mapping[str, Any], leaves: Mapping[str, T.DataType], ids: Sequence[str] = ()
) -> Summary:
    """The summary the first pass's statistics ``stats`` (as ``column_aggregates`` names
    them, for the columns ``leaves`` in that order, and ``observing`` for ``ids``) give."""
    summary = Summary(rows=int(stats["__rows"]))
    for index, name in enumerate(leaves):
        summary.columns[name] = ColumnSummary(
            values=int(stats[f"n{index}"]),
            maybe_typed=int(stats.get(f"t{index}") or 0),
            low=stats.get(f"min{index}"),
            high=stats.get(f"max{index}"),
        )
    for index, name in enumerate(ids):
        summary.columns[name] = ColumnSummary(
            values=int(stats[f"idn{index}"]), low=stats[f"idmin{index}"], high=stats[f"idmax{index}"]
        )
    return summary
