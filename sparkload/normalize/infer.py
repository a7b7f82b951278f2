"""Decide each column's type from the staged data, in one Spark aggregation per slice of columns.

The type of a column is, in order: the destination's (an existing Delta column never
changes type), the ``data_type`` hint, or the type that holds most of the load's values
without changing any. Values of other kinds go to variant columns ``<col>__v_<type>``, and
so do the values a column narrower than their kind cannot hold exactly (an int or float
column made by another writer: ``n__v_bigint``, ``n__v_double``); Delta cannot widen a
column in place, and the engine would cast them without a word.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.json_types import JSONValue
from sparkload.common.naming import variant_column_name
from sparkload.common.sql import quote
from sparkload.common.tags import TAG_DECIMAL
from sparkload.exceptions import NormalizeError, SchemaConflictError
from sparkload.normalize.slices import StagedTable, slices
from sparkload.normalize.summary import MAYBE_TYPED, Summary
from sparkload.normalize.types import (
    KIND_TYPE,
    STRING_KINDS,
    TYPE_PREFERENCE,
    Coercion,
    absorbs,
    coercion,
    converter,
    data_type_of_spark,
    decimal_fits,
    fit_test,
    json_text,
    kind_condition,
    kind_of_spark_type,
    spark_type,
    tag_payload,
)


@dataclasses.dataclass
class ColumnSpec:
    """How one destination column is read from the staged parquet of a table."""

    name: str
    source: str
    target: str  # Spark type as JSON
    kinds: list[str]
    string_source: bool
    # True when every value of the source column is of ``kinds``: no per-row test needed.
    exclusive: bool = False
    # A column narrower than its values' kind (see types.fit_test) keeps the values it holds
    # exactly and its variant column takes the rest: ``narrow`` is that column's Spark type
    # (JSON), ``fitting`` whether this spec takes the values that fit it or the others.
    # With ``coerce`` set, the test is instead whether a value of a kind in ``coerced``
    # converts into the column (types.coercion): ``coerce`` is the column's data type and
    # ``narrow`` its Spark type, and a variant column (``fitting`` False) takes the others.
    narrow: str | None = None
    fitting: bool = True
    coerce: str | None = None
    coerced: list[str] = dataclasses.field(default_factory=list)
    # Further sources of the column, coalesced after this one: the staged variant columns
    # of the same key whose values convert into it (ColumnSpec dicts).
    parts: list[dict[str, JSONValue]] = dataclasses.field(default_factory=list)
    # A ``json`` column: the nested source's Spark type (JSON), written as JSON text.
    json_source: str | None = None
    # The staged column already holds every value as the column takes it (its type, no
    # tag to take off): it is read as it is. A wide table's write then costs no expression
    # per such column, and the engine's analysis of a query grows with its expressions.
    plain: bool = False

    def to_dict(self) -> dict[str, JSONValue]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ColumnSpec:
        return cls(**data)

    @property
    def spark_type(self) -> T.DataType:
        return T._parse_datatype_json_string(self.target)

    def expression(self) -> Column:
        """The typed column; deterministic, so re-running a load gives the same values."""
        if self.plain:
            column = F.col(quote(self.source))
            return column if self.source == self.name else column.alias(self.name)
        target = self.spark_type
        values = [
            v for v in [self.value(), *(ColumnSpec.from_dict(p).value() for p in self.parts)] if v is not None
        ]
        if not values:
            column = F.lit(None).cast(target)
        else:
            # A staged row holds a key's value in one of these sources only.
            column = values[0] if len(values) == 1 else F.coalesce(*values)
        return column.alias(self.name)

    def value(self) -> Column | None:
        """This spec's own source typed, NULL where its value belongs elsewhere; None when
        it has no source."""
        if self.kinds == ["null"] or not self.kinds:
            return None
        target = self.spark_type
        source = F.col(quote(self.source))
        if self.narrow is not None and self.coerce is None:
            test = fit_test(self.kinds[0], T._parse_datatype_json_string(self.narrow))
            assert test is not None and not self.string_source and len(self.kinds) == 1
            fits = test(source) if self.fitting else ~test(source)
            return F.when(fits, converter(self.kinds[0], target)(source))
        branches = [self._branch(kind, source, target) for kind in self.kinds]
        if len(branches) == 1 and branches[0][0] is None:
            return branches[0][1]
        expr: Column | None = None
        for condition, value in branches:
            when = F.lit(True) if condition is None else condition
            expr = F.when(when, value) if expr is None else expr.when(when, value)
        return expr

    def _branch(self, kind: str, source: Column, target: T.DataType) -> tuple[Column | None, Column]:
        """The condition under which a value is of ``kind`` and belongs here, and its value."""
        conditions: list[Column] = []
        if self.string_source and not (self.exclusive and len(self.kinds) == 1):
            conditions.append(kind_condition(kind, source))
        rule = None
        if self.coerce is not None and self.narrow is not None and kind in self.coerced:
            rule = coercion(kind, self.coerce, T._parse_datatype_json_string(self.narrow))
        if rule is not None and self.fitting:
            conditions.append(rule.test(source))
            value = rule.convert(source)
        else:
            if rule is not None:
                conditions.append(~rule.test(source))  # the value converts: the column took it
            value = self._converter(kind, target)(source)
        condition = None
        for each in conditions:
            condition = each if condition is None else condition & each
        return condition, value

    def _converter(self, kind: str, target: T.DataType) -> Callable[[Column], Column]:
        if kind == "json" and self.json_source is not None:
            return json_text(T._parse_datatype_json_string(self.json_source))
        return converter(kind, target)


def _decimal_scale(column: Column) -> Column:
    fraction = F.regexp_extract(tag_payload(column), r"\.([0-9]*)$", 1)
    return F.when(column.startswith(TAG_DECIMAL), F.length(fraction))


def _decimal_digits(column: Column) -> Column:
    # The integer digits without their leading zeros, in one regexp_extract: Sail 0.7.2
    # local-cluster cannot ship regexp_replace (nor substr) into a Delta write's stage.
    integer = F.regexp_extract(tag_payload(column), r"^-?0*([0-9]*)", 1)
    return F.when(column.startswith(TAG_DECIMAL), F.length(integer))


def profile(
    staged: StagedTable,
    leaves: Mapping[str, T.DataType],
    fit_tests: Mapping[str, Callable[[Column], Column]] | None = None,
    bounded: Collection[str] | None = None,
) -> dict[str, Any]:
    """Counts per column and kind, computed by Spark in one pass and a
    second over the string columns that may hold values of other kinds than text; for a
    column with a test in ``fit_tests``, also how many of its values fail it; for the int
    columns in ``bounded`` (all when None), their smallest and largest value.

    The engine's cost of analysing a query grows with its expressions times the table's
    width, so the first pass asks each string column one cheap question (does any value
    begin as a typed one could?) instead of one test per kind: a wide load's text columns
    then cost two expressions each. Each pass is asked of slices of the columns (see
    normalize/slices.py); the first slice also counts the rows.
    """
    names = list(leaves)
    stats: dict[str, Any] = {}
    strings: list[int] = []
    start = 0
    # Where this process holds the rows' summary, the first pass is read from it (fit tests
    # are the engine's to count; distinct keys are counted apart, see ``_distinct_keys``).
    summarized = staged.summary is not None and not fit_tests
    if staged.summary is not None and summarized:
        strings = _summarized(stats, staged.summary, leaves, bounded)
    for part in () if summarized else slices(names):
        aggs: list[Column] = []
        read = list(part)
        if start == 0:
            aggs.append(F.count(F.lit(1)).alias("__rows"))
        for index, name in enumerate(part, start):
            strings += column_aggregates(aggs, index, name, leaves[name], fit_tests, bounded)
        start += len(part)
        stats.update(staged.read(read).agg(*aggs).collect()[0].asDict())
    second: list[int] = []
    for index in strings:
        if stats.pop(f"t{index}"):
            second.append(index)
        else:
            stats[f"u{index}"] = True  # read as it is: no value carries a tag
            stats.update({f"k{index}_{kind}": 0 for kind in STRING_KINDS if kind != "text"})
    for indexes in slices(second):
        if indexes:
            stats.update(_string_kinds(staged, {index: names[index] for index in indexes}))
    return stats


def _summarized(
    stats: dict[str, Any],
    summary: Summary,
    leaves: Mapping[str, T.DataType],
    bounded: Collection[str] | None,
) -> list[int]:
    """The first pass's statistics, as ``column_aggregates`` names them, from the Arrow
    ``summary`` of the rows; returns the string columns' indexes."""
    stats["__rows"] = summary.rows
    strings = []
    for index, (name, dtype) in enumerate(leaves.items()):
        column = summary.columns[name]
        stats[f"n{index}"] = column.values
        if isinstance(dtype, T.StringType):
            stats[f"t{index}"] = column.maybe_typed
            strings.append(index)
        elif kind_of_spark_type(dtype) == "bigint" and (bounded is None or name in bounded):
            stats[f"max{index}"], stats[f"min{index}"] = column.high, column.low
    return strings


