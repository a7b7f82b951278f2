"""Commit a normalized load package to Delta, table by table, resumable after a failure.

A table whose commit for this load already happened (recorded in the package, or
recognised in the table itself) is skipped, so repeating a load never writes twice.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.exceptions import LoadError
from sparkload.load import dispositions
from sparkload.load.delta_log import list_tables
from sparkload.load.retry import with_commit_retry
from sparkload.load.schema_check import check_types, nullable_schema
from sparkload.load.sql import quote
from sparkload.load.table import DeltaTable
from sparkload.normalize.normalizer import ID, LOAD_ID, ROOT_ID, NormalizedTable
from sparkload.pipeline.package import LOADED_MANIFEST, NORMALIZE_MANIFEST, LoadPackage

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class _Commit:
    """One table's commit, prepared (and checked) before any table is committed."""

    table: str
    rows: int
    disposition: str
    action: Callable[[DeltaTable], None]


def _append(table: DeltaTable, df: DataFrame, load_id: str) -> None:
    dispositions.append(table, df, load_id)


def _replace(table: DeltaTable, df: DataFrame, load_id: str) -> None:
    dispositions.replace(table, df, load_id)


def _truncate(table: DeltaTable, load_id: str) -> None:
    if table.exists():
        dispositions.truncate(table, load_id)


