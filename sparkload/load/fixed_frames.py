"""DataFrames fixed in the load package before the first commit of a load.

What a merge does to one table can depend on what another table held before this load
(which nested rows belong to replaced root rows, which root versions are new). After a
crash between two commits those tables have changed, so such frames are computed once,
written into the package, and read back on every attempt: a resumed load does exactly
what the first attempt would have done.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkload.common.folder import Folder

# Written after the frame's files: a frame without it is an attempt a crash cut short.
_SCHEMA_FILE = "_schema.json"


class FixedFrames:
    def __init__(self, spark: SparkSession, folder: Folder) -> None:
        self.spark = spark
        self.folder = folder

    def get(self, name: str, compute: Callable[[], DataFrame]) -> DataFrame:
        """The frame stored under ``name``; computed by ``compute`` and stored the first time."""
        target = self.folder.child(name)
        if not target.exists(_SCHEMA_FILE):
            frame = compute()
            frame.write.mode("overwrite").parquet(target.uri)
            target.write(_SCHEMA_FILE, frame.schema.json().encode())
        schema = T._parse_datatype_json_string(target.read(_SCHEMA_FILE).decode())
        assert isinstance(schema, T.StructType)
        if not target.has_files(".parquet"):  # the engine writes no file for no rows
            return self.spark.createDataFrame([], schema=schema)
        return self.spark.read.schema(schema).parquet(target.uri)