def column_aggregates(
    aggs: list[Column],
    index: int,
    name: str,
    dtype: T.DataType,
    fit_tests: Mapping[str, Callable[[Column], Column]] | None,
    bounded: Collection[str] | None,
) -> list[int]:
    """Add the profile's aggregates of column ``name`` (number ``index``) to ``aggs``;
    ``[index]`` when it is a string column whose kinds the first pass tests, else ``[]``."""
    column = F.col(quote(name))
    aggs.append(F.count(column).alias(f"n{index}"))
    string = isinstance(dtype, T.StringType)
    if string:
        aggs.append(_count_where(column.rlike(MAYBE_TYPED)).alias(f"t{index}"))
    elif kind_of_spark_type(dtype) == "bigint" and (bounded is None or name in bounded):
        # Integer digits decide whether the ints fit a declared decimal exactly.
        aggs.append(F.max(column).alias(f"max{index}"))
        aggs.append(F.min(column).alias(f"min{index}"))
    if fit_tests and name in fit_tests:
        misfit = F.when(~fit_tests[name](column), 1).otherwise(0)  # NULL fails no test
        aggs.append(F.sum(misfit).alias(f"misfit{index}"))
    return [index] if string else []


def _string_kinds(staged: StagedTable, columns: Mapping[int, str]) -> dict[str, Any]:
    """Values per kind of the string ``columns`` (by their profile index), and their tagged
    decimals' largest scale and integer digits.

    The columns are turned into (column, value) rows, so each kind test is one expression
    whatever the number of columns (one aggregate per column and kind made the engine's
    analysis grow with their product)."""
    value = F.col("value")
    kind: Column | None = None
    for each in STRING_KINDS:
        if each != "text":  # whatever is left; derived in _observe without another test
            test = kind_condition(each, value)
            kind = F.when(test, F.lit(each)) if kind is None else kind.when(test, F.lit(each))
    assert kind is not None
    aliases = {f"c{index}": index for index in columns}
    # One array of (column, value) pairs exploded, rather than DataFrame.unpivot: the engine
    # (Sail 0.7.2) panics unpivoting rows whose batches disagree on whether a column can be
    # NULL (files of other headers read as one table); an array's elements share one type.
    pairs = F.array(
        *[
            F.struct(F.lit(alias).alias("column"), F.col(quote(columns[index])).alias("value"))
            for alias, index in aliases.items()
        ]
    )
    rows = (
        staged.read(list(columns.values()))
        .select(F.explode(pairs).alias("pair"))
        .select("pair.column", "pair.value")
        .where(value.isNotNull())
        .groupBy("column", kind.alias("kind"))
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.max(_decimal_scale(value)).alias("s"),
            F.max(_decimal_digits(value)).alias("d"),
        )
        .collect()
    )
    stats: dict[str, Any] = {}
    for index in columns:
        stats.update({f"k{index}_{k}": 0 for k in STRING_KINDS if k != "text"})
    for row in rows:
        index = aliases[row["column"]]
        if row["kind"] is not None:
            stats[f"k{index}_{row['kind']}"] = int(row["n"])
        for key in ("s", "d"):
            if row[key] is not None:
                stats[f"{key}{index}"] = max(int(row[key]), int(stats.get(f"{key}{index}") or 0))
    return stats


