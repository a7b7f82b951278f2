"""dlt's schema contracts, applied to a normalized table family before it is loaded.

A contract sets, for each entity a load may add to the destination's schema, what happens
when the load would add one (the mode):

- ``tables``: a table that does not exist yet (a root table, or a nested table of an
  existing one); every table of a first load is new, so ``freeze`` refuses a first load;
- ``columns``: a column an existing table does not have. A new table takes the columns of
  its first load whatever the mode (dlt "evolves columns once");
- ``data_type``: a variant column (``<col>__v_<type>``) the table does not have: values whose
  type differs from their column's. This applies to new tables too.

``evolve`` adds it; ``freeze`` refuses the load, before any commit, naming the table, the
column and one value; ``discard_row`` leaves out the rows that hold a value there (with the
rows nested under them); ``discard_value`` leaves out the values and loads the rest of the
row. A discarded table goes whole (its nested tables too), its parent rows stay.

Everything is decided on the normalized family: the column specs say which columns each table
would get, the destination's schema which it has; the values are tested in Spark.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.hints import DATA_TYPES, LoadHints
from sparkload.common.sql import quote
from sparkload.common.system_columns import ID
from sparkload.exceptions import DataValidationError
from sparkload.normalize.infer import ColumnSpec
from sparkload.normalize.normalizer import NormalizedTable
from sparkload.normalize.row_drop import drop_rows
from sparkload.normalize.typed import typed_rows
from sparkload.normalize.types import data_type_of_spark

logger = logging.getLogger(__name__)

REASON = "schema contract"
_VARIANT = re.compile(r"^(.+)__v_([a-z]+)$")


@dataclasses.dataclass(frozen=True)
class SchemaChange:
    """One thing the load would add to the schema: a table (``column`` None), a column with
    its variant columns (``specs``), or a variant column."""

    table: str
    entity: str
    column: str | None = None
    specs: tuple[ColumnSpec, ...] = ()

    def describe(self) -> str:
        if self.entity == "tables":
            return f"new table '{self.table}'"
        kind = "column" if self.entity == "columns" else "variant column"
        return f"new {kind} '{self.column}' of '{self.table}'"


def apply_schema_contract(
    spark: SparkSession,
    family: list[NormalizedTable],
    normalized_uri: str,
    contract: Mapping[str, str] | None,
    existing: Callable[[str], T.StructType | None],
) -> list[NormalizedTable]:
    """The family as ``contract`` lets it load; ``existing(table)`` is the destination
    table's schema (None: no such table). Raises DataValidationError for a change whose
    mode is ``freeze``."""
    if contract is None or all(mode == "evolve" for mode in contract.values()):
        return family
    governed = [
        (change, contract[change.entity])
        for change in schema_changes(family, existing)
        if contract[change.entity] != "evolve"
    ]
    for change, mode in governed:
        if mode == "freeze":
            _refuse(spark, family, normalized_uri, change)
    family = _discard_tables(family, [change for change, _ in governed if change.entity == "tables"])
    kept = {table.name for table in family}
    by_mode: dict[str, list[SchemaChange]] = {"discard_row": [], "discard_value": []}
    for change, mode in governed:
        if change.entity != "tables" and change.table in kept:
            by_mode[mode].append(change)
    family = _discard_rows(spark, family, normalized_uri, by_mode["discard_row"])
    family = _discard_values(spark, family, normalized_uri, by_mode["discard_value"])
    return family


def schema_changes(
    family: list[NormalizedTable], existing: Callable[[str], T.StructType | None]
) -> list[SchemaChange]:
    """What loading ``family`` would add to the destination's schema, table by table."""
    changes: list[SchemaChange] = []
    for table in family:
        schema = existing(table.name)
        if schema is None:
            changes.append(SchemaChange(table.name, "tables"))
            # A new table's columns evolve; only its variant columns fall under data_type.
            changes += [
                SchemaChange(table.name, "data_type", spec.name, (spec,))
                for spec in table.columns
                if _variant_base(spec) is not None
            ]
            continue
        have = set(schema.fieldNames())
        new_columns: dict[str, list[ColumnSpec]] = {}
        for spec in table.columns:
            if spec.name in have:
                continue
            base = _variant_base(spec) or spec.name
            if base not in have:
                # A new column takes its variant columns with it: a value it may not hold
                # is no type change of a column the table has.
                new_columns.setdefault(base, []).append(spec)
            else:
                changes.append(SchemaChange(table.name, "data_type", spec.name, (spec,)))
        changes += [
            SchemaChange(table.name, "columns", name, tuple(specs)) for name, specs in new_columns.items()
        ]
    return changes


