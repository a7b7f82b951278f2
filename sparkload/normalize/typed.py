"""A normalized table's rows as the table takes them: the package's Parquet read back and
typed by its column specs, with its system columns.

Normalize writes each table's rows once, untyped; the typing (``ColumnSpec.expression``) is
applied when they are read. The load reads them so to commit them, and the expectations read
them so to check them: the rows an expectation judges are the rows the load writes.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.sql import quote
from sparkload.normalize.normalizer import NormalizedTable


def typed_rows(spark: SparkSession, rows_uri: str, table: NormalizedTable) -> DataFrame:
    """The rows of ``table`` in the Parquet folder ``rows_uri`` (the package's
    ``normalized_table_uri(table.rows_folder)``), typed, with its system columns."""
    schema = nullable_schema(spark.read.parquet(rows_uri).schema)
    staged = spark.read.schema(schema).parquet(rows_uri)
    names = [spec.name for spec in table.columns] + table.system_columns
    if all(spec.plain and spec.source == spec.name for spec in table.columns) and names == schema.names:
        # Every column is read as it is staged, in the staged order: the files are the rows.
        # No projection, so a wide table's write plans no expression per column.
        return staged
    columns = [spec.expression() for spec in table.columns]
    columns += [F.col(quote(name)) for name in table.system_columns]
    return staged.select(*columns)


def nullable_schema(schema: T.StructType) -> T.StructType:
    """``schema`` with every field nullable.

    Staged columns made from literals are stored NOT NULL, and a Delta table created with a
    NOT NULL column makes the engine ignore mergeSchema and demand every column on each
    later append; so staged files are read with this schema before they are written.
    """
    return T.StructType([T.StructField(f.name, _nullable_type(f.dataType), True) for f in schema.fields])


def _nullable_type(dtype: T.DataType) -> T.DataType:
    if isinstance(dtype, T.StructType):
        return nullable_schema(dtype)
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(_nullable_type(dtype.elementType), True)
    if isinstance(dtype, T.MapType):
        return T.MapType(dtype.keyType, _nullable_type(dtype.valueType), True)
    return dtype