def _count_where(condition: Column) -> Column:
    return F.sum(F.when(condition, 1).otherwise(0))


def _decimal_for_tags(scale: int, digits: int, table: str, column: str) -> T.DecimalType:
    scale = max(scale, 9)
    if digits + scale > 38:
        raise NormalizeError(
            f"table '{table}', column '{column}': a Decimal with {digits} integer and {scale} "
            "fraction digits does not fit Delta's decimal(38); pass it as a string instead",
            table=table,
            column=column,
        )
    return T.DecimalType(38, scale)


@dataclasses.dataclass
class _Leaf:
    """What the profile found in one staged column."""

    name: str
    dtype: T.DataType
    kinds: dict[str, int]  # values per kind, kinds without values left out
    string_source: bool
    tag_decimal: T.DecimalType | None = None  # the decimal type tagged decimals need
    observed_decimal: T.DecimalType | None = None  # the narrowest decimal holding them
    misfits: int = 0  # values failing the column's fit test (types.fit_test)
    tested: bool = False  # the column has a fit test: its values keep those rules
    untagged: bool = False  # a string column none of whose values begins as a typed one could


@dataclasses.dataclass
class _Column:
    """A destination column: its type, and the staged columns its values come from."""

    name: str
    data_type: str
    target: T.DataType
    own: _Leaf | None
    # Staged variant columns of the same key (``<name>__v_<type>``), each typed as a
    # column of its own for the values this column does not take.
    variants: list[_Column]
    # The type is declared (a hint, or the destination's column), not inferred from the
    # load: only then do values of other types convert into it. A type the load's own
    # values chose converts nothing: the int 2 in a column of bools would come back true.
    declared: bool = False