@dataclasses.dataclass
class TableLoad:
    table: str
    rows: int
    version: int | None
    disposition: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Loader:
    def __init__(
        self,
        spark: SparkSession,
        dataset_uri: str,
        package: LoadPackage,
        on_table: Callable[[str], None] | None = None,
    ) -> None:
        self.spark = spark
        self.dataset_uri = dataset_uri
        self.package = package
        self.load_id = package.load_id
        manifest = package.read(NORMALIZE_MANIFEST)
        self.tables = [NormalizedTable.from_dict(t) for t in manifest["tables"]]
        self.hints: dict[str, dict[str, Any]] = manifest["hints"]
        loaded_path = package.path / LOADED_MANIFEST
        self.done: dict[str, dict[str, Any]] = package.read(LOADED_MANIFEST) if loaded_path.exists() else {}
        self._on_table = on_table

    def load(self) -> list[TableLoad]:
        """Commit every table. All commits are prepared and checked against the tables'
        schemas first, so a load refused for a schema conflict changes no table."""
        commits: list[_Commit] = []
        for root, hints in self.hints.items():
            family = [t for t in self.tables if t.root == root]
            commits += self._prepare_family(root, family, hints)
        for commit in commits:
            self._commit(commit)
        return [TableLoad(**entry) for entry in self.done.values()]

    # -- one root table and its nested tables ---------------------------------------------
    def _prepare_family(
        self, root: str, family: list[NormalizedTable], hints: dict[str, Any]
    ) -> list[_Commit]:
        wd = hints["write_disposition"]
        declared = disposition = wd["disposition"]
        primary_key = list(hints.get("primary_key") or [])
        merge_key = list(hints.get("merge_key") or [])
        if disposition == "merge" and not (primary_key or merge_key):
            declared = disposition = "append"  # dlt: merge without keys falls back to append
        if disposition == "merge" and wd.get("strategy", "delete-insert") != "delete-insert":
            raise LoadError(f"table '{root}': merge strategy '{wd['strategy']}' is not available")
        existing_children = [name for name in list_tables(self.dataset_uri) if name.startswith(root + "__")]
        truncate = functools.partial(_truncate, load_id=self.load_id)

        if not family:
            # The resource yielded nothing: a replace still empties its tables, as in dlt.
            if disposition != "replace":
                return []
            return [_Commit(name, 0, declared, truncate) for name in [root, *existing_children]]
        frames = {t.name: self._typed(t) for t in family}
        rows = {t.name: t.rows for t in family}
        root_table = DeltaTable(self.spark, self.dataset_uri, root)
        if disposition == "merge":
            root_info = next(t for t in family if t.name == root)
            if root_info.distinct_keys is None or root_info.distinct_keys < root_info.rows:
                frames, rows = self._deduplicate(root, frames, rows, hints, primary_key)
            if not root_table.exists():
                disposition = "append"  # the first merge creates the tables
        if disposition == "append":
            return [self._append(t.name, rows[t.name], declared, frames[t.name]) for t in family]
        if disposition == "replace":
            commits = [
                _Commit(
                    t.name,
                    rows[t.name],
                    declared,
                    functools.partial(_replace, df=frames[t.name], load_id=self.load_id),
                )
                for t in family
            ]
            commits += [
                _Commit(name, 0, declared, truncate) for name in existing_children if name not in frames
            ]
            return commits
        return self._prepare_merge(root, family, frames, rows, primary_key, merge_key, existing_children)

    def _append(self, name: str, rows: int, label: str, df: DataFrame) -> _Commit:
        check_types(df, DeltaTable(self.spark, self.dataset_uri, name).schema(), name)
        return _Commit(name, rows, label, functools.partial(_append, df=df, load_id=self.load_id))

    def _prepare_merge(
        self,
        root: str,
        family: list[NormalizedTable],
        frames: dict[str, DataFrame],
        rows: dict[str, int],
        primary_key: list[str],
        merge_key: list[str],
        existing_children: list[str],
    ) -> list[_Commit]:
        root_table = DeltaTable(self.spark, self.dataset_uri, root)
        children = [t.name for t in family if t.name != root] + [
            name for name in existing_children if name not in frames
        ]
        child_schemas = {name: DeltaTable(self.spark, self.dataset_uri, name).schema() for name in children}
        for name, schema in child_schemas.items():
            if schema is not None and ROOT_ID not in schema.fieldNames():
                raise LoadError(
                    f"nested table '{name}' has no {ROOT_ID} column, so merge cannot remove the "
                    f"nested rows of replaced '{root}' rows; load it with root_key=True first"
                )
        check_types(frames[root], root_table.schema(), root)
        deletes = self._deletes(root_table, frames[root], [primary_key, merge_key])
        # Markers carry the deleted rows' own key values, so comparing keys is exact; a
        # merge key may be NULL in old rows, a primary key found by the join is not.
        match = [(ID, False)] + (
            [(k, True) for k in merge_key] if merge_key else [(k, False) for k in primary_key]
        )
        merge = functools.partial(dispositions.merge_delete_insert, load_id=self.load_id)
        commits = [
            _Commit(
                root,
                rows[root],
                "merge",
                functools.partial(merge, df=frames[root], markers=deletes, match=match),
            )
        ]
        root_deletes = deletes.select(F.col(ID).alias(ROOT_ID))
        for name in children:
            df = frames.get(name)
            if child_schemas[name] is None:
                if df is not None:
                    commits.append(self._append(name, rows[name], "merge", df))
                continue
            if df is None:
                df = DeltaTable(self.spark, self.dataset_uri, name).read().limit(0)
            else:
                check_types(df, child_schemas[name], name)
            action = functools.partial(merge, df=df, markers=root_deletes, match=[(ROOT_ID, False)])
            commits.append(_Commit(name, rows.get(name, 0), "merge", action))
        return commits

    def _deletes(self, table: DeltaTable, df: DataFrame, keys: list[list[str]]) -> DataFrame:
        """Destination row ids this merge replaces, fixed in the package before any commit
        so a repeated load deletes exactly the same rows."""
        target = self.package.path / "deletes" / table.name
        schema_file = target / "_schema.json"
        if not schema_file.exists():
            # Written aside and renamed, so a crash never leaves a half-written set behind.
            partial = target.with_name(table.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            rows = dispositions.rows_to_delete(table, df, keys)
            rows.write.mode("overwrite").parquet(str(partial))
            partial.mkdir(parents=True, exist_ok=True)  # the engine writes no folder for no rows
            (partial / "_schema.json").write_text(rows.schema.json())
            shutil.rmtree(target, ignore_errors=True)
            os.replace(partial, target)
        schema = T._parse_datatype_json_string(schema_file.read_text())
        assert isinstance(schema, T.StructType)
        if not any(target.glob("*.parquet")):
            return self.spark.createDataFrame([], schema=schema)
        return self.spark.read.schema(schema).parquet(str(target))

    def _deduplicate(
        self,
        root: str,
        frames: dict[str, DataFrame],
        rows: dict[str, int],
        hints: dict[str, Any],
        primary_key: list[str],
    ) -> tuple[dict[str, DataFrame], dict[str, int]]:
        wd = hints["write_disposition"]
        if not primary_key or wd.get("deduplicated", True) is False:
            return frames, rows
        sort = next(
            (
                (name, str(col["dedup_sort"]))
                for name, col in hints.get("columns", {}).items()
                if col.get("dedup_sort")
            ),
            None,
        )
        root_df = dispositions.deduplicate(frames[root], primary_key, sort)
        kept = root_df.select(F.col(ID).alias(ROOT_ID))
        out = {root: root_df}
        counts = dict(rows)
        counts[root] = root_df.count()
        for name, df in frames.items():
            if name != root:
                # Nested rows of dropped duplicates go with them.
                out[name] = df.join(kept, on=ROOT_ID, how="left_semi") if ROOT_ID in df.columns else df
                counts[name] = out[name].count()
        return out, counts

    # -- committing ------------------------------------------------------------------------
    def _typed(self, table: NormalizedTable) -> DataFrame:
        path = str(self.package.normalized_table_dir(table.name))
        schema = nullable_schema(self.spark.read.parquet(path).schema)
        staged = self.spark.read.schema(schema).parquet(path)
        columns = [spec.expression() for spec in table.columns]
        columns += [F.col(quote(name)) for name in table.system_columns]
        return staged.select(*columns)

    def _commit(self, commit: _Commit) -> None:
        name = commit.table
        if name in self.done:
            return
        table = DeltaTable(self.spark, self.dataset_uri, name)
        if not self._already_committed(table, commit.disposition):
            with_commit_retry(lambda: commit.action(table), f"table '{name}'")
        self.done[name] = TableLoad(name, commit.rows, table.version(), commit.disposition).to_dict()
        self.package.write(LOADED_MANIFEST, self.done)
        if self._on_table is not None:
            self._on_table(name)

    def _already_committed(self, table: DeltaTable, disposition: str) -> bool:
        if not table.exists():
            return False
        if table.committed_by(self.load_id) is not None:
            return True
        if disposition == "merge":
            # MERGE commits carry no userMetadata on every engine; the rows they insert do.
            return bool(table.read().where(F.col(LOAD_ID) == F.lit(self.load_id)).limit(1).count())
        return False
