"""DataFrames fixed in the load package before the first commit of a load.

What a merge does to one table can depend on what another table held before this load
(which nested rows belong to replaced root rows, which root versions are new). After a
crash between two commits those tables have changed, so such frames are computed once,
written into the package, and read back on every attempt: a resumed load does exactly
what the first attempt would have done.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

_SCHEMA_FILE = "_schema.json"


class FixedFrames:
    def __init__(self, spark: SparkSession, directory: Path) -> None:
        self.spark = spark
        self.directory = directory

    def get(self, name: str, compute: Callable[[], DataFrame]) -> DataFrame:
        """The frame stored under ``name``; computed by ``compute`` and stored the first time."""
        target = self.directory / name
        schema_file = target / _SCHEMA_FILE
        if not schema_file.exists():
            # Written aside and renamed, so a crash never leaves a half-written frame behind.
            partial = target.with_name(target.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            frame = compute()
            frame.write.mode("overwrite").parquet(str(partial))
            partial.mkdir(parents=True, exist_ok=True)  # the engine writes no folder for no rows
            (partial / _SCHEMA_FILE).write_text(frame.schema.json())
            shutil.rmtree(target, ignore_errors=True)
            os.replace(partial, target)
        schema = T._parse_datatype_json_string(schema_file.read_text())
        assert isinstance(schema, T.StructType)
        if not any(target.glob("*.parquet")):
            return self.spark.createDataFrame([], schema=schema)
        return self.spark.read.schema(schema).parquet(str(target))
