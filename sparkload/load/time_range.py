"""The time-range strategy (SQLMesh's INCREMENTAL_BY_TIME_RANGE): a batch replaces exactly
the rows whose time column falls inside its window.

The root table gets one ``replaceWhere`` overwrite, so loading a window again (a retry, a
restatement) gives the same table. Rows the resource yielded outside the window are
dropped first and counted (SQLMesh's guard against data leakage), together with their
nested rows; nested rows of the replaced root rows are replaced as in delete-insert.

No partitioning is added for the time column: each batch writes files holding only its
window's rows, so the files' min/max statistics already let the engine skip every file
outside the window a later ``replaceWhere`` touches.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.hints import LoadHints, TimeRangeSpec
from sparkload.common.literals import string_literal, timestamp_literal
from sparkload.common.sql import conjunction, qualified, quote
from sparkload.exceptions import LoadError
from sparkload.load import merge_sql
from sparkload.load.commits import TableCommit
from sparkload.load.merge_family import MergeFamily, replace_children
from sparkload.load.schema_check import align_to_table, check_types
from sparkload.load.table import DeltaTable


@dataclasses.dataclass(frozen=True)
class TimeRange(TimeRangeSpec):
    """The window a time-range merge replaces, with what the load needs of it in Spark."""

    @classmethod
    def from_hints(cls, hints: LoadHints) -> TimeRange:
        spec = hints.time_range
        if spec is None:
            raise LoadError(
                "the time-range strategy takes its window from the resource's intervals "
                "argument: declare one, e.g. window=sl.sources.intervals('ts', start=...)"
            )
        return cls(spec.column, spec.start, spec.end, spec.time_format)

    def _kind(self, table: str, data_type: T.DataType) -> str:
        if isinstance(data_type, T.TimestampType):
            return "timestamp"
        if isinstance(data_type, T.DateType):
            return "date"
        if isinstance(data_type, T.StringType) and self.time_format:
            return "text"
        raise LoadError(
            f"table '{table}': time column '{self.column}' holds {data_type.simpleString()}; "
            "intervals need a timestamp or date column, or text with time_column_format",
            table=table,
            column=self.column,
        )

    def contains(self, table: str, data_type: T.DataType) -> Column:
        """Rows inside the window (a NULL time is outside)."""
        column = F.col(quote(self.column))
        kind = self._kind(table, data_type)
        if kind == "text":
            low, from_low, high, to_high = self._text_bounds()
            above = column >= F.lit(low) if from_low == ">=" else column > F.lit(low)
            below = column < F.lit(high) if to_high == "<" else column <= F.lit(high)
            return above & below
        if kind == "date":
            column = column.cast("timestamp")
        return (column >= F.lit(self.start)) & (column < F.lit(self.end))

    def predicate(self, table: str, data_type: T.DataType, alias: str | None = None) -> str:
        """The same test as SQL text, for ``replaceWhere`` (or a MERGE, on the table ``alias``)."""
        column = qualified(alias, self.column) if alias else quote(self.column)
        kind = self._kind(table, data_type)
        if kind == "text":
            low, from_low, high, to_high = self._text_bounds()
            low, high = string_literal(low), string_literal(high)
        else:
            from_low, to_high = ">=", "<"
            if kind == "date":
                column = f"CAST({column} AS TIMESTAMP)"
            low, high = timestamp_literal(self.start), timestamp_literal(self.end)
        return conjunction([f"{column} {from_low} {low}", f"{column} {to_high} {high}"])

    def _text_bounds(self) -> tuple[str, str, str, str]:
        """The window's bounds as text and how each compares. A bound the format cuts
        short (a partial window ending at 12:00 in a '%Y-%m-%d' column) stands for the
        earlier time it was cut to: text equal to a cut end is inside the window, text
        equal to a cut start is not."""
        assert self.time_format is not None
        low, high = self.start.strftime(self.time_format), self.end.strftime(self.time_format)
        return (
            low,
            ">=" if self._exact(low, self.start) else ">",
            high,
            "<" if self._exact(high, self.end) else "<=",
        )

    def _exact(self, text: str, moment: datetime.datetime) -> bool:
        assert self.time_format is not None
        try:
            parsed = datetime.datetime.strptime(text, self.time_format)
        except ValueError:
            return True
        return parsed == moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def replace_window(
    table: DeltaTable, df: DataFrame, window: TimeRange, data_type: T.DataType, load_id: str
) -> None:
    """One commit that replaces the rows inside ``window`` by ``df``.

    A ``replaceWhere`` overwrite, which skips the files outside the window; but the
    engine's replaceWhere cannot add columns, so a load bringing new ones (additive, so it
    must proceed) deletes the window's rows and inserts its own in one MERGE with schema
    evolution instead. The MERGE serves too where a table's writes do not honour
    replaceWhere (``DeltaTable.replace_where``).
    """
    destination = table.schema()
    check_types(df, destination, table.name)
    df = align_to_table(df, destination)
    if destination is None:
        table.write(df, "overwrite", load_id)
        return
    if table.replace_where and set(df.columns) <= set(destination.fieldNames()):
        predicate = window.predicate(table.name, data_type)
        table.write(df, "overwrite", load_id, replaceWhere=predicate)
        return
    merge_sql.merge_into(
        table,
        df,
        on="FALSE",  # no source row matches a target row: every one is inserted
        clauses=[
            merge_sql.when_not_matched_insert_all(),
            merge_sql.when_not_matched_by_source_delete(
                window.predicate(table.name, data_type, merge_sql.TARGET)
            ),
        ],
        load_id=load_id,
    )


@dataclasses.dataclass
class Prepared:
    commits: list[TableCommit]
    # Rows yielded outside the window and dropped.
    outside: int


def prepare(family: MergeFamily, time_range: TimeRange) -> Prepared:
    family.check_children_have_root_key()
    root = family.table(family.root)
    rows = family.frames.get(family.root)
    destination = root.schema()
    schema = rows.schema if rows is not None else destination
    if schema is None:
        return Prepared([], 0)  # no table and no rows: nothing to replace
    if time_range.column not in schema.fieldNames():
        raise LoadError(
            f"table '{family.root}': the time column '{time_range.column}' is missing",
            table=family.root,
            column=time_range.column,
        )
    data_type = schema[time_range.column].dataType
    inside = time_range.contains(family.root, data_type)
    outside = 0
    if rows is not None:
        outside = rows.where(~F.coalesce(inside, F.lit(False))).count()
        if outside:
            rows = rows.where(inside)
    if rows is None:
        rows = root.read().limit(0)
    kept = rows.count() if outside else family.rows.get(family.root, 0)
    if destination is not None:
        check_types(rows, destination, family.root)
    action = functools.partial(
        replace_window, df=rows, window=time_range, data_type=data_type, load_id=family.load_id
    )
    if destination is None:  # not there yet (or refreshed)
        written = rows  # (a name bound once: mypy cannot narrow ``rows`` inside the lambda)
        commit = family.create(family.root, kept, lambda: written, action)
    else:
        commit = family.commit(family.root, kept, action)
    return Prepared([commit, *replace_children(family)], outside)
