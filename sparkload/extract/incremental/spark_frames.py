"""The incremental filter for Spark DataFrame items: the range as a Spark ``where``.

The DataFrame stays lazy: the range test is a filter the engine applies when it writes the
item, the out-of-range flags and the new last value are one aggregate, and only the rows
exactly on the start (to drop those the previous run loaded) or on the new last value (to
remember them for the next run) come to this process, as with Arrow items.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparkload.common.sql import quote
from sparkload.exceptions import IncrementalCursorError
from sparkload.extract.incremental.transform import IncrementalTransform, comparable

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class SparkIncremental(IncrementalTransform):
    """Filters Spark DataFrames (Spark Connect's and classic) with Spark expressions."""

    def __call__(self, item: Any) -> Any:
        # A Spark DataFrame item means PySpark is loaded: imported here, a pipeline whose
        # items are not Spark's never imports it for its cursors.
        from pyspark.sql import functions as F

        name = self.cursor_path
        func = self.last_value_func
        resource = self.resource_name
        if func not in (max, min):
            raise IncrementalCursorError(
                resource, name, "Spark DataFrame items need last_value_func max or min"
            )
        if name not in item.columns:
            if self.on_cursor_value_missing == "raise":
                raise IncrementalCursorError(resource, name, f"the items have no cursor column '{name}'")
            return item if self.on_cursor_value_missing == "include" else None
        cursor = F.col(quote(name))
        dtype = item.schema[name].dataType
        sample, missing = item.agg(F.min(cursor), F.count(F.when(cursor.isNull(), F.lit(1)))).first()
        if self.on_cursor_value_missing == "raise" and missing:
            raise IncrementalCursorError(
                resource, name, f"{missing} row(s) have no value in cursor column '{name}'"
            )
        if sample is None:
            return item if self.on_cursor_value_missing == "include" else None

        def bound(value: object) -> Column:
            try:
                return F.lit(comparable(value, sample)).cast(dtype)
            except (TypeError, ValueError) as exc:
                raise IncrementalCursorError(
                    resource,
                    name,
                    f"{value!r} cannot be compared with cursor column '{name}' ({dtype.simpleString()})",
                    value=value,
                ) from exc

        # ``ahead``/``behind`` order values the way last_value_func does (min reverses them).
        def ahead(a: Column, b: Column) -> Column:
            return a > b if func is max else a < b

        def behind(a: Column, b: Column) -> Column:
            return a < b if func is max else a > b

        keep = cursor.isNotNull()
        past_end: Column = F.lit(False)
        before: Column = F.lit(False)
        if self.end_value is not None:
            end = bound(self.end_value)
            past_end = (
                (ahead(cursor, end) | (cursor == end)) if self.range_end == "open" else ahead(cursor, end)
            )
            keep = keep & ~F.coalesce(past_end, F.lit(False))
        start = bound(self.start_value) if self.start_value is not None else None
        if start is not None:
            before = behind(cursor, start)
            if self.range_start == "open":
                before = before | (cursor == start)
            keep = keep & ~F.coalesce(before, F.lit(False))
        if self.on_cursor_value_missing == "include":
            keep = keep | cursor.isNull()
        newest = F.max(F.when(keep, cursor)) if func is max else F.min(F.when(keep, cursor))
        on_start = keep & (cursor == start) if start is not None else F.lit(False)
        flags = item.agg(
            F.max(F.coalesce(past_end, F.lit(False)).cast("int")),
            F.max(F.coalesce(before, F.lit(False)).cast("int")),
            F.count(F.when(keep, F.lit(1))),
            F.count(F.when(on_start, F.lit(1))),
            newest,
        ).first()
        any_past_end, any_before, kept_rows, start_rows, newest_value = flags
        self.end_out_of_range = self.end_out_of_range or bool(any_past_end)
        self.start_out_of_range = self.start_out_of_range or bool(any_before)
        kept = item.where(keep)
        if self.dedup_key != () and self.start_hashes and start_rows:
            kept, dropped = self._without_rows_seen_before(item, kept, on_start)
            kept_rows -= dropped
        self._advance(kept, cursor, newest_value, bound)
        return kept if kept_rows else None

    def _without_rows_seen_before(
        self, item: DataFrame, kept: DataFrame, on_start: Column
    ) -> tuple[DataFrame, int]:
        """``kept`` without the rows on the start whose hash the previous run stored; the
        rows on the start (a boundary, usually a handful) are looked at one by one."""
        boundary = item.where(on_start).collect()
        fresh = [row for row in boundary if self.hash(row.asDict(recursive=True)) not in self.start_hashes]
        rest = kept.where(~on_start)
        if fresh:
            rest = rest.unionByName(item.sparkSession.createDataFrame(fresh, item.schema))
        return rest, len(boundary) - len(fresh)

    def _advance(
        self, kept: DataFrame, cursor: Column, newest: object, bound: Callable[[object], Column]
    ) -> None:
        """Move last_value to the newest kept cursor value; remember the rows sitting on it."""
        from pyspark.sql import functions as F

        if newest is None:
            return
        func = self.last_value_func
        last = self.last_value
        if last is not None:
            last = comparable(last, newest)
        if last is None or func((newest, last)) != last:
            self.last_value = newest
            self.rows_at_last = []
        elif last != newest:
            return
        if self.dedup_key != ():
            on_last = kept.where(cursor == bound(newest))
            keys = list(self.dedup_key or ())
            if keys and all(key in kept.columns for key in keys):
                on_last = on_last.select(*[F.col(quote(key)) for key in keys])
            self.rows_at_last += [row.asDict(recursive=True) for row in on_last.collect()]