# The column properties whose change is a change of type (dlt's TColumnType).
TYPE_PROPERTIES = ("data_type", "nullable", "precision", "scale", "timezone")


def apply_contract_to_hints(
    table: str,
    hints: LoadHints,
    schema: T.StructType | None,
    recorded: Mapping[str, Mapping[str, object]],
) -> LoadHints:
    """The hints a load of ``table`` normalizes with under its contract's ``data_type`` mode,
    decided before normalizing, as dlt does: a column hint that changes a type property of a
    column the table has (its data type, nullable, precision, scale or timezone) is refused
    under ``freeze`` (DataValidationError), left out under ``discard_row`` and
    ``discard_value`` (the column keeps its type; no row or value is dropped for it) and
    taken under ``evolve``. ``recorded``: the column hints the table was last loaded with;
    the column as it is is those, else what its Delta type says."""
    mode = (hints.schema_contract or {}).get("data_type", "evolve")
    if mode == "evolve" or schema is None or not hints.columns:
        return hints
    fields = {field.name: field for field in schema.fields}
    columns = {name: dict(column) for name, column in hints.columns.items()}
    for name, column in columns.items():
        if name not in fields:
            continue
        before = {**_type_properties(fields[name].dataType), **recorded.get(name, {})}
        changed = [p for p in TYPE_PROPERTIES if p in column and column[p] != before.get(p)]
        if not changed:
            continue
        if mode == "freeze":
            raise DataValidationError(
                table=table,
                column=name,
                schema_entity="data_type",
                value={p: column[p] for p in changed},
                retyped=", ".join(f"{p} {before.get(p)!r}" for p in changed),
            )
        logger.warning(
            "table '%s': the hint of column '%s' changes its type (%s): left out under "
            "schema_contract data_type=%s",
            table,
            name,
            ", ".join(changed),
            mode,
        )
        for prop in changed:
            del column[prop]
    return dataclasses.replace(hints, columns=columns)


def _type_properties(dtype: T.DataType) -> dict[str, object]:
    """The type properties a Delta column's type shows (nullable: every column sparkload
    makes is nullable in Delta; a NOT NULL hint is recorded, not stored)."""
    properties: dict[str, object] = {"nullable": True}
    try:
        properties["data_type"] = data_type_of_spark(dtype)
    except ValueError:
        properties["data_type"] = None
    if isinstance(dtype, T.DecimalType):
        properties.update(precision=dtype.precision, scale=dtype.scale)
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        properties["timezone"] = isinstance(dtype, T.TimestampType)
    return properties


def _variant_base(spec: ColumnSpec) -> str | None:
    """The column whose values of another type ``spec``'s column holds, if it is a variant
    column (``<col>__v_<type>``, dlt's names), else None. Told by the name: normalize may
    stage a variant's values under the variant's own name."""
    match = _VARIANT.match(spec.name)
    return match.group(1) if match and match.group(2) in DATA_TYPES else None


def _rows(spark: SparkSession, normalized_uri: str, table: NormalizedTable) -> DataFrame:
    return typed_rows(spark, f"{normalized_uri}/{table.rows_folder}", table)


def _holds_value(specs: tuple[ColumnSpec, ...] | list[ColumnSpec]) -> Column:
    """True for a row holding a value in any of ``specs``' columns (NULL is no value)."""
    condition = F.lit(False)
    for spec in specs:
        condition = condition | F.col(quote(spec.name)).isNotNull()
    return condition


