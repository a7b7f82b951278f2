"""Flatten a staged schema: nested dicts become ``parent__child`` columns, lists nested tables.

Works on the schema only (once per table, not per row); the returned Column expressions
do the flattening inside Spark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import types as T

from sparkload.common.naming import (
    NameCollision,
    make_path,
    normalize_identifier,
    resolve_collisions,
    variant_column_name,
)

# A key the type-conflict splitter renamed: "<key>\x00v_<type>" (see normalize/conflicts.py).
VARIANT_KEY_MARK = "\x00v_"


@dataclasses.dataclass
class Leaf:
    name: str
    column: Column
    dtype: T.DataType


@dataclasses.dataclass
class NestedList:
    table: str
    column: Column
    element: T.DataType
    level: int


@dataclasses.dataclass
class Flattened:
    leaves: list[Leaf] = dataclasses.field(default_factory=list)
    nested: list[NestedList] = dataclasses.field(default_factory=list)
    collisions: list[NameCollision] = dataclasses.field(default_factory=list)


def _nesting_allowed(level: int, max_nesting: int | None) -> bool:
    # dlt's rule: a nested value at recursion level r is kept as a whole when r + 1 > max.
    return max_nesting is None or level + 1 <= max_nesting


def _holds_nothing(dtype: T.DataType) -> bool:
    """Whether values of ``dtype`` can only be NULL or empty: null, a struct of such fields
    (``{}`` too), or a list of such elements."""
    if isinstance(dtype, T.NullType):
        return True
    if isinstance(dtype, T.StructType):
        return all(_holds_nothing(field.dataType) for field in dtype.fields)
    return isinstance(dtype, T.ArrayType) and _holds_nothing(dtype.elementType)


def field_names(fields: list[str]) -> tuple[list[str], list[NameCollision]]:
    """Normalized names of sibling keys.

    Colliding keys are resolved in an order that does not depend on the order of keys in
    the data (which may differ between loads): a key already in normal form keeps its
    name, the others follow sorted.
    """
    plain = [name for name in fields if VARIANT_KEY_MARK not in name]
    ordered = sorted(plain, key=lambda raw: (normalize_identifier(raw) != raw, raw))
    resolved, collisions = resolve_collisions(ordered) if ordered else ([], [])
    by_raw = dict(zip(ordered, resolved, strict=True))
    names = []
    for name in fields:
        if VARIANT_KEY_MARK in name:
            base, data_type = name.split(VARIANT_KEY_MARK, 1)
            # The variant belongs to its key's column, suffix included when the key's
            # name collided (``userId`` → ``user_id_1`` → ``user_id_1__v_text``).
            column = by_raw.get(base) or normalize_identifier(base)
            names.append(variant_column_name(column, data_type))
        else:
            names.append(by_raw[name])
    return names, collisions


def flatten(
    struct: T.StructType,
    get: Callable[[str], Column],
    table: str,
    prefix: str,
    level: int,
    max_nesting: int | None,
    out: Flattened | None = None,
) -> Flattened:
    """Leaves and nested lists of ``struct``; ``get(raw_name)`` reads a field of it."""
    out = out or Flattened()
    names, collisions = field_names([field.name for field in struct.fields])
    out.collisions.extend(collisions)
    for field, name in zip(struct.fields, names, strict=True):
        path = make_path(prefix, name) if prefix else name
        column = get(field.name)
        dtype = field.dataType
        if isinstance(dtype, T.StructType) and _nesting_allowed(level, max_nesting):
            flatten(dtype, column.getField, table, path, level + 1, max_nesting, out)
        elif isinstance(dtype, T.ArrayType) and _holds_nothing(dtype.elementType):
            # Lists that were empty, or held only None and empty dicts, in every row: nothing
            # to load (and Parquet cannot write a struct without fields).
            continue
        elif isinstance(dtype, T.ArrayType) and _nesting_allowed(level, max_nesting):
            out.nested.append(NestedList(make_path(table, path), column, dtype.elementType, level + 1))
        else:
            out.leaves.append(Leaf(path, column, dtype))
    return out


def flatten_element(
    element: T.DataType, column: Column, table: str, level: int, max_nesting: int | None
) -> Flattened:
    """Columns of a nested table from its list element: a dict's fields, or ``value``; a
    list in a list is a nested table of its own, ``<table>__list`` (dlt's name)."""
    if isinstance(element, T.StructType):
        return flatten(element, column.getField, table, "", level, max_nesting)
    name = "list" if isinstance(element, T.ArrayType) else "value"
    wrapped = T.StructType([T.StructField(name, element)])
    return flatten(wrapped, lambda _name: column, table, "", level, max_nesting)
