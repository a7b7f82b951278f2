"""DataFrames fixed in the load package before the first commit of a load.

What a merge does to one table can depend on what another table held before this load
(which nested rows belong to replaced root rows, which root versions are new). After a
crash between two commits those tables have changed, so such frames are computed once,
written into the package, and read back on every attempt: a resumed load does exactly
what the first attempt would have done.

A frame derived from the table it changes records that table's version: read when the
table is at another version (a concurrent writer committed since), it is computed again,
so a commit retried after losing a race never applies what it derived from old contents.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkload.common.engine_family import write_parquet
from sparkload.common.folder import Folder

# Written after the frame's files: a frame without it is an attempt a crash cut short.
_SCHEMA_FILE = "_schema.json"
# The version of the table the frame was derived from (for frames that name one).
_VERSION_FILE = "_table_version"


class FixedFrames:
    def __init__(self, spark: SparkSession, folder: Folder) -> None:
        self.spark = spark
        self.folder = folder

    def get(self, name: str, compute: Callable[[], DataFrame], version: str | None = None) -> DataFrame:
        """The frame stored under ``name``; computed by ``compute`` and stored the first
        time, and again whenever ``version`` (of the tables it was derived from, if given)
        is not the one it was stored with."""
        target = self.folder.child(name)
        if not target.exists(_SCHEMA_FILE) or self._stale(target, version):
            target.remove(_SCHEMA_FILE)
            frame = compute()
            write_parquet(frame, target.uri, "overwrite")
            if version is not None:
                target.write(_VERSION_FILE, version.encode())
            target.write(_SCHEMA_FILE, frame.schema.json().encode())
        schema = T._parse_datatype_json_string(target.read(_SCHEMA_FILE).decode())
        assert isinstance(schema, T.StructType)
        if not target.has_files(".parquet"):  # the engine writes no file for no rows
            return self.spark.createDataFrame([], schema=schema)
        return self.spark.read.schema(schema).parquet(target.uri)

    @staticmethod
    def _stale(target: Folder, version: str | None) -> bool:
        if version is None:
            return False
        return not target.exists(_VERSION_FILE) or target.read(_VERSION_FILE).decode() != version