def infer_columns(
    staged: StagedTable,
    table: str,
    leaves: Mapping[str, T.DataType],
    hints: Mapping[str, Mapping[str, object]],
    destination: T.StructType | None,
    required: tuple[str, ...] = (),
    distinct: tuple[str, ...] = (),
) -> tuple[list[ColumnSpec], int, int | None]:
    """Column specs for a staged table, its row count and its count of distinct
    ``distinct`` keys (None when no key is to be counted)."""
    existing = {field.name: field.dataType for field in destination.fields} if destination else {}
    fit_tests = _fit_tests(leaves, hints, existing)
    stats = profile(staged, leaves, fit_tests, _bounded(leaves, hints, existing))
    rows = int(stats["__rows"])
    observed = {
        name: _observe(index, name, dtype, stats, table, name in fit_tests)
        for index, (name, dtype) in enumerate(leaves.items())
    }
    columns = _columns(observed, hints, existing, fit_tests)
    converted = _count_conversions(staged, columns, observed, fit_tests)
    not_null = _not_null_columns(hints, required)
    specs: list[ColumnSpec] = []
    for name in leaves:
        column = columns.get(name)
        if column is None:
            # A staged variant column of a column: what the column did not take goes to
            # its variant columns, as the values of its own staged column do.
            base = _base_of(name, columns)
            if base is not None:
                variant = next(v for v in columns[base].variants if v.name == name)
                specs += _variant_leaf_specs(table, variant, columns[base], existing, converted)
            continue
        specs_of_column, fitting = _column_specs(table, column, hints.get(name, {}), existing, converted)
        specs += specs_of_column
        if name in not_null and fitting != rows:
            _refuse_nulls(table, name, rows - fitting, rows, name in required)
    for name, column in columns.items():
        if name in leaves:
            continue
        # A column the data never names directly: declared by a hint, and perhaps fed by
        # staged variant columns whose values convert into it.
        specs_of_column, fitting = _column_specs(table, column, hints.get(name, {}), existing, converted)
        specs += specs_of_column
        if name in not_null and fitting != rows:
            _refuse_nulls(table, name, rows - fitting, rows, name in required)
    for name in sorted(not_null - set(required) - set(columns)):
        # Not in the data at all, nor declared with a type: a column the table has is NULL
        # in every row (one it lacks is not created, as in dlt).
        if name in existing and rows:
            _refuse_nulls(table, name, rows, rows, key=False)
    return _merge_same_names(specs), rows, _distinct_keys(staged, leaves, distinct, rows)


def _distinct_keys(
    staged: StagedTable, leaves: Mapping[str, T.DataType], key: tuple[str, ...], rows: int
) -> int | None:
    """How many distinct values of ``key`` the staged rows hold (None without a key, or
    with a key column the data lacks). Counted by a query of the key columns alone, after
    the profile: a distinct count inside the profile's aggregate makes it group every row
    by the key with all the columns' counters (on the JVM, W1's profile then took 2–4 times
    as long, more than the query of the key). The key's columns hold no NULL here: the
    ``required`` columns were checked."""
    if not key or not all(k in leaves for k in key):
        return None
    if rows == 0:
        return 0
    return int(staged.read(key).select(*[F.col(quote(k)) for k in key]).distinct().count())


def _bounded(
    leaves: Mapping[str, T.DataType],
    hints: Mapping[str, Mapping[str, object]],
    existing: Mapping[str, T.DataType],
) -> set[str]:
    """The staged columns whose ints may go into a decimal column (their own, or the column
    whose staged variant column they are, is declared decimal): only there do the digits of
    the largest int decide where the values go (``_converts``)."""

    def decimal(name: str) -> bool:
        return hints.get(name, {}).get("data_type") == "decimal" or isinstance(
            existing.get(name), T.DecimalType
        )

    return {name for name in leaves if decimal(name) or decimal(name.rsplit("__v_", 1)[0])}


