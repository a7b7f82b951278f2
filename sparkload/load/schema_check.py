"""Compare a write with the destination table's schema before anything is committed.

The engine casts a mismatched column on write without a word (a string into a bigint
column becomes NULL). Normalization already routes such values to variant columns; this
check is the last guard, so a mismatch that slipped through stops the load instead.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.sql import quote
from sparkload.exceptions import SchemaConflictError


def check_types(df: DataFrame, destination: T.StructType | None, table: str) -> None:
    if destination is None:
        return
    existing = {field.name: field.dataType for field in destination.fields}
    for field in df.schema.fields:
        old = existing.get(field.name)
        if old is not None and not _same_type(old, field.dataType):
            raise SchemaConflictError(table, field.name, field.dataType.simpleString(), old.simpleString())


def _same_type(old: T.DataType, new: T.DataType) -> bool:
    if isinstance(old, T.StructType) and isinstance(new, T.StructType):
        # Struct columns may gain fields (schema evolution) but never change a field's type.
        fields = {f.name: f.dataType for f in old.fields}
        return all(f.name not in fields or _same_type(fields[f.name], f.dataType) for f in new.fields)
    if isinstance(old, T.ArrayType) and isinstance(new, T.ArrayType):
        return _same_type(old.elementType, new.elementType)
    if isinstance(old, T.MapType) and isinstance(new, T.MapType):
        return _same_type(old.keyType, new.keyType) and _same_type(old.valueType, new.valueType)
    return type(old) is type(new) and old.simpleString() == new.simpleString()


def align_to_table(df: DataFrame, destination: T.StructType | None) -> DataFrame:
    """Add the table's columns the load lacks (as typed NULLs), table columns first.

    MERGE and replaceWhere writes want the source to cover the target's columns; new
    columns of the load follow and evolve the table.
    """
    if destination is None:
        return df
    present = set(df.columns)
    columns = [
        F.col(quote(field.name))
        if field.name in present
        else F.lit(None).cast(field.dataType).alias(field.name)
        for field in destination.fields
    ]
    known = {field.name for field in destination.fields}
    columns += [F.col(quote(name)) for name in df.columns if name not in known]
    return df.select(*columns)
