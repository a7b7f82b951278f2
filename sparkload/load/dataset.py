"""A dataset: the tables one pipeline loads into, and where its load packages wait.

- ``PathDataset``: the folder ``<bucket_url>/<dataset_name>``, one folder per table;
  packages wait in ``_sparkload_packages`` inside it, so any machine finishes them.
- ``CatalogDataset``: the schema ``<catalog>.<dataset_name>`` of the session's catalog,
  tables addressed by name; a catalog has no folder of its own, so packages wait under a
  staging folder the pipeline names (the destination's ``staging_url``, else the
  pipeline's working directory).

Only a normalized table name reaches a table's path or SQL name (``check_table_name``), and
local folders are handed to the engine and delta-rs as ``reachable_path`` gives them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pyspark.sql import SparkSession

from sparkload.common.folder import Folder
from sparkload.common.naming import RESERVED_TABLE_PREFIX
from sparkload.common.package import PACKAGES_FOLDER
from sparkload.common.paths import check_table_name, reachable_path
from sparkload.common.sql import quote
from sparkload.load import delta_log
from sparkload.load.table import CatalogTable, DeltaTable, PathTable, Schemas

# sparkload's own tables and folders in a dataset (the state table, staged packages):
# never a resource's table.
SYSTEM_PREFIX = RESERVED_TABLE_PREFIX


class Dataset:
    """What the loader, the state and drop need of a dataset, wherever it is.

    ``session`` gives the SparkSession: called on first use only, so that what needs no
    engine (where packages wait) does not start one."""

    # The dataset as messages and LoadInfo name it: a path or ``catalog.schema``.
    shown: str

    def __init__(self, session: Callable[[], SparkSession]) -> None:
        self._session = session

    @property
    def spark(self) -> SparkSession:
        return self._session()

    def table(self, name: str) -> DeltaTable:
        raise NotImplementedError

    def table_names(self) -> list[str]:
        """The Delta tables in the dataset, sparkload's own included."""
        raise NotImplementedError

    def user_tables(self) -> list[str]:
        """The tables a drop may delete: every table but sparkload's own, and what a deletion
        cut short left of one."""
        raise NotImplementedError

    def drop_table(self, name: str) -> None:
        """Delete the table ``name``; nothing happens if it is not there."""
        raise NotImplementedError

    def staging_folder(self, pipeline_name: str) -> Folder:
        """Where the pipeline's normalized packages wait for their load."""
        raise NotImplementedError

    @property
    def checked_folder(self) -> tuple[str, str]:
        """(what it is, uri): the folder besides the working directory the engine must see."""
        raise NotImplementedError


class PathDataset(Dataset):
    def __init__(self, session: Callable[[], SparkSession], uri: str) -> None:
        super().__init__(session)
        self.shown = uri.rstrip("/")
        # Every consumer reaches the folder by this path; messages show the one the user gave.
        self.uri = reachable_path(self.shown)
        # Shared by every table object of the dataset: a schema is read once per commit.
        self.schemas = Schemas()

    def table(self, name: str) -> DeltaTable:
        return PathTable(self.spark, self.uri, check_table_name(name), self.schemas)

    def table_names(self) -> list[str]:
        return delta_log.list_tables(self.uri)

    def user_tables(self) -> list[str]:
        # Folders, not only complete Delta tables: what a cut-short deletion left of a
        # table must still be found to be deleted.
        return [name for name in Folder(self.uri).subfolders() if not name.startswith(SYSTEM_PREFIX)]

    def drop_table(self, name: str) -> None:
        table = Folder(self.uri).child(check_table_name(name))
        self.schemas.forget(table.uri)
        # The transaction log goes first: without it the folder is no table to any reader,
        # so a deletion cut short never leaves a table that lacks some of its data files.
        table.child("_delta_log").delete()
        table.delete()

    def staging_folder(self, pipeline_name: str) -> Folder:
        return Folder(f"{self.uri}/{PACKAGES_FOLDER}/{pipeline_name}")

    @property
    def checked_folder(self) -> tuple[str, str]:
        return "the destination", self.uri


class CatalogDataset(Dataset):
    def __init__(
        self, session: Callable[[], SparkSession], catalog: str, schema: str, staging_uri: str
    ) -> None:
        super().__init__(session)
        self.catalog = catalog
        self.schema = schema
        self.staging_uri = reachable_path(staging_uri.rstrip("/"))
        self.shown = f"{catalog}.{schema}"
        self._schema_made = False
        self._lock = threading.Lock()

    @property
    def sql_name(self) -> str:
        return f"{quote(self.catalog)}.{quote(self.schema)}"

    def table(self, name: str) -> DeltaTable:
        return CatalogTable(
            self.spark, self.catalog, self.schema, check_table_name(name), on_create=self._make_schema
        )

    def _make_schema(self) -> None:
        """Create the schema before the first table in it (once per dataset object)."""
        with self._lock:
            if not self._schema_made:
                self.spark.sql(f"CREATE SCHEMA IF NOT EXISTS {self.sql_name}")
                self._schema_made = True

    def _schema_exists(self) -> bool:
        return bool(self.spark.catalog.databaseExists(self.sql_name))

    def table_names(self) -> list[str]:
        if not self._schema_exists():
            return []
        rows = self.spark.sql(f"SHOW TABLES IN {self.sql_name}").collect()
        return sorted(str(row["tableName"]) for row in rows if not row["isTemporary"])

    def user_tables(self) -> list[str]:
        return [name for name in self.table_names() if not name.startswith(SYSTEM_PREFIX)]

    def drop_table(self, name: str) -> None:
        self.spark.sql(f"DROP TABLE IF EXISTS {self.table(name).sql_name}")

    def staging_folder(self, pipeline_name: str) -> Folder:
        return Folder(f"{self.staging_uri}/{PACKAGES_FOLDER}/{pipeline_name}")

    @property
    def checked_folder(self) -> tuple[str, str]:
        return "the staging folder", self.staging_uri