def _merge_same_names(specs: list[ColumnSpec]) -> list[ColumnSpec]:
    """One spec per column: variant values of one type may come from two staged columns
    (a key's own and its staged variant column); the later becomes a part of the first."""
    merged: dict[str, ColumnSpec] = {}
    for spec in specs:
        first = merged.get(spec.name)
        if first is None:
            merged[spec.name] = spec
        elif first.target == spec.target:
            first.parts.append(spec.to_dict())
        else:
            raise NormalizeError(f"column '{spec.name}' would be written twice with different types")
    return list(merged.values())


def _observe(
    index: int, name: str, dtype: T.DataType, stats: Mapping[str, Any], table: str, tested: bool
) -> _Leaf:
    string_source = isinstance(dtype, T.StringType)
    if string_source:
        kinds = {k: int(stats[f"k{index}_{k}"] or 0) for k in STRING_KINDS if k != "text"}
        kinds["text"] = int(stats[f"n{index}"] or 0) - sum(kinds.values())
    else:
        kind = kind_of_spark_type(dtype)
        kinds = {kind: int(stats[f"n{index}"] or 0)} if kind else {}
    leaf = _Leaf(name, dtype, {k: n for k, n in kinds.items() if n}, string_source)
    leaf.untagged = string_source and bool(stats.get(f"u{index}"))
    if leaf.kinds.get("bigint") and f"max{index}" in stats:
        largest = max(abs(int(stats[f"max{index}"])), abs(int(stats[f"min{index}"])))
        leaf.observed_decimal = T.DecimalType(max(len(str(largest)), 1), 0)
    if leaf.kinds.get("decimal_tag"):
        scale, digits = int(stats[f"s{index}"] or 0), int(stats[f"d{index}"] or 0)
        leaf.tag_decimal = _decimal_for_tags(scale, digits, table, name)
        # The narrowest decimal holding every tagged value exactly.
        leaf.observed_decimal = T.DecimalType(max(digits + scale, 1), scale)
    if tested:
        leaf.tested = True
        leaf.misfits = int(stats.get(f"misfit{index}") or 0)
    return leaf


def _base_of(name: str, columns: Mapping[str, _Column]) -> str | None:
    """The column whose staged variant column ``name`` is (``amount`` for ``amount__v_text``)."""
    if "__v_" not in name:
        return None
    base, data_type = name.rsplit("__v_", 1)
    if base in columns and variant_column_name(base, data_type) == name:
        return base
    return None


def _columns(
    observed: Mapping[str, _Leaf],
    hints: Mapping[str, Mapping[str, object]],
    existing: Mapping[str, T.DataType],
    fit_tests: Mapping[str, Callable[[Column], Column]],
) -> dict[str, _Column]:
    """The destination columns of the staged columns and hints, each with its type; a
    staged variant column of a column is one of its sources, not a column of its own."""
    names = [n for n in observed] + [n for n, h in hints.items() if n not in observed and h.get("data_type")]
    # A destination column the load names only through staged variant columns (its key's
    # values all of other types) is a column of the load too: its values may convert.
    names += [n.rsplit("__v_", 1)[0] for n in observed if "__v_" in n and n.rsplit("__v_", 1)[0] in existing]
    names = list(dict.fromkeys(names))
    columns: dict[str, _Column] = {}
    for name in names:
        own = observed.get(name)
        kinds = own.kinds if own is not None else {}
        column_hints = hints.get(name, {})
        data_type = _target_type(name, kinds, column_hints, existing.get(name))
        if data_type is None:
            continue  # only NULLs and nothing declares the column: dlt creates no column
        source = own.dtype if own is not None else T.NullType()
        tag_decimal = own.tag_decimal if own is not None else None
        target = _target_spark_type(data_type, existing.get(name), column_hints, source, tag_decimal)
        declared = name in existing or bool(column_hints.get("data_type"))
        columns[name] = _Column(name, data_type, target, own, [], declared)
    for name in list(columns):
        base = _base_of(name, columns)
        # A staged variant column that exists as a narrow column of its own keeps its rules.
        if base is not None and base != name and name not in fit_tests:
            columns[base].variants.append(columns.pop(name))
    return columns


