"""A normalized table's rows as the table takes them: the package's Parquet read back and
typed by its column specs, with its system columns.

Normalize writes each table's rows once, untyped; the typing (``ColumnSpec.expression``) is
applied when they are read. The load reads them so to commit them, and the expectations read
them so to check them: the rows an expectation judges are the rows the load writes.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkload.common.sql import quote
from sparkload.normalize.normalizer import NormalizedTable
from sparkload.normalize.staged_schema import staged_schema


def typed_rows(spark: SparkSession, rows_uri: str, table: NormalizedTable) -> DataFrame:
    """The rows of ``table`` in the Parquet folder ``rows_uri`` (the package's
    ``normalized_table_uri(table.rows_folder)``), typed, with its system columns."""
    schema = staged_schema(spark, rows_uri)
    staged = spark.read.schema(schema).parquet(rows_uri)
    names = [spec.name for spec in table.columns] + table.system_columns
    if all(spec.plain and spec.source == spec.name for spec in table.columns) and names == schema.names:
        # Every column is read as it is staged, in the staged order: the files are the rows.
        # No projection, so a wide table's write plans no expression per column.
        return staged
    columns = [spec.expression() for spec in table.columns]
    columns += [F.col(quote(name)) for name in table.system_columns]
    return staged.select(*columns)