def _refuse(
    spark: SparkSession, family: list[NormalizedTable], normalized_uri: str, change: SchemaChange
) -> None:
    table = next(t for t in family if t.name == change.table)
    rows = _rows(spark, normalized_uri, table)
    if change.entity == "tables":
        first = rows.select(*[quote(spec.name) for spec in table.columns]).first()
        value = None if first is None else {k: v for k, v in first.asDict().items() if v is not None}
    else:
        names = [quote(spec.name) for spec in change.specs]
        first = rows.where(_holds_value(change.specs)).select(*names).first()
        # a column declared by a hint alone holds no value
        value = None if first is None else next((v for v in first if v is not None), None)
    raise DataValidationError(
        table=change.table, column=change.column, schema_entity=change.entity, value=value
    )


def _discard_tables(family: list[NormalizedTable], changes: list[SchemaChange]) -> list[NormalizedTable]:
    """``family`` without the new tables ``changes`` name and the tables nested in them; the
    rows of a discarded nested table are counted on the nearest table that stays."""
    gone = {change.table for change in changes}
    kept: list[NormalizedTable] = []
    lost: dict[str, int] = {}
    parents = {table.name: table.parent for table in family}
    for table in family:  # parents before children
        if table.name in gone or table.parent in gone:
            gone.add(table.name)
            lost[table.name] = table.rows
        else:
            kept.append(table)
    if not lost:
        return family
    for name, rows in lost.items():
        logger.warning("table '%s': %d rows discarded: %s (%s)", name, rows, REASON, f"new table '{name}'")
    counted = []
    for table in kept:
        counts = dict(table.dropped)
        for name, rows in lost.items():
            if rows and parents[name] == table.name:
                reason = f"{REASON}: rows of new table '{name}'"
                counts[reason] = counts.get(reason, 0) + rows + _rows_below(name, lost, parents)
        counted.append(dataclasses.replace(table, dropped=counts) if counts != table.dropped else table)
    return counted


def _rows_below(name: str, lost: Mapping[str, int], parents: Mapping[str, str | None]) -> int:
    """The rows of the discarded tables nested (at any depth) under ``name``."""
    children = [child for child, parent in parents.items() if parent == name and child in lost]
    return sum(lost[child] + _rows_below(child, lost, parents) for child in children)


def _without_specs(table: NormalizedTable, changes: list[SchemaChange]) -> NormalizedTable:
    """``table`` without the columns ``changes`` add: nothing of them lands."""
    names = {spec.name for change in changes if change.table == table.name for spec in change.specs}
    if not names:
        return table
    return dataclasses.replace(table, columns=[spec for spec in table.columns if spec.name not in names])


def _discard_rows(
    spark: SparkSession, family: list[NormalizedTable], normalized_uri: str, changes: list[SchemaChange]
) -> list[NormalizedTable]:
    """Leave out the rows holding a value in a column ``changes`` add (and the rows nested
    under them), one table at a time so each count says which column it is for."""
    tables = list(dict.fromkeys(change.table for change in changes))
    for name in tables:
        own = [change for change in changes if change.table == name]
        table = next(t for t in family if t.name == name)
        specs = [spec for change in own for spec in change.specs]
        ids = _rows(spark, normalized_uri, table).where(_holds_value(specs)).select(ID)
        reason = f"{REASON}: " + ", ".join(change.describe() for change in own)
        family = drop_rows(spark, family, normalized_uri, {name: ids}, reason)
    return [_without_specs(table, changes) for table in family]


def _discard_values(
    spark: SparkSession, family: list[NormalizedTable], normalized_uri: str, changes: list[SchemaChange]
) -> list[NormalizedTable]:
    """Leave out the columns ``changes`` add, so their values are not loaded; the rows that
    held one are loaded without it and counted (``NormalizedTable.warned``)."""
    result = []
    for table in family:
        own = [change for change in changes if change.table == table.name]
        if not own:
            result.append(table)
            continue
        counts_of = [F.sum(F.when(_holds_value(change.specs), 1).otherwise(0)) for change in own]
        counted = _rows(spark, normalized_uri, table).agg(*counts_of).first()
        warned = dict(table.warned)
        for change, rows in zip(own, counted or (), strict=True):
            if rows:
                reason = f"{REASON}: values discarded from {change.describe()}"
                warned[reason] = warned.get(reason, 0) + int(rows)
        result.append(dataclasses.replace(_without_specs(table, own), warned=warned))
    return result
