"""Flatten a staged schema: nested dicts become ``parent__child`` columns, lists nested tables.

Works on the schema only (once per table, not per row); the returned Column expressions
do the flattening inside Spark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.naming import (
    NameCollision,
    make_path,
    normalize_identifier,
    resolve_collisions,
    variant_column_name,
)

# Keys the slow path of normalize/conflicts.py rewrote (NUL never starts a real key's part
# there: the marks are read only in files that slow path wrote):
# - a value of another type than its field's: "<key>\x00v_<type>";
VARIANT_KEY_MARK = "\x00v_"
# - a key that differs from a sibling only in case, which the engine's case-insensitive
#   column resolution cannot tell apart: "<key>\x00n_<its resolved column name>";
NAME_KEY_MARK = "\x00n_"
# - the keys of dicts nested deeper than the engine can describe, joined into one key of
#   the dict above them: "<key>\x00p_<child key>\x00p_<grandchild key>".
PATH_KEY_MARK = "\x00p_"


@dataclasses.dataclass
class Leaf:
    name: str
    column: Column
    dtype: T.DataType
    # The frame's own column of the same name, read unchanged (a top-level key already in
    # normal form): selected as it is, without an alias the engine would plan per column.
    as_is: bool = False

    def selected(self) -> Column:
        """The leaf's column, named ``name``."""
        return self.column if self.as_is else self.column.alias(self.name)


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
    name, the others follow sorted. Keys the slow path renamed (see the marks above) carry
    their resolved names, which the plain keys' resolution must not take.
    """
    marked = {
        name: _marked_name(name) for name in fields if VARIANT_KEY_MARK not in name and _is_marked(name)
    }
    plain = [name for name in fields if VARIANT_KEY_MARK not in name and name not in marked]
    ordered = sorted(plain, key=lambda raw: (normalize_identifier(raw) != raw, raw))
    taken = [resolved for resolved, _ in marked.values()]
    resolved, collisions = resolve_collisions(ordered, taken) if ordered else ([], [])
    collisions += [collision for _, collision in marked.values() if collision is not None]
    by_raw = dict(zip(ordered, resolved, strict=True))
    by_raw.update({name: resolved for name, (resolved, _) in marked.items()})
    names = []
    for name in fields:
        if VARIANT_KEY_MARK in name:
            base, data_type = name.split(VARIANT_KEY_MARK, 1)
            # The variant belongs to its key's column, suffix included when the key's
            # name collided (``userId`` → ``user_id_1`` → ``user_id_1__v_text``).
            column = by_raw.get(base) or _marked_name(base)[0]
            names.append(variant_column_name(column, data_type))
        else:
            names.append(by_raw[name])
    return names, collisions


def _is_marked(name: str) -> bool:
    return NAME_KEY_MARK in name or PATH_KEY_MARK in name


def _marked_name(key: str) -> tuple[str, NameCollision | None]:
    """The column name of a key the slow path rewrote (or of a plain key), and the
    collision it records when a sibling differing only in case took its plain name."""
    parts = []
    collision = None
    for part in key.split(PATH_KEY_MARK):
        original, _, resolved = part.partition(NAME_KEY_MARK)
        normalized = normalize_identifier(original)
        if resolved and resolved != normalized:
            collision = NameCollision(original, normalized, resolved)
        parts.append(resolved or normalized)
    return make_path(*parts), collision


def path_depth(key: str) -> int:
    """How many dict levels a key stands for: one, or one per part of a joined key."""
    return key.count(PATH_KEY_MARK) + 1


def flatten(
    struct: T.StructType,
    get: Callable[[str], Column],
    table: str,
    prefix: str,
    level: int,
    max_nesting: int | None,
    out: Flattened | None = None,
    whole: frozenset[str] = frozenset(),
    top: bool = False,
) -> Flattened:
    """Leaves and nested lists of ``struct``; ``get(raw_name)`` reads a field of it. The
    columns named in ``whole`` (hinted ``json``) stay leaves, nested values and all. With
    ``top``, ``struct`` is a frame's schema and ``get`` reads the frame's columns."""
    out = out or Flattened()
    names, collisions = field_names([field.name for field in struct.fields])
    out.collisions.extend(collisions)
    for field, name in zip(struct.fields, names, strict=True):
        path = make_path(prefix, name) if prefix else name
        column = get(field.name)
        dtype = field.dataType
        # A joined key (dicts nested too deep, see PATH_KEY_MARK) stands for its levels.
        field_level = level + path_depth(field.name) - 1
        as_is = top and path == field.name
        if path in whole:
            out.leaves.append(Leaf(path, column, dtype, as_is))
        elif isinstance(dtype, T.StructType) and _nesting_allowed(field_level, max_nesting):
            flatten(dtype, column.getField, table, path, field_level + 1, max_nesting, out, whole)
        elif isinstance(dtype, T.ArrayType) and _holds_nothing(dtype.elementType):
            if _nesting_allowed(field_level, max_nesting):
                nested = _rows_without_values(make_path(table, path), column, dtype, field_level + 1)
                out.nested.append(nested)
            # Else kept whole, a value whose keys are None in every row: no column, as in dlt
        elif isinstance(dtype, T.ArrayType) and _nesting_allowed(field_level, max_nesting):
            out.nested.append(NestedList(make_path(table, path), column, dtype.elementType, field_level + 1))
        elif isinstance(dtype, T.NullType):
            out.leaves.append(Leaf(path, column, dtype, as_is))  # a column only once it has a value
        elif (typed := _typed(dtype)) is not None:  # a value kept whole, of typed keys only
            out.leaves.append(Leaf(path, _as_typed(column, dtype, typed), typed, as_is and typed == dtype))
        # else: a value kept whole whose keys are None in every row: no column, as in dlt
    return out


def _rows_without_values(table: str, column: Column, dtype: T.ArrayType, level: int) -> NestedList:
    """The nested table of a list whose elements hold no value in every row (None, dicts of
    None, empty dicts, lists of those): a row per element all the same, with its ids and
    position and no column of its own, as dlt makes them. The elements are staged as
    positions only (``_positions``): Parquet cannot write a struct without fields, and
    values that are None make no column."""
    return NestedList(table, _positions(column, dtype), _no_values(dtype.elementType), level)


def _positions(column: Column, dtype: T.DataType) -> Column:
    """``column`` (of a type that holds no value) with each element that is not a list
    made ``true``: the same lists, nested as they were, that Parquet can write."""
    if isinstance(dtype, T.ArrayType):
        return F.transform(column, lambda element: _positions(element, dtype.elementType))
    return F.lit(True)


def _no_values(dtype: T.DataType) -> T.DataType:
    """The element type ``_positions`` stages as flatten sees it: a dict of no keys for each
    element that is not a list, so that it makes a row and no column."""
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(_no_values(dtype.elementType), True)
    return T.StructType([])


def _typed(dtype: T.DataType) -> T.DataType | None:
    """``dtype`` without the dict keys that are None in every row, at any depth of a value
    kept whole (nested beyond max_table_nesting): such a key has no type, which a Delta
    column cannot hold, and dlt creates a column only once it has a value (a key a JSON
    value leaves out reads back as None). None when nothing typed is left."""
    if isinstance(dtype, T.NullType):
        return None
    if isinstance(dtype, T.ArrayType):
        element = _typed(dtype.elementType)
        return None if element is None else T.ArrayType(element, dtype.containsNull)
    if isinstance(dtype, T.StructType):
        fields = [
            T.StructField(field.name, typed, True)
            for field in dtype.fields
            if (typed := _typed(field.dataType)) is not None
        ]
        return T.StructType(fields) if fields else None
    return dtype


def _as_typed(column: Column, dtype: T.DataType, typed: T.DataType) -> Column:
    """``column`` (of ``dtype``) as ``typed``, the type ``_typed`` gave: the keys of no type
    left out, in Spark."""
    if typed == dtype:
        return column
    if isinstance(dtype, T.ArrayType) and isinstance(typed, T.ArrayType):
        return F.transform(column, lambda item: _as_typed(item, dtype.elementType, typed.elementType))
    if isinstance(dtype, T.StructType) and isinstance(typed, T.StructType):
        kept = {field.name: field.dataType for field in typed.fields}
        rebuilt = F.struct(
            *[
                _as_typed(column.getField(field.name), field.dataType, kept[field.name]).alias(field.name)
                for field in dtype.fields
                if field.name in kept
            ]
        )
        return F.when(column.isNull(), F.lit(None)).otherwise(rebuilt)
    return column


def flatten_element(
    element: T.DataType,
    column: Column,
    table: str,
    level: int,
    max_nesting: int | None,
    whole: frozenset[str] = frozenset(),
) -> Flattened:
    """Columns of a nested table from its list element: a dict's fields, or ``value``; a
    list in a list is a nested table of its own, ``<table>__list`` (dlt's name)."""
    if isinstance(element, T.StructType):
        return flatten(element, column.getField, table, "", level, max_nesting, whole=whole)
    name = "list" if isinstance(element, T.ArrayType) else "value"
    wrapped = T.StructType([T.StructField(name, element)])
    return flatten(wrapped, lambda _name: column, table, "", level, max_nesting, whole=whole)


def case_collisions(dtype: T.DataType) -> bool:
    """Whether sibling fields somewhere in ``dtype`` differ only in case (``Id``, ``id``):
    the engine resolves columns case-insensitively (as Spark does) and cannot select
    either, so normalize renames them first."""
    if isinstance(dtype, T.ArrayType):
        return case_collisions(dtype.elementType)
    if not isinstance(dtype, T.StructType):
        return False
    lowered = {field.name.lower() for field in dtype.fields}
    if len(lowered) < len(dtype.fields):
        return True
    return any(case_collisions(field.dataType) for field in dtype.fields)
