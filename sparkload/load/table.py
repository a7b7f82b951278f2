"""One destination Delta table: how it is addressed, whether it exists, its schema, its
version and the commits it has seen.

Two ways to address a table, one interface for the loader:
- ``PathTable``: a folder (``<destination>/<dataset>/<name>``); its commit log is read
  directly, through pyarrow's filesystems;
- ``CatalogTable``: a name in the session's catalog (``catalog.schema.name``: Unity
  Catalog, a Hive metastore, Sail's catalog); created with ``saveAsTable``, read with
  ``spark.read.table``, merged into by name. Its history comes from the engine where the
  engine tells it (``DESCRIBE HISTORY``), else from the log at the table's location.
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path

import pyarrow.fs as pafs
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import types as T

from sparkload.common import file_lock
from sparkload.common.engine_family import misreads_float_statistics
from sparkload.common.folder import filesystem
from sparkload.common.sql import delta_path, quote
from sparkload.common.system_columns import ID
from sparkload.engine.capabilities import commit_history, ignores_target_file_size
from sparkload.engine.object_store import is_s3_url
from sparkload.exceptions import LoadError
from sparkload.load import bucket_lock, delta_log
from sparkload.load.table_lock import CommitLock, FileLock

# Bytes per data file a write aims at (the engine cuts files of a partition at this size).
# A merge rewrites every file its key range overlaps: with files of 4 MiB a merge of 10,000
# keys into 10,000,000 rows rewrites about 480,000 rows (0.23–0.28 s), with 16 MiB about
# 2,240,000 (0.64 s); see docs/performance.md.
TARGET_FILE_SIZE = 4 * 1024 * 1024
# The table property naming the columns whose min/max the Delta log keeps for file skipping.
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
# Delta's default: statistics for the first 32 columns.
STATS_COLUMN_COUNT = 32
# How many of a table's newest commits are searched for a load's tag.
NEWEST_COMMITS = 20
# The folder beside a dataset's tables holding their commit locks (``table_lock``).
LOCKS_FOLDER = "_sparkload_locks"


def rows_per_file(rows: int, size: int) -> int | None:
    """The rows a data file of about ``TARGET_FILE_SIZE`` holds, for rows that took ``size``
    bytes as ``rows`` rows of Parquet (the load package's); None where nothing says."""
    if rows <= 0 or size <= 0:
        return None
    return max(1, rows * TARGET_FILE_SIZE // size)


def stats_columns(schema: T.StructType) -> str:
    """The value of ``delta.dataSkippingStatsColumns`` for a new table on the embedded engine:
    Delta's default (the first 32 columns) without floating-point columns.

    Statistics leave NaN out, and Sail 0.7.2 reads a file whose double column has min = max
    as that constant: ``[1.5, NaN]`` reads as ``[1.5, 1.5]``, and a MERGE that rewrites the
    file stores what it read. Without min/max for such columns the engine reads the values.
    Nothing skips files by a float's range (keys and time columns keep their statistics).
    """
    kept = [field.name for field in schema.fields if not _holds_floats(field.dataType)]
    return ",".join(quote(name) for name in kept[:STATS_COLUMN_COUNT])


def _holds_floats(dtype: T.DataType) -> bool:
    if isinstance(dtype, (T.DoubleType, T.FloatType)):
        return True
    return isinstance(dtype, T.StructType) and any(_holds_floats(f.dataType) for f in dtype.fields)


class Schemas:
    """The schemas the engine read of a dataset's tables, by table and newest commit.

    A table's schema is asked for by every check and statement of a load (destructive
    changes, key checks, type checks, the MERGE's columns); each engine read resolves the
    table's snapshot anew, a listing of its log and reads of its newest commits, which in a
    bucket are requests. A commit's schema never changes, so a schema is read once per
    commit: one listing of the log tells whether the commit read before is still the newest
    (``delta_log.newest_commit``), and any commit since, this load's or another writer's,
    makes the next ask a read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: dict[tuple[int, str], tuple[delta_log.CommitStamp, T.StructType]] = {}
        # How many times a schema was read with the engine (the work this cache saves).
        self.engine_reads = 0

    def of(self, table: PathTable) -> T.StructType | None:
        stamp = delta_log.newest_commit(table.uri)
        if stamp is None:
            return None
        key = (id(table.spark), table.uri)  # another engine may read the same commit otherwise
        with self._lock:
            known = self._read.get(key)
        if known is not None and known[0] == stamp:
            return known[1]
        schema = table.read().schema
        with self._lock:
            self.engine_reads += 1
            self._read[key] = (stamp, schema)
        return schema

    def forget(self, uri: str) -> None:
        """Forget what was read of the table at ``uri`` (dropped: a table made anew there
        starts again at version 0)."""
        with self._lock:
            for key in [key for key in self._read if key[1] == uri]:
                del self._read[key]


class DeltaTable:
    """What every table address shares; subclasses say where the table is."""

    # Whether an overwrite with the ``replaceWhere`` option replaces only the matching rows.
    # A write by path does on every engine; a write by name (``saveAsTable``) does on Delta
    # with Apache Spark, but Sail 0.7.2 overwrites the whole table without a word, so
    # catalog tables replace a window with a MERGE instead (one code path for all engines).
    replace_where = True

    def __init__(self, spark: SparkSession, name: str) -> None:
        self.spark = spark
        self.name = name
        # A full refresh sees its tables as not there yet (see ``emptied``).
        self._seen_empty = False
        # Rows per data file where the engine ignores ``target_file_size`` (``rows_per_file``
        # of this load's rows, set by the loader); None: the engine's own cut.
        self.file_rows: int | None = None

    # -- the address ------------------------------------------------------------------------
    @property
    def sql_name(self) -> str:
        """The table in a SQL statement (``MERGE INTO <sql_name>``), quoted."""
        raise NotImplementedError

    @property
    def shown(self) -> str:
        """The table as messages name it."""
        raise NotImplementedError

    def _exists(self) -> bool:
        raise NotImplementedError

    def read(self) -> DataFrame:
        raise NotImplementedError

    def _save(self, writer: DataFrameWriter, df: DataFrame) -> None:
        raise NotImplementedError

    def commit_tags(self) -> Iterable[tuple[int, str | None]]:
        """(version, userMetadata) of the newest commits, newest first."""
        raise NotImplementedError

    # -- what the loader asks ---------------------------------------------------------------
    def exists(self) -> bool:
        return not self._seen_empty and self._exists()

    def emptied(self) -> DeltaTable:
        """This table as a full refresh sees it before its commit: not there (its commit
        overwrites it)."""
        seen = copy.copy(self)
        seen._seen_empty = True
        return seen

    def schema(self) -> T.StructType | None:
        if not self.exists():
            return None
        return self.read().schema

    def version(self) -> int | None:
        return next((version for version, _ in self.commit_tags()), None)

    def committed_by(self, load_id: str) -> int | None:
        """The version a commit tagged with ``load_id`` made, if that commit happened."""
        return next((version for version, tag in self.commit_tags() if tag == load_id), None)

    def ids_removed_by(self, version: int) -> DataFrame | None:
        """The ``_sparkload_id`` of every row commit ``version`` removed from the table (in
        a file it removed, not in a file it added), read from the files themselves; None
        where the table's log is not at hand."""
        return None

    def recent_commits(self) -> delta_log.RecentCommits:
        """The newest commits, read once for every question asked of them: their tags, and
        whether rows of a load are in the table as their log tells without reading the rows
        (``holds_value``: None where the log does not tell)."""
        return delta_log.RecentCommits(list(self.commit_tags()))

    def commit_lock(self) -> CommitLock | None:
        """The lock ``table_lock`` takes around this table's commits (a new hold on it per
        call); None where there is none to take."""
        return None

    def one_listing(self) -> AbstractContextManager[None]:
        """Within: this table's log listed once for every question asked of it, until this
        process commits (``delta_log.one_listing_per_table``); for a commit's reads under
        the table's lock. Nothing is held where the log is not read directly."""
        return contextlib.nullcontext()

    def write(self, df: DataFrame, mode: str, load_id: str, **options: str) -> None:
        """One commit of ``df`` (``mode`` append or overwrite), tagged with ``load_id``."""
        # Files of bounded size hold narrow key ranges when rows arrive in key order, so a
        # later MERGE rewrites only the files its keys hit (the engine prunes by file stats).
        # delta-spark ignores ``target_file_size`` and cuts a file per task: there the rows
        # per file bound it (``file_rows``; a 1,000,000-row W1 table made ~6.7 MB files,
        # and its second load's MERGE copied 499,600 rows of them).
        writer = (
            df.write.format("delta")
            .mode(mode)
            .option("userMetadata", load_id)
            .option("target_file_size", str(TARGET_FILE_SIZE))
        )
        if self.file_rows is not None and ignores_target_file_size(self.spark):
            writer = writer.option("maxRecordsPerFile", str(self.file_rows))
        if misreads_float_statistics(self.spark) and not self._exists():
            writer = writer.option(STATS_COLUMNS, stats_columns(df.schema))
        for key, value in options.items():
            writer = writer.option(key, value)
        try:
            self._save(writer, df)
        finally:
            delta_log.forget_listings()


class PathTable(DeltaTable):
    """A table in a folder: ``<dataset_uri>/<name>``."""

    def __init__(
        self, spark: SparkSession, dataset_uri: str, name: str, schemas: Schemas | None = None
    ) -> None:
        super().__init__(spark, name)
        self.uri = f"{dataset_uri.rstrip('/')}/{name}"
        self._schemas = schemas if schemas is not None else Schemas()

    @property
    def sql_name(self) -> str:
        return delta_path(self.uri)

    @property
    def shown(self) -> str:
        return self.uri

    def _exists(self) -> bool:
        return delta_log.table_exists(self.uri)

    def schema(self) -> T.StructType | None:
        if self._seen_empty:
            return None
        return self._schemas.of(self)

    def ids_removed_by(self, version: int) -> DataFrame | None:
        files = delta_log.removed_files(self.uri, version)
        if files is None:
            return None
        removed, added = files
        schema = T.StructType([T.StructField(ID, T.StringType())])
        if not removed:
            return self.spark.createDataFrame([], schema=schema)
        gone = self.spark.read.parquet(*removed).select(ID)
        if added:
            gone = gone.join(self.spark.read.parquet(*added).select(ID), on=ID, how="left_anti")
        return gone

    def read(self) -> DataFrame:
        return self.spark.read.format("delta").load(self.uri)

    def recent_commits(self) -> delta_log.RecentCommits:
        return delta_log.LogTail(self.uri, NEWEST_COMMITS)

    def commit_lock(self) -> CommitLock | None:
        # Beside the tables, where no reader looks for one (a folder of no Delta log).
        lock_uri = f"{self.uri.rsplit('/', 1)[0]}/{LOCKS_FOLDER}/{self.name}.lock"
        if is_s3_url(lock_uri):
            return bucket_lock.lease(lock_uri)
        fs, path = filesystem(lock_uri)
        if not file_lock.SUPPORTED or not isinstance(fs, pafs.LocalFileSystem):
            return None
        return FileLock(Path(path))

    def one_listing(self) -> AbstractContextManager[None]:
        return delta_log.one_listing_per_table(self.uri)

    def _save(self, writer: DataFrameWriter, df: DataFrame) -> None:
        writer.save(self.uri)

    # The log is read directly: cheaper than asking the engine, and the same on every one.
    def version(self) -> int | None:
        return delta_log.latest_version(self.uri)  # no commit file read

    def commit_tags(self) -> Iterable[tuple[int, str | None]]:
        return delta_log.commit_tags(self.uri, NEWEST_COMMITS)


class CatalogTable(DeltaTable):
    """A table by name in the session's catalog: ``catalog.schema.name``."""

    replace_where = False

    def __init__(
        self,
        spark: SparkSession,
        catalog: str,
        schema: str,
        name: str,
        on_create: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(spark, name)
        self.parts = (catalog, schema, name)
        # Called before a write that creates the table (the schema may not exist yet).
        self._on_create = on_create

    @property
    def sql_name(self) -> str:
        return ".".join(quote(part) for part in self.parts)

    @property
    def shown(self) -> str:
        return ".".join(self.parts)

    def _exists(self) -> bool:
        return bool(self.spark.catalog.tableExists(self.sql_name))

    def read(self) -> DataFrame:
        return self.spark.read.table(self.sql_name)

    def _save(self, writer: DataFrameWriter, df: DataFrame) -> None:
        if self._on_create is not None and not self._exists():
            self._on_create()
        writer.saveAsTable(self.sql_name)

    def commit_tags(self) -> Iterable[tuple[int, str | None]]:
        if not self._exists():
            return []
        rows = commit_history(self.spark, self.sql_name, NEWEST_COMMITS)
        if rows is not None:
            return sorted(((int(row["version"]), row["userMetadata"]) for row in rows), reverse=True)
        location = self.location()
        tags = list(delta_log.commit_tags(location, NEWEST_COMMITS))
        if not tags:
            # Without the history a repeated load could commit twice: refuse instead.
            raise LoadError(
                f"table {self.shown}: the engine tells no commit history and its files at "
                f"{location} cannot be read from this process, so a load cannot be made "
                "exactly once; give the schema a location both reach (CREATE SCHEMA ... LOCATION)",
                table=self.name,
            )
        return tags

    def location(self) -> str:
        """Where the engine keeps the table's files, from ``DESCRIBE TABLE EXTENDED``. An
        engine that answers with a relative path (Sail's warehouse) means its own working
        directory, which is this process's for the embedded engine."""
        rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {self.sql_name}").collect()
        found = [row["data_type"] for row in rows if (row["col_name"] or "").strip() == "Location"]
        if not found:
            raise RuntimeError(f"the engine names no location for table {self.shown}")
        location = str(found[0])
        if location.startswith("file:"):
            location = location[len("file:") :]
            while location.startswith("//"):
                location = location[1:]
        return location if "://" in location else os.path.abspath(location)
