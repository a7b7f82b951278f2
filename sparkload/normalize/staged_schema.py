"""The schema of a Parquet folder that normalize staged, kept beside its files.

Read without a schema, a Parquet folder has the engine read the files' footers first: on
Apache Spark a job of its own, for every read of every table (a one-row append paid two
per table: normalize's read of what it wrote, the load's read before typing). Normalize
knows the schema when it writes the files, so it keeps it in ``_schema.json`` in the folder
(engines skip files whose names begin with ``_``), and each later read gives it to the
engine. A folder without the file (a package normalized before it was kept) is read as
before.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkload.common.engine_family import write_parquet
from sparkload.common.folder import Folder

SCHEMA_FILE = "_schema.json"


def stage(frame: DataFrame, uri: str) -> T.StructType:
    """Write ``frame`` as the Parquet folder ``uri`` (replacing what it held) and keep its
    schema beside the files; returns that schema, as the files are read back."""
    write_parquet(frame, uri, "overwrite")
    schema = nullable_schema(frame.schema)
    keep_schema(uri, schema)
    return schema


def keep_schema(uri: str, schema: T.StructType) -> None:
    """Keep ``schema`` as that of the Parquet folder ``uri``, written after its files."""
    Folder(uri).write(SCHEMA_FILE, nullable_schema(schema).json().encode())


def staged_schema(spark: SparkSession, uri: str) -> T.StructType:
    """The schema of the staged Parquet folder ``uri``, every field nullable."""
    try:
        kept = Folder(uri).read(SCHEMA_FILE)
    except FileNotFoundError:
        return nullable_schema(spark.read.parquet(uri).schema)
    schema = T._parse_datatype_json_string(kept.decode())
    assert isinstance(schema, T.StructType)
    return schema


def read_staged(spark: SparkSession, uri: str) -> DataFrame:
    """The rows of the staged Parquet folder ``uri``, read with its schema."""
    return spark.read.schema(staged_schema(spark, uri)).parquet(uri)


def nullable_schema(schema: T.StructType) -> T.StructType:
    """``schema`` with every field nullable, as a Parquet file's fields are read.

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
