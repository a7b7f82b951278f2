"""Decide each column's type from the staged data, in one Spark aggregation per table.

The type of a column is, in order: the destination's (an existing Delta column never
changes type), the ``data_type`` hint, or the type that holds most of the load's values
without changing any. Values of other kinds go to variant columns ``<col>__v_<type>``, and
so do the values a column narrower than their kind cannot hold exactly (an int or float
column made by another writer: ``n__v_bigint``, ``n__v_double``); Delta cannot widen a
column in place, and the engine would cast them without a word.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.naming import variant_column_name
from sparkload.common.sql import quote
from sparkload.common.tags import TAG_DECIMAL
from sparkload.exceptions import NormalizeError, SchemaConflictError
from sparkload.normalize.types import (
    KIND_TYPE,
    STRING_KINDS,
    TYPE_PREFERENCE,
    absorbs,
    converter,
    data_type_of_spark,
    decimal_fits,
    fit_test,
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
    narrow: str | None = None
    fitting: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ColumnSpec:
        return cls(**data)

    @property
    def spark_type(self) -> T.DataType:
        return T._parse_datatype_json_string(self.target)

    def expression(self) -> Column:
        """The typed column; deterministic, so re-running a load gives the same values."""
        target = self.spark_type
        if self.kinds == ["null"]:
            return F.lit(None).cast(target).alias(self.name)
        source = F.col(quote(self.source))
        if self.narrow is not None:
            test = fit_test(self.kinds[0], T._parse_datatype_json_string(self.narrow))
            assert test is not None and not self.string_source and len(self.kinds) == 1
            fits = test(source) if self.fitting else ~test(source)
            return F.when(fits, converter(self.kinds[0], target)(source)).alias(self.name)
        if not self.string_source or (self.exclusive and len(self.kinds) == 1):
            return converter(self.kinds[0], target)(source).alias(self.name)
        expr: Column | None = None
        for kind in self.kinds:
            value = converter(kind, target)(source)
            condition = kind_condition(kind, source)
            expr = F.when(condition, value) if expr is None else expr.when(condition, value)
        assert expr is not None
        return expr.alias(self.name)


def _decimal_scale(column: Column) -> Column:
    fraction = F.regexp_extract(tag_payload(column), r"\.([0-9]*)$", 1)
    return F.when(column.startswith(TAG_DECIMAL), F.length(fraction))


def _decimal_digits(column: Column) -> Column:
    # The integer digits without their leading zeros, in one regexp_extract: Sail 0.7.2
    # local-cluster cannot ship regexp_replace (nor substr) into a Delta write's stage.
    integer = F.regexp_extract(tag_payload(column), r"^-?0*([0-9]*)", 1)
    return F.when(column.startswith(TAG_DECIMAL), F.length(integer))


def profile(
    df: DataFrame,
    leaves: Mapping[str, T.DataType],
    key: tuple[str, ...] = (),
    fit_tests: Mapping[str, Callable[[Column], Column]] | None = None,
) -> dict[str, Any]:
    """Counts per column and kind (and distinct keys), computed by Spark in one pass; for a
    column with a test in ``fit_tests``, also how many of its values fail it."""
    aggs: list[Column] = [F.count(F.lit(1)).alias("__rows")]
    if key and all(k in leaves for k in key):
        aggs.append(F.countDistinct(*[F.col(quote(k)) for k in key]).alias("__distinct_keys"))
    for index, (name, dtype) in enumerate(leaves.items()):
        column = F.col(quote(name))
        aggs.append(F.count(column).alias(f"n{index}"))
        if isinstance(dtype, T.StringType):
            for kind in STRING_KINDS:
                if kind == "text":
                    continue  # whatever is left; derived below without another test
                hit = F.when(kind_condition(kind, column), 1).otherwise(0)
                aggs.append(F.sum(hit).alias(f"k{index}_{kind}"))
            aggs.append(F.max(_decimal_scale(column)).alias(f"s{index}"))
            aggs.append(F.max(_decimal_digits(column)).alias(f"d{index}"))
        elif kind_of_spark_type(dtype) == "bigint":
            # Integer digits decide whether the ints fit a declared decimal exactly.
            aggs.append(F.max(column).alias(f"max{index}"))
            aggs.append(F.min(column).alias(f"min{index}"))
        if fit_tests and name in fit_tests:
            misfit = F.when(~fit_tests[name](column), 1).otherwise(0)  # NULL fails no test
            aggs.append(F.sum(misfit).alias(f"misfit{index}"))
    row = df.agg(*aggs).collect()[0]
    return row.asDict()


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


def infer_columns(
    df: DataFrame,
    table: str,
    leaves: Mapping[str, T.DataType],
    hints: Mapping[str, Mapping[str, Any]],
    destination: T.StructType | None,
    required: tuple[str, ...] = (),
) -> tuple[list[ColumnSpec], int, int | None]:
    """Column specs for a staged table, its row count and its count of distinct
    ``required`` keys (None when there is no key)."""
    existing = {field.name: field.dataType for field in destination.fields} if destination else {}
    fit_tests = _fit_tests(leaves, hints, existing)
    stats = profile(df, leaves, required, fit_tests)
    rows = int(stats["__rows"])
    distinct_keys = stats.get("__distinct_keys")
    specs: list[ColumnSpec] = []
    for index, (name, dtype) in enumerate(leaves.items()):
        string_source = isinstance(dtype, T.StringType)
        if string_source:
            kinds = {k: int(stats[f"k{index}_{k}"] or 0) for k in STRING_KINDS if k != "text"}
            kinds["text"] = int(stats[f"n{index}"] or 0) - sum(kinds.values())
        else:
            kind = kind_of_spark_type(dtype)
            kinds = {kind: int(stats[f"n{index}"] or 0)} if kind else {}
        kinds = {k: n for k, n in kinds.items() if n}
        tag_decimal = observed_decimal = None
        if kinds.get("bigint"):
            largest = max(abs(int(stats[f"max{index}"])), abs(int(stats[f"min{index}"])))
            observed_decimal = T.DecimalType(max(len(str(largest)), 1), 0)
        if kinds.get("decimal_tag"):
            scale, digits = int(stats[f"s{index}"] or 0), int(stats[f"d{index}"] or 0)
            tag_decimal = _decimal_for_tags(scale, digits, table, name)
            # The narrowest decimal holding every tagged value exactly.
            observed_decimal = T.DecimalType(max(digits + scale, 1), scale)

        target_type = _target_type(name, kinds, hints.get(name, {}), existing.get(name))
        if target_type is None:
            continue  # only NULLs and nothing declares the column: dlt creates no column
        target = _target_spark_type(target_type, existing.get(name), hints.get(name, {}), dtype, tag_decimal)
        main = [k for k in kinds if _converts(k, target_type, dtype, target, observed_decimal)]
        # Values the column cannot hold exactly (it is narrower than their kind) go to the
        # variant column; the column keeps the others. A non-string source has one kind.
        misfits = int(stats.get(f"misfit{index}") or 0) if name in fit_tests else 0
        narrow = target.json() if misfits else None
        if misfits and misfits == sum(kinds[k] for k in main):
            main = []  # not one value fits: the whole kind goes to the variant column
        if main:
            exclusive = len(main) == len(kinds)
            specs.append(ColumnSpec(name, name, target.json(), main, string_source, exclusive, narrow))
        elif name not in existing and (not kinds or hints.get(name, {}).get("data_type")):
            # Declared (or all NULL) but no value fits: the column still exists, typed.
            specs.append(ColumnSpec(name, "", target.json(), ["null"], False))
        fitting = sum(kinds[k] for k in main) - (misfits if main else 0)
        if name in required and fitting != rows:
            raise NormalizeError(
                f"table '{table}': key column '{name}' has NULL or mistyped values in "
                f"{rows - fitting} of {rows} rows",
                table=table,
                column=name,
            )
        for kind in kinds:
            if kind in main and not misfits:
                continue
            variant_type = KIND_TYPE[kind]
            variant = variant_column_name(name, variant_type)
            vtarget = _target_spark_type(variant_type, existing.get(variant), {}, dtype, tag_decimal)
            if variant in existing and (
                not _converts(kind, data_type_of_spark(existing[variant]), dtype, vtarget)
                # a variant column narrow itself (another writer's) would need a variant of its own
                or (not string_source and fit_test(kind, vtarget) is not None)
            ):
                raise SchemaConflictError(
                    table, name, variant_type, existing[variant].simpleString(), variant_column=variant
                )
            specs.append(
                ColumnSpec(variant, name, vtarget.json(), [kind], string_source, False, narrow, False)
            )
    for name, column_hints in hints.items():
        # A declared column that the data never mentions is still created, typed.
        if name not in leaves and column_hints.get("data_type") and name not in existing:
            target = spark_type(
                column_hints["data_type"], column_hints.get("precision"), column_hints.get("scale")
            )
            specs.append(ColumnSpec(name, "", target.json(), ["null"], False))
    return specs, rows, None if distinct_keys is None else int(distinct_keys)


def _fit_tests(
    leaves: Mapping[str, T.DataType],
    hints: Mapping[str, Mapping[str, Any]],
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
    name: str, kinds: Mapping[str, int], hints: Mapping[str, Any], existing: T.DataType | None
) -> str | None:
    if existing is not None:
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
        return source
    if data_type == "decimal":
        if hints.get("precision") or hints.get("scale") is not None:
            return spark_type("decimal", hints.get("precision"), hints.get("scale"))
        if isinstance(source, T.DecimalType):
            return source
        if tag_decimal is not None:
            return tag_decimal
    return spark_type(data_type)


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
        return source == target
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