def _coerced_kinds(column: _Column, leaf: _Leaf) -> dict[str, Coercion]:
    """The kinds of ``leaf`` whose values convert into ``column`` one by one (a test each),
    with their types.coercion rule."""
    rules: dict[str, Coercion] = {}
    if leaf.tested or column.data_type == "json" or not column.declared:
        return rules
    for kind in leaf.kinds:
        if _converts(kind, column.data_type, leaf.dtype, column.target, leaf.observed_decimal):
            continue
        rule = coercion(kind, column.data_type, column.target)
        if rule is not None:
            rules[kind] = rule
    return rules


def _count_conversions(
    staged: StagedTable,
    columns: Mapping[str, _Column],
    observed: Mapping[str, _Leaf],
    fit_tests: Mapping[str, Callable[[Column], Column]],
) -> dict[tuple[str, str], int]:
    """How many values of each (staged column, kind) convert into their column, counted
    by Spark in one pass; no pass when no value needs a test."""
    aggs: list[Column] = []
    keys: list[tuple[str, str]] = []
    sources: list[str] = []
    for column in columns.values():
        leaves = [c.own for c in [column, *column.variants] if c.own is not None]
        for leaf in leaves:
            for kind, rule in _coerced_kinds(column, leaf).items():
                source = F.col(quote(leaf.name))
                test = rule.test(source)
                if leaf.string_source:
                    test = kind_condition(kind, source) & test
                aggs.append(F.sum(F.when(test, 1).otherwise(0)).alias(f"c{len(keys)}"))
                keys.append((leaf.name, kind))
                sources.append(leaf.name)
    if not aggs:
        return {}
    row = staged.read(sources).agg(*aggs).collect()[0]
    return {key: int(row[f"c{i}"] or 0) for i, key in enumerate(keys)}


def _column_specs(
    table: str,
    column: _Column,
    hints: Mapping[str, object],
    existing: Mapping[str, T.DataType],
    converted: Mapping[tuple[str, str], int],
) -> tuple[list[ColumnSpec], int]:
    """The specs of one column (the column, then variant columns for the values it cannot
    hold) and how many rows hold a value in the column."""
    name, target, own = column.name, column.target, column.own
    json_source = None
    if column.data_type == "json" and isinstance(target, T.StringType):
        # A hinted json column: nested values become JSON text (data nested beyond
        # max_table_nesting keeps its struct or array type instead).
        json_source = (own.dtype if own is not None else T.NullType()).json()
    specs: list[ColumnSpec] = []
    parts, fitting = _parts(column, converted)
    if own is None:
        if parts or name not in existing:
            specs.append(
                ColumnSpec(name, "", target.json(), ["null"], False, parts=parts, json_source=json_source)
            )
        return specs, fitting
    kinds, dtype, string_source = own.kinds, own.dtype, own.string_source
    whole = [k for k in kinds if _converts(k, column.data_type, dtype, target, own.observed_decimal)]
    rules = _coerced_kinds(column, own)
    taken = {k: converted.get((name, k), 0) for k in rules}
    main = whole + [k for k, n in taken.items() if n]
    # Values the column cannot hold exactly (it is narrower than their kind) go to the
    # variant column; the column keeps the others. A non-string source has one kind.
    misfits = own.misfits
    narrow = target.json() if misfits else None
    if misfits and misfits == sum(kinds[k] for k in whole):
        main = [k for k in main if k not in whole]  # not one value fits
    coerce = column.data_type if rules and not misfits else None
    if main:
        exclusive = len(main) == len(kinds)
        specs.append(
            ColumnSpec(
                name,
                name,
                target.json(),
                main,
                string_source,
                exclusive,
                narrow if coerce is None else target.json(),
                coerce=coerce,
                coerced=[k for k in main if k in rules],
                parts=parts,
                json_source=json_source,
                plain=exclusive
                and not parts
                and narrow is None
                and coerce is None
                and json_source is None
                and _reads_as_is(main, own, target),
            )
        )
    elif parts or (name not in existing and (not kinds or hints.get("data_type"))):
        # Declared (or all NULL) but no value fits: the column still exists, typed.
        specs.append(
            ColumnSpec(name, "", target.json(), ["null"], False, parts=parts, json_source=json_source)
        )
    fitting += sum(kinds[k] for k in whole if k in main) - (misfits if main and misfits else 0)
    fitting += sum(taken.values())
    for kind in kinds:
        if kind in whole and not misfits:
            continue
        if kind in taken and taken[kind] == kinds[kind]:
            continue  # every value converted
        spec = _variant_spec(table, name, own, kind, existing)
        if kind in rules:
            spec.coerce, spec.coerced, spec.narrow, spec.fitting = (
                column.data_type,
                [kind],
                target.json(),
                False,
            )
        elif misfits:
            spec.narrow, spec.fitting = narrow, False
        specs.append(spec)
    return specs, fitting


