"""Check a normalized table family against its resource's data-quality expectations.

Each expectation is a Spark SQL boolean condition over the root table's rows, typed as the
table takes them (``typed.typed_rows``). As in Databricks' pipelines a row breaks an
expectation when its condition is false; a NULL result is not a violation (write
``amount IS NOT NULL AND amount >= 0`` to refuse NULLs too).

All expectations of a table are counted in one aggregation. Then, before any commit:
- ``fail``: the load is refused with the expectation, its condition, the count and a few rows;
- ``drop``: the rows, and the rows nested under them, are left out (``row_drop.drop_rows``)
  and counted in ``NormalizedTable.dropped``; a row breaking several ``drop`` expectations
  counts under the first of them;
- ``warn``: the rows are loaded, counted in ``NormalizedTable.warned`` and logged (rows a
  ``drop`` expectation leaves out are not counted: they are not loaded).

The condition is the user's own SQL, trusted like a transform; no value from the data is
ever put into SQL text.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import operator
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.expectations import Expectation, reason
from sparkload.common.system_columns import ID
from sparkload.exceptions import ExpectationError
from sparkload.normalize.normalizer import NormalizedTable
from sparkload.normalize.row_drop import drop_rows
from sparkload.normalize.typed import typed_rows

logger = logging.getLogger(__name__)

# Violating rows shown in the error of a ``fail`` expectation.
SAMPLE_ROWS = 5
# How much of the engine's message a bad condition's error keeps (it can hold a plan).
_ENGINE_MESSAGE_CHARS = 400


@dataclasses.dataclass(frozen=True)
class _Checked:
    """An expectation with its condition resolved against the table's rows."""

    expectation: Expectation
    violates: Column

    @property
    def action(self) -> str:
        return self.expectation.on_violation or "warn"


def apply_expectations(
    spark: SparkSession,
    family: list[NormalizedTable],
    normalized_uri: str,
    expectations: Sequence[Expectation],
    resource: str,
) -> list[NormalizedTable]:
    """The family (root table first) after its root table's ``expectations``: unchanged when
    none is broken, rows left out for ``drop``, counts recorded for ``drop`` and ``warn``;
    an ``ExpectationError`` for a broken ``fail`` expectation or a condition that cannot be
    evaluated."""
    if not expectations or not family:
        return family
    root = family[0]
    rows = typed_rows(spark, f"{normalized_uri}/{root.rows_folder}", root)
    checked = [_check_condition(rows, expectation, root.name, resource) for expectation in expectations]
    counts = _violation_counts(rows, checked)
    for item, count in zip(checked, counts, strict=True):
        if item.action == "fail" and count:
            raise _failure(rows, root, resource, item, count)
    family = _drop(spark, family, normalized_uri, resource, checked, counts, rows)
    return _warn(family, resource, checked, counts)


def _check_condition(rows: DataFrame, expectation: Expectation, table: str, resource: str) -> _Checked:
    """The expectation's condition as a column, refused with a clear error when it does not
    parse, names a column the table lacks, or is not boolean (the engine analyses it here,
    before anything is counted or committed)."""
    try:
        condition = F.expr(expectation.condition)
        dtype = rows.select(condition.alias("condition")).schema["condition"].dataType
    except Exception as exc:
        raise _bad_condition(rows, expectation, table, resource, _engine_message(exc)) from exc
    if not isinstance(dtype, (T.BooleanType, T.NullType)):
        what = f"it gives {dtype.simpleString()}, not a boolean"
        raise _bad_condition(rows, expectation, table, resource, what)
    # A row violates when the condition is false; NULL passes, as in Databricks.
    return _Checked(expectation, condition.eqNullSafe(F.lit(False)))


