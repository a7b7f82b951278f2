"""Commit a normalized load package to Delta, table by table, resumable after a failure.

A table whose commit for this load already happened (recorded in the package, or
recognised in the table itself) is skipped, so repeating a load never writes twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkload.common.folder import filesystem
from sparkload.common.hints import LoadHints
from sparkload.common.package import LOADED_MANIFEST, LoadPackage
from sparkload.common.side_by_side import run_side_by_side
from sparkload.common.state_record import MergeKeys
from sparkload.common.system_columns import LOAD_ID
from sparkload.engine.capabilities import ignores_target_file_size, merge_commits_carry_load_id
from sparkload.exceptions import LoadError, SparkloadError
from sparkload.load import (
    creation,
    delta_log,
    destructive,
    dispositions,
    keyed_merge,
    preflight,
    scd2,
    sequence,
    table_lock,
    time_range,
)
from sparkload.load.commits import TableAction, TableCommit
from sparkload.load.dataset import Dataset
from sparkload.load.fixed_frames import FixedFrames
from sparkload.load.merge_config import merge_config
from sparkload.load.merge_family import MergeFamily
from sparkload.load.retry import with_commit_retry
from sparkload.load.schema_check import check_types
from sparkload.load.table import NEWEST_COMMITS, DeltaTable, rows_per_file
from sparkload.normalize.manifest import NormalizeManifest
from sparkload.normalize.normalizer import NormalizedTable
from sparkload.normalize.typed import typed_rows

logger = logging.getLogger(__name__)

# Table commits of one load running at once: enough to overlap a root table with its
# nested tables; the engine, not this number, decides how much CPU they get.
_CONCURRENT_COMMITS = 4


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
        dataset: Dataset,
        package: LoadPackage,
        on_table: Callable[[str], None] | None = None,
        on_destructive_change: str = destructive.DEFAULT_POLICY,
        recorded_keys: Mapping[str, MergeKeys] | None = None,
        on_tables: Callable[[int], None] | None = None,
        manifest: NormalizeManifest | None = None,
    ) -> None:
        """``on_destructive_change`` applies to tables whose resource sets none;
        ``recorded_keys`` are the keys each table was last loaded with (from the state).
        ``on_tables`` is told how many tables the load commits, once they are prepared, and
        ``on_table`` each one's name once it is committed (a progress display).
        ``manifest``: the package's normalize manifest where the caller read it already
        (read here otherwise; in a bucket each read is two requests)."""
        self.spark = spark
        self.on_destructive_change = on_destructive_change
        self.recorded_keys = recorded_keys or {}
        self.dataset = dataset
        self.package = package
        self.load_id = package.load_id
        if manifest is None:
            manifest = NormalizeManifest.read(package)
        # A table a data-quality rule emptied (every row dropped) has nothing to load: its
        # family loads as one whose resource yielded no rows for it.
        self.tables = [table for table in manifest.tables if table.rows]
        self.hints = manifest.hints
        self.execution_time = datetime.datetime.fromisoformat(manifest.execution_time)
        self.done: dict[str, dict[str, Any]] = package.read_if_present(LOADED_MANIFEST) or {}
        self._on_table = on_table
        self._on_tables = on_tables
        self.creates = creation.Creates(package.creates_folder)
        self._record_lock = threading.Lock()
        # Warnings for the LoadInfo (rows dropped outside a time window).
        self.notes: list[str] = []
        self._checked = False

    def check(self) -> None:
        """Refuse the load, before it changes any table, for what the tables as they are
        now cannot take (destructive changes, keys, SCD Type 2 history). Run by ``load()``
        if not before; a refresh drops its tables only once the load has passed it."""
        if self._checked:
            return
        with delta_log.one_listing_per_table():  # the tables as of one moment
            self.notes += self._check_destructive_changes()
            self._check_keys_and_history()
        self._checked = True

    def load(self) -> list[TableLoad]:
        """Commit every table. All commits are prepared and checked against the tables'
        schemas first, so a load refused for a schema conflict changes no table."""
        self.check()
        commits: list[TableCommit] = []
        # Preparing reads the tables and changes none; each commit reads its table anew.
        with delta_log.one_listing_per_table():
            for root, hints in self.hints.items():
                family = [t for t in self.tables if t.root == root]
                with naming_the_table(root):
                    commits += self._prepare_family(root, family, hints)
        if self._on_tables is not None:
            # A package resumed after a crash does not commit again what it committed.
            self._on_tables(len({commit.table for commit in commits} - set(self.done)))
        self._commit_all(commits)
        # In the order the commits were prepared (root tables first), not the order the
        # side-by-side commits happened to end in.
        order = list(dict.fromkeys([commit.table for commit in commits] + list(self.done)))
        return [TableLoad(**self.done[name]) for name in order if name in self.done]

    def _commit_all(self, commits: list[TableCommit]) -> None:
        """Commit the tables side by side, each table's commits in turn. A commit that
        follows another table (a nested table its root) runs after that table's commits, in
        the same turn, and is skipped if they fail: it reads what they left in the table.
        Other commits depend on no other table's commit, and the engine overlaps their
        scans and writes. Every turn is tried even when another fails; the first failure
        is raised after all have ended."""
        tables = {commit.table for commit in commits}
        turns: dict[str, list[TableCommit]] = {}
        for commit in commits:
            first = commit.follows if commit.follows in tables else commit.table
            turns.setdefault(first, []).append(commit)
        for first, turn in turns.items():
            turn.sort(key=lambda commit: commit.table != first)  # stable: the rest keep their order

        def commit_in_turn(table_commits: list[TableCommit]) -> None:
            for commit in table_commits:
                self._commit(commit)

        tasks = [functools.partial(commit_in_turn, turn) for turn in turns.values()]
        run_side_by_side(tasks, _CONCURRENT_COMMITS, "commit")

    def _check_destructive_changes(self) -> list[str]:
        """Refuse (or note) destructive changes against the tables as they are now."""
        changes: list[destructive.DestructiveChange] = []
        policy_of: dict[str, str] = {}
        for root, hints in self.hints.items():
            family = [t for t in self.tables if t.root == root]
            policy = hints.on_destructive_change or self.on_destructive_change
            for table in family:
                policy_of[table.name] = policy
            policy_of.setdefault(root, policy)
            if hints.rebuilds:
                continue  # the table is rebuilt from this load: nothing of it is destroyed
            # A schema contract decides type changes itself, as in dlt: data_type "evolve"
            # lets the variant columns in; its other modes were applied at normalize.
            if hints.schema_contract is None:
                for table in family:
                    schema = self.dataset.table(table.name).schema()
                    changes += destructive.variant_changes(table, schema)
            if hints.disposition == "merge":
                changes += destructive.key_changes(root, hints, self.recorded_keys.get(root))
        return destructive.enforce(changes, policy_of)

    def _check_keys_and_history(self) -> None:
        """Refuse, before any commit, a merge key missing from the data or NULL in it, and a
        load of another kind into a table that keeps SCD Type 2 history (``preflight``)."""
        for root, hints in self.hints.items():
            if root in self.done:
                continue  # committed by an earlier attempt of this load
            root_table = next((t for t in self.tables if t.name == root), None)
            if root_table is None:
                continue  # the resource yielded nothing: no row to check
            data_columns = [spec.name for spec in root_table.columns] + root_table.system_columns
            if hints.disposition == "merge" and hints.merge_key:
                preflight.check_merge_key(root, hints, data_columns, self._typed(root_table))
            recorded = (self.recorded_keys.get(root) or {}).get(destructive.VALIDITY_STATE) or ()
            preflight.check_not_history(
                root, hints, self.dataset.table(root).schema(), data_columns, recorded
            )

    # -- one root table and its nested tables ---------------------------------------------
    def _prepare_family(
        self, root: str, family: list[NormalizedTable], hints: LoadHints
    ) -> list[TableCommit]:
        declared = disposition = hints.disposition
        strategy = hints.strategy
        keyless_merge = disposition == "merge" and strategy == "delete-insert"
        keyless_merge = keyless_merge and not (hints.primary_key or hints.merge_key)
        if keyless_merge:
            declared = disposition = "append"  # dlt: merge without keys falls back to append
        refresh = hints.refresh
        if refresh and disposition == "append":
            disposition = "replace"  # a refreshed append table holds this load's rows alone
        existing = self.dataset.table_names()
        existing_children = [name for name in existing if name.startswith(root + "__")]
        truncate = functools.partial(_truncate, load_id=self.load_id)

        time_ranged = disposition == "merge" and strategy == "time-range"
        if not family:
            if time_ranged:  # an empty window still replaces what the table held in it
                return self._prepare_merge(root, family, {}, hints, existing_children)
            # The resource yielded nothing: a replace (or refresh) still empties its tables,
            # as in dlt.
            if disposition != "replace" and not refresh:
                return []
            return [TableCommit(name, 0, declared, truncate) for name in [root, *existing_children]]
        frames = {t.name: self._typed(t) for t in family}
        if keyless_merge:
            hard_delete = merge_config(root, hints, self.execution_time).hard_delete
            frames = keyed_merge.without_deleted_rows(root, frames, hard_delete)
        rows = {t.name: t.rows for t in family}
        if disposition == "merge":
            commits = self._prepare_merge(root, family, frames, hints, existing_children, refresh)
            if refresh:
                # Nothing of the old loads stays in the tables this load does not fill.
                filled = {commit.table for commit in commits}
                commits += [
                    TableCommit(name, 0, declared, truncate)
                    for name in [*existing_children, sequence.tombstone_table(root)]
                    if name in existing and name not in filled
                ]
            return commits
        if disposition == "append":
            return [self._append(t.name, rows[t.name], declared, frames[t.name]) for t in family]
        commits = [
            TableCommit(
                t.name,
                rows[t.name],
                declared,
                functools.partial(dispositions.replace, df=frames[t.name], load_id=self.load_id),
            )
            for t in family
        ]
        commits += [
            TableCommit(name, 0, declared, truncate) for name in existing_children if name not in frames
        ]
        return commits

    def _append(self, name: str, rows: int, label: str, df: DataFrame) -> TableCommit:
        check_types(df, self.dataset.table(name).schema(), name)
        return TableCommit(
            name, rows, label, functools.partial(dispositions.append, df=df, load_id=self.load_id)
        )

    def _prepare_merge(
        self,
        root: str,
        family: list[NormalizedTable],
        frames: dict[str, DataFrame],
        hints: LoadHints,
        existing_children: list[str],
        refresh: bool = False,
    ) -> list[TableCommit]:
        config = merge_config(root, hints, self.execution_time)
        root_info = next((t for t in family if t.name == root), None)
        merging = MergeFamily(
            spark=self.spark,
            dataset=self.dataset,
            load_id=self.load_id,
            config=config,
            root=root,
            frames=frames,
            rows={t.name: t.rows for t in family},
            children=[t.name for t in family if t.name != root]
            + [name for name in existing_children if name not in frames],
            fixed=FixedFrames(self.spark, self.package.fixed_folder),
            creates=self.creates,
            refresh=refresh,
            # Normalize counted the distinct keys where the strategy asks for duplicates
            # (LoadHints.merge_asks_for_duplicate_keys); no count reads as "maybe".
            has_duplicates=bool(config.primary_key)
            and root_info is not None
            and (root_info.distinct_keys is None or root_info.distinct_keys < root_info.rows),
            bounds={t.name: t.bounds for t in family},
        )
        if config.strategy == "time-range":
            window = time_range.TimeRange.from_hints(hints)
            prepared = time_range.prepare(merging, window)
            if prepared.outside:
                note = (
                    f"table '{root}': {prepared.outside} rows outside the window "
                    f"{window.start.isoformat()} – {window.end.isoformat()} were not loaded"
                )
                logger.warning(note)
                self.notes.append(note)
            return prepared.commits
        if config.strategy == "scd2":
            return scd2.prepare(merging)
        return keyed_merge.prepare(merging)

    # -- committing ------------------------------------------------------------------------
    def _typed(self, table: NormalizedTable) -> DataFrame:
        return typed_rows(self.spark, self.package.normalized_table_uri(table.rows_folder), table)

    def _commit(self, commit: TableCommit) -> None:
        name = commit.table
        if name in self.done:
            return
        with naming_the_table(name):
            table = self.dataset.table(name)
            table.file_rows = self._file_rows(name)
            with table.one_listing():  # its questions answered as of one moment
                committed = self._already_committed(table, commit.disposition)
            if not committed:
                with_commit_retry(lambda: _locked(commit.action, table), f"table '{name}'")
            settle = commit.settle
            if settle is not None:
                with_commit_retry(lambda: _locked(settle, table), f"table '{name}'")
        loaded = TableLoad(name, commit.rows, table.version(), commit.disposition).to_dict()
        with self._record_lock:
            self.done[name] = loaded
            self.package.write(LOADED_MANIFEST, self.done)
            if self._on_table is not None:
                self._on_table(name)

    def _file_rows(self, name: str) -> int | None:
        """Rows per data file of table ``name`` (``table.rows_per_file``), from its rows
        in the package and the bytes they take there; None where the engine sizes files
        itself or the load has no rows for it."""
        if not ignores_target_file_size(self.spark):
            return None
        staged = next((t for t in self.tables if t.name == name), None)
        if staged is None:
            return None
        uri = self.package.normalized_table_uri(staged.rows_folder)
        fs, path = filesystem(uri)
        files = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        size = sum(info.size or 0 for info in files if info.type == pafs.FileType.File)
        return rows_per_file(staged.rows, size)

    def _already_committed(self, table: DeltaTable, disposition: str) -> bool:
        if not table.exists():
            return False
        if disposition == "merge" and creation.lost_create_race(table, self.load_id, self.creates):
            return False  # its rows may stand beside another writer's: withdrawn and merged again
        recent = table.recent_commits()  # the tags, then maybe the statistics: one read
        tags = list(recent.tags())
        if any(tag == self.load_id for _, tag in tags):
            return True
        if disposition != "merge":
            return False
        # Where MERGE commits carry the load id, the log answers, unless this load's commit
        # may lie before the newest commits it tells (the table has more).
        if merge_commits_carry_load_id(self.spark) and len(tags) < NEWEST_COMMITS:
            return False
        # Elsewhere MERGE commits carry no userMetadata; the rows they insert do, and the
        # statistics of the files they add tell where those rows can be.
        in_log = recent.holds_value(LOAD_ID, self.load_id)
        if in_log is not None:
            return in_log
        logger.debug("looking for rows of load %s in table %s", self.load_id, table.shown)
        return bool(table.read().where(F.col(LOAD_ID) == F.lit(self.load_id)).limit(1).count())


def _locked(action: TableAction, table: DeltaTable) -> None:
    """One attempt of a commit, its reads and its write, holding the table's lock
    (``table_lock``: the engine would not see another writer's commit landing between)."""
    with table_lock.held(table) as locked:  # noqa: SIM117 (the inner one needs `locked`)
        # Under the lock no other writer commits to the table: its reads share one listing.
        with table.one_listing() if locked else contextlib.nullcontext():
            action(table)


@contextlib.contextmanager
def naming_the_table(table: str) -> Iterator[None]:
    """An engine's error while ``table`` is prepared or committed, as a LoadError naming
    the table: the engine's own message names a file or a plan node at best, and a load
    commits many tables side by side. sparkload's own errors name what they are about."""
    try:
        yield
    except SparkloadError:
        raise
    except Exception as exc:
        raise LoadError(f"table '{table}': {type(exc).__name__}: {exc}", table=table) from exc
