"""The range of a merge key over a load: which destination rows a merge can touch.

A merge rewrites the rows inside its key range (``range_rewrite``), or a MERGE names the
range in its ``ON`` clause, so the engine skips every file whose min/max statistics lie
outside it. The bounds are values the pipeline computes (the minimum and maximum of the key
over the load), written by ``common.literals``. A key column gets no bound when the load
holds a NULL in it (a NULL merge key matches NULLs, which no range holds), when its type is
not one whose collected value is exact on every client (timestamps come back in the
client's local time on classic PySpark), or when ``literals`` cannot write it; a key with
no bounded column has no range, and its merge runs as a MERGE over the whole table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.literals import UnrenderableLiteral, literal, renderable
from sparkload.common.sql import conjunction, qualified, quote

# Types whose minimum and maximum come back from the engine as exactly the stored value.
_BOUNDED_TYPES = (T.IntegralType, T.DecimalType, T.DateType, T.StringType)


@dataclasses.dataclass(frozen=True)
class KeyRange:
    """Each bounded key column with its lowest and highest value, as SQL literals."""

    bounds: tuple[tuple[str, str, str], ...]  # (column, low, high)

    def renamed(self, column: str) -> KeyRange:
        """This one-column range on ``column`` instead (the same values in another table)."""
        ((_, low, high),) = self.bounds
        return KeyRange(((column, low, high),))

    def sql(self, alias: str | None = None) -> str:
        """``c BETWEEN lo AND hi AND …``, the columns on the table ``alias`` if given."""
        return conjunction(
            f"{qualified(alias, c) if alias else quote(c)} BETWEEN {low} AND {high}"
            for c, low, high in self.bounds
        )


def key_range(
    df: DataFrame, columns: Sequence[str], known: Mapping[str, Sequence[Any]] | None = None
) -> KeyRange | None:
    """The range over ``df`` of the columns of ``columns`` that can be bounded, from one
    aggregation of ``df``; None when none can. ``known`` holds [lowest, highest] of
    columns whose range was observed where the rows were staged (``NormalizedTable.bounds``):
    those need no aggregation. An observed range may be wider than the rows' (rows left out
    since only narrow it), which bounds the same rows and at most reads a little more."""
    usable = [c for c in dict.fromkeys(columns) if _boundable(df.schema[c].dataType)]
    if not usable:
        return None
    types = {column: df.schema[column].dataType for column in usable}
    ranges = {c: (known[c][0], known[c][1]) for c in usable if known and _fits(known.get(c), types[c])}
    asked = [c for c in usable if c not in ranges]
    aggregates = []
    for index, column in enumerate(asked):
        value = F.col(quote(column))
        aggregates += [
            F.min(value).alias(f"lo{index}"),
            F.max(value).alias(f"hi{index}"),
            F.count(F.when(value.isNull(), 1)).alias(f"nulls{index}"),
        ]
    found = df.agg(*aggregates).collect()[0] if aggregates else None
    for index, column in enumerate(asked):
        assert found is not None
        if found[f"lo{index}"] is not None and not found[f"nulls{index}"]:
            ranges[column] = (found[f"lo{index}"], found[f"hi{index}"])
    bounds = []
    for column in usable:
        if column not in ranges:
            continue
        low, high = ranges[column]
        try:
            bounds.append((column, literal(low, types[column]), literal(high, types[column])))
        except UnrenderableLiteral:
            continue
    return KeyRange(tuple(bounds)) if bounds else None


def _fits(observed: Sequence[Any] | None, data_type: T.DataType) -> bool:
    """Whether the observed [lowest, highest] ``observed`` bounds a column of ``data_type``:
    ints for an int column, strings for a string column (their order is the column's)."""
    if observed is None or len(observed) != 2:
        return False
    if isinstance(data_type, T.IntegralType):
        return all(isinstance(v, int) and not isinstance(v, bool) for v in observed)
    if isinstance(data_type, T.StringType):
        return all(isinstance(v, str) for v in observed)
    return False


def _boundable(data_type: T.DataType) -> bool:
    return isinstance(data_type, _BOUNDED_TYPES) and renderable(data_type)