def _reads_as_is(kinds: list[str], leaf: _Leaf, target: T.DataType) -> bool:
    """Whether every value of ``leaf`` (all of ``kinds``) is stored in ``target`` as it is
    staged: a column of the target's own (atomic) type, or text with no value that could
    carry a tag (the profile saw none begin with NUL, a digit, ``[`` or ``{``)."""
    if kinds == ["text"]:
        return leaf.untagged and isinstance(target, T.StringType)
    atomic = not isinstance(target, (T.StructType, T.ArrayType, T.MapType))
    return len(kinds) == 1 and not leaf.string_source and atomic and leaf.dtype == target


def _parts(
    column: _Column, converted: Mapping[tuple[str, str], int]
) -> tuple[list[dict[str, JSONValue]], int]:
    """The column's values from its staged variant columns: those that convert (ColumnSpec
    dicts coalesced into the column) and how many there are."""
    parts = []
    count = 0
    for variant in column.variants:
        leaf = variant.own
        assert leaf is not None
        whole = [
            k
            for k in leaf.kinds
            if _converts(k, column.data_type, leaf.dtype, column.target, leaf.observed_decimal)
        ]
        rules = _coerced_kinds(column, leaf)
        taken = [k for k in rules if converted.get((leaf.name, k), 0)]
        if not whole and not taken:
            continue
        count += sum(leaf.kinds[k] for k in whole) + sum(converted[(leaf.name, k)] for k in taken)
        part = ColumnSpec(
            column.name,
            leaf.name,
            column.target.json(),
            whole + taken,
            leaf.string_source,
            narrow=column.target.json(),
            coerce=column.data_type,
            coerced=taken,
        )
        parts.append(part.to_dict())
    return parts, count


def _variant_leaf_specs(
    table: str,
    variant: _Column,
    column: _Column,
    existing: Mapping[str, T.DataType],
    converted: Mapping[tuple[str, str], int],
) -> list[ColumnSpec]:
    """The staged variant column of ``column``: the values the column did not take stay
    in it, typed as before (its own type's values in it, others in variants of it)."""
    leaf = variant.own
    assert leaf is not None
    rules = _coerced_kinds(column, leaf)
    left = [
        kind
        for kind, count in leaf.kinds.items()
        if not _converts(kind, column.data_type, leaf.dtype, column.target, leaf.observed_decimal)
        and not (kind in rules and converted.get((leaf.name, kind), 0) == count)
    ]
    # The values that convert into ``column`` are left out by its rule (fitting=False).
    partly = [kind for kind in left if kind in rules]
    own = [
        k for k in left if _converts(k, variant.data_type, leaf.dtype, variant.target, leaf.observed_decimal)
    ]
    specs = []
    if own:
        spec = ColumnSpec(
            leaf.name, leaf.name, variant.target.json(), own, leaf.string_source, own == list(leaf.kinds)
        )
        specs.append(spec)
    for kind in left:
        if kind not in own:
            specs.append(_variant_spec(table, leaf.name, leaf, kind, existing))
    for spec in specs:
        spec.coerced = [k for k in spec.kinds if k in partly]
        if spec.coerced:
            spec.coerce, spec.narrow, spec.fitting = column.data_type, column.target.json(), False
    return specs


def _variant_spec(
    table: str, name: str, leaf: _Leaf, kind: str, existing: Mapping[str, T.DataType]
) -> ColumnSpec:
    """The variant column of ``name`` for the values of ``kind`` in ``leaf``."""
    variant_type = KIND_TYPE[kind]
    variant = variant_column_name(name, variant_type)
    vtarget = _target_spark_type(variant_type, existing.get(variant), {}, leaf.dtype, leaf.tag_decimal)
    if variant in existing and (
        not _converts(kind, data_type_of_spark(existing[variant]), leaf.dtype, vtarget)
        # a variant column narrow itself (another writer's) would need a variant of its own
        or (not leaf.string_source and fit_test(kind, vtarget) is not None)
    ):
        raise SchemaConflictError(
            table, name, variant_type, existing[variant].simpleString(), variant_column=variant
        )
    return ColumnSpec(variant, leaf.name, vtarget.json(), [kind], leaf.string_source, False)