def _bad_condition(
    rows: DataFrame, expectation: Expectation, table: str, resource: str, what: str
) -> ExpectationError:
    columns = ", ".join(name for name in rows.columns if not name.startswith("_sparkload_"))
    return ExpectationError(
        f"table '{table}' (resource '{resource}'): the condition of expectation "
        f"'{expectation.name}' ({expectation.condition}) cannot be evaluated: {what}. A condition "
        f"is a Spark SQL boolean expression over the table's columns, named as normalized: "
        f"{columns}. Nothing was loaded; fix the expectation, then drop the pending package "
        "(pipeline.drop_pending_packages()) and run again",
        table=table,
        resource=resource,
        expectation=expectation.name,
        condition=expectation.condition,
    )


def _engine_message(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= _ENGINE_MESSAGE_CHARS else text[:_ENGINE_MESSAGE_CHARS] + " …"


def _violation_counts(rows: DataFrame, checked: list[_Checked]) -> list[int]:
    """The violating rows of every expectation, in one aggregation over the table; for a
    ``warn`` expectation only those a ``drop`` expectation leaves in (the rows it lets
    through)."""
    dropping = [item.violates for item in checked if item.action == "drop"]
    dropped = functools.reduce(operator.or_, dropping) if dropping else None

    def counted(item: _Checked) -> Column:
        if item.action == "warn" and dropped is not None:
            return item.violates & ~dropped
        return item.violates

    aggregates = [F.count(F.when(counted(item), 1)).alias(f"e{i}") for i, item in enumerate(checked)]
    result = rows.agg(*aggregates).first()
    assert result is not None  # a global aggregation always yields one row
    return [int(value) for value in result]


def _failure(
    rows: DataFrame, root: NormalizedTable, resource: str, item: _Checked, count: int
) -> ExpectationError:
    expectation = item.expectation
    data_columns = [spec.name for spec in root.columns]
    sample = [
        row.asDict() for row in rows.where(item.violates).select(*data_columns).limit(SAMPLE_ROWS).collect()
    ]
    shown = "; ".join(repr(row) for row in sample)
    return ExpectationError(
        f"table '{root.name}' (resource '{resource}'): {count} row(s) break expectation "
        f"'{expectation.name}' ({expectation.condition}), whose on_violation is 'fail'; nothing "
        f"was loaded. The first of them: {shown}. The extracted package stays pending: "
        "pipeline.drop_pending_packages() discards it",
        table=root.name,
        resource=resource,
        expectation=expectation.name,
        condition=expectation.condition,
        failed_rows=count,
        sample=sample,
    )


def _drop(
    spark: SparkSession,
    family: list[NormalizedTable],
    normalized_uri: str,
    resource: str,
    checked: list[_Checked],
    counts: list[int],
    rows: DataFrame,
) -> list[NormalizedTable]:
    """Leave out the rows of each broken ``drop`` expectation, and the rows under them; a
    row is left out (and counted) by the first ``drop`` expectation it breaks."""
    earlier: list[Column] = []
    root = family[0].name
    for item, count in zip(checked, counts, strict=True):
        if item.action != "drop":
            continue
        attributed = item.violates
        if earlier:
            attributed = attributed & ~functools.reduce(operator.or_, earlier)
        earlier.append(item.violates)
        if not count:
            continue
        ids = rows.where(attributed).select(ID)
        family = drop_rows(spark, family, normalized_uri, {root: ids}, reason(item.expectation.name))
        logger.warning(
            "table '%s' (resource '%s'): %d row(s) break expectation '%s' (%s) and were dropped",
            root,
            resource,
            count,
            item.expectation.name,
            item.expectation.condition,
        )
    return family


def _warn(
    family: list[NormalizedTable], resource: str, checked: list[_Checked], counts: list[int]
) -> list[NormalizedTable]:
    root = family[0]
    warned: dict[str, int] = dict(root.warned)
    for item, count in zip(checked, counts, strict=True):
        if item.action != "warn" or not count:
            continue
        warned[reason(item.expectation.name)] = count
        logger.warning(
            "table '%s' (resource '%s'): %d row(s) break expectation '%s' (%s); they are loaded",
            root.name,
            resource,
            count,
            item.expectation.name,
            item.expectation.condition,
        )
    if warned == root.warned:
        return family
    return [dataclasses.replace(root, warned=warned), *family[1:]]