def _not_null_columns(hints: Mapping[str, Mapping[str, object]], required: tuple[str, ...]) -> set[str]:
    """Columns every row must fill: the key columns, and those hinted ``nullable=False``."""
    return set(required) | {name for name, h in hints.items() if h.get("nullable") is False}


def _refuse_nulls(table: str, column: str, missing: int, rows: int, key: bool) -> None:
    """Refuse a load leaving ``column`` NULL in ``missing`` rows (before any commit): the
    value is absent, None, or of a type that went to a variant column."""
    what = "key column" if key else "column"
    why = "" if key else " (nullable=False)"
    raise NormalizeError(
        f"table '{table}': {what} '{column}'{why} has NULL or mistyped values in {missing} of {rows} rows",
        table=table,
        column=column,
    )


def _fit_tests(
    leaves: Mapping[str, T.DataType],
    hints: Mapping[str, Mapping[str, object]],
    existing: Mapping[str, T.DataType],
) -> dict[str, Callable[[Column], Column]]:
    """Per-value tests for the non-string columns whose type (the destination's, else the
    hint's) is narrower than the kind of the staged values (see types.fit_test)."""
    tests = {}
    for name, dtype in leaves.items():
        kind = kind_of_spark_type(dtype)
        declared = existing.get(name)
        data_type = hints.get(name, {}).get("data_type")
        if declared is None and data_type in ("bigint", "double"):
            declared = spark_type(str(data_type))
        test = fit_test(kind, declared) if kind is not None and declared is not None else None
        if test is not None:
            tests[name] = test
    return tests


def _target_type(
    name: str, kinds: Mapping[str, int], hints: Mapping[str, object], existing: T.DataType | None
) -> str | None:
    if existing is not None:
        if hints.get("data_type") == "json" and isinstance(existing, T.StringType):
            return "json"  # a json column made by an earlier load holds JSON text
        return data_type_of_spark(existing)
    if hints.get("data_type"):
        return str(hints["data_type"])
    if not kinds:
        return None
    candidates = {KIND_TYPE[k] for k in kinds}
    best = max(
        candidates,
        key=lambda t: (
            sum(n for k, n in kinds.items() if absorbs(t, k)),
            -TYPE_PREFERENCE.index(t) if t in TYPE_PREFERENCE else -99,
        ),
    )
    return best


def _target_spark_type(
    data_type: str,
    existing: T.DataType | None,
    hints: Mapping[str, Any],
    source: T.DataType,
    tag_decimal: T.DecimalType | None,
) -> T.DataType:
    if existing is not None:
        return existing
    if data_type == "json":
        # A hinted json column holds JSON text; data nested beyond max_table_nesting keeps
        # its struct or array type.
        return T.StringType() if hints.get("data_type") == "json" else source
    if data_type == "decimal":
        if hints.get("precision") or hints.get("scale") is not None:
            return spark_type("decimal", hints.get("precision"), hints.get("scale"))
        if isinstance(source, T.DecimalType):
            return source
        if tag_decimal is not None:
            return tag_decimal
    return spark_type(data_type, timezone=hints.get("timezone"))


def _converts(
    kind: str,
    data_type: str,
    source: T.DataType,
    target: T.DataType,
    observed_decimal: T.DecimalType | None = None,
) -> bool:
    """True when every value of ``kind`` is stored in ``target`` unchanged."""
    if not absorbs(data_type, kind):
        return False
    if kind == "json":
        return source == target or isinstance(target, T.StringType)  # as JSON text
    if kind == "decimal" and isinstance(source, T.DecimalType) and isinstance(target, T.DecimalType):
        return decimal_fits(source, target)
    if kind == "decimal_tag" and isinstance(target, T.DecimalType) and observed_decimal is not None:
        return decimal_fits(observed_decimal, target)
    if kind == "bigint" and isinstance(target, T.DecimalType):
        return decimal_fits(observed_decimal or T.DecimalType(19, 0), target)
    if kind == "bigint_tag":
        # Tagged ints lie beyond ±2**53: no int column narrower than bigint holds one.
        return isinstance(target, T.LongType)
    if kind == "double_tag":
        # Tagged text is read without a per-value test, so only a double column takes it
        # whole; a float column another writer made sends it to the variant column.
        return isinstance(target, T.DoubleType)
    return True
