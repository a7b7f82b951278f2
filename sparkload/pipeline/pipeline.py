"""The Pipeline: extract → normalize → load, with state committed after the data."""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from typing_extensions import Unpack

from sparkload import destinations
from sparkload.common import context
from sparkload.common.folder import Folder
from sparkload.common.package import list_packages
from sparkload.common.paths import reachable_path
from sparkload.common.state_record import PipelineState, empty_state
from sparkload.engine import resolve_spark
from sparkload.engine.checks import require_delta
from sparkload.engine.jvm_cluster import follow_s3_settings
from sparkload.engine.object_store import refuse_unsafe_jvm_commits
from sparkload.engine.session import is_own_session, starts_early
from sparkload.engine.settings import SESSION_CONF, session_settings
from sparkload.exceptions import SparkloadError
from sparkload.extract.hints import TableHintArgs
from sparkload.extract.load_hints import normalize_column_path
from sparkload.load import destructive
from sparkload.load.dataset import Dataset, PathDataset
from sparkload.pipeline import load_packages, pipeline_file, working_folder
from sparkload.pipeline import schema as schema_view
from sparkload.pipeline import state as state_store
from sparkload.pipeline.calls import TimeBound, locked, locked_engine_later, traced, untraced
from sparkload.pipeline.dataset_reader import ReadableDataset
from sparkload.pipeline.destination_dataset import open_dataset
from sparkload.pipeline.drop import DropResult, RefreshMode, drop_pipeline_resources
from sparkload.pipeline.engine_check import check_engine_sees
from sparkload.pipeline.load_info import LoadInfo
from sparkload.pipeline.load_step import load_staged
from sparkload.pipeline.lock import RunLock
from sparkload.pipeline.logs import apply_log_level
from sparkload.pipeline.normalize_step import normalize_extracted
from sparkload.pipeline.plan import Plan, plan_run
from sparkload.pipeline.progress import LogProgress, TqdmProgress
from sparkload.pipeline.run_step import extract_data, run_pipeline
from sparkload.pipeline.settings import pipeline_settings
from sparkload.pipeline.sql_client import SqlClient
from sparkload.pipeline.trace import PipelineTrace
from sparkload.pipeline.trace_file import read_trace

if TYPE_CHECKING:  # pyspark comes with the engine extra the user installs
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)


class Pipeline:
    """dlt's Pipeline: extract → normalize → load into Delta tables; made by ``pipeline()``,
    whose docstring describes the arguments."""

    def __init__(
        self,
        pipeline_name: str,
        destination: destinations.DeltaDestination,
        dataset_name: str,
        pipelines_dir: Path,
        dev_mode: bool = False,
        spark: SparkSession | str | None = None,
        progress: str | TqdmProgress | LogProgress | None = None,
        on_destructive_change: str = destructive.DEFAULT_POLICY,
        import_schema_path: str | os.PathLike[str] | None = None,
        export_schema_path: str | os.PathLike[str] | None = None,
        refresh: RefreshMode | None = None,
    ) -> None:
        apply_log_level()
        settings = pipeline_settings(
            pipeline_name,
            destination,
            dataset_name,
            pipelines_dir,
            dev_mode,
            progress,
            on_destructive_change,
            import_schema_path,
            export_schema_path,
            refresh,
        )
        self.pipeline_name, self.destination = settings.pipeline_name, settings.destination
        self.dataset_name, self.dev_mode = settings.dataset_name, settings.dev_mode
        self.pipelines_dir, self.working_dir = settings.pipelines_dir, settings.working_dir
        self.progress, self.refresh = settings.progress, settings.refresh
        self.on_destructive_change = settings.on_destructive_change
        self._schema_files = settings.schema_files
        self._lock = RunLock(settings.lock_file, self.pipeline_name)
        self._spark_arg = spark
        self._spark: SparkSession | None = None
        # Whether the engine's tasks read this machine's working folder (the engine check
        # says, when the engine starts); if not, the extracted files go to the destination.
        self._engine_reads_working_dir = True
        self._state: PipelineState | None = None
        # Whether _state was compared with the destination's since it was last read.
        self._state_synced = False
        # The destination's state as last read, read again only after a commit to its table.
        self._destination_state = state_store.DestinationState()
        # The trace this object last made, and the one its running method adds to.
        self._last_trace: PipelineTrace | None = None
        self._running_trace: PipelineTrace | None = None
        if dev_mode:  # a dev-mode pipeline starts from an empty working directory
            shutil.rmtree(self.working_dir, ignore_errors=True)
        self.working_dir.mkdir(parents=True, exist_ok=True)
        # The working directory as the engine reads it (whatever characters its path holds).
        self._reachable_dir = reachable_path(str(self.working_dir))
        pipeline_file.write_pipeline_file(self.working_dir, destination, self.dataset_name)
        # The tables this pipeline loads into (the engine starts when one is first touched).
        self.destination_dataset: Dataset = open_dataset(
            destination, lambda: self.spark, self.dataset_name, str(self.working_dir)
        )
        context.remember_pipeline(self)

    # -- properties ---------------------------------------------------------------------------
    @property
    def spark(self) -> SparkSession:
        """The SparkSession this pipeline runs on (the embedded engine starts on first use)."""
        if self._spark is None:
            spark = resolve_spark(self._spark_arg)
            require_delta(spark)
            # Before any file reaches the destination: the engine check writes markers there.
            # A JVM sparkload started earlier in this process takes the S3 settings of now
            # for the folder it reads and writes (the destination, or a catalog's staging).
            _, engine_folder = self.destination_dataset.checked_folder
            follow_s3_settings(spark, engine_folder)
            if isinstance(self.destination_dataset, PathDataset):
                refuse_unsafe_jvm_commits(spark, self.destination_dataset.uri)
            self._engine_reads_working_dir = check_engine_sees(
                spark, self._reachable_dir, self.destination_dataset.checked_folder
            )
            self._spark = spark
        return self._spark

    def _session_scope(self, wait_for_engine: bool = True) -> contextlib.AbstractContextManager[None]:
        """The settings sparkload's statements need, on a session that is the user's only
        for this call (sparkload's own sessions keep them). Without ``wait_for_engine``, the
        embedded engine, which the call starts itself as it begins, is not waited for here."""
        if not wait_for_engine and self._spark is None and starts_early(self._spark_arg):
            return contextlib.nullcontext()
        if is_own_session(self.spark):
            return contextlib.nullcontext()
        return session_settings(self.spark, SESSION_CONF)

    @property
    def dataset_uri(self) -> str:
        """The dataset's folder, or ``catalog.schema`` for tables in a catalog."""
        return self.destination_dataset.shown

    @property
    def packages_dir(self) -> Path:
        """Extracted packages waiting for normalize (local to this machine)."""
        return self.working_dir / "packages"

    @property
    def _extracted(self) -> Folder:
        return Folder(f"{self._reachable_dir}/{self.packages_dir.name}")

    @property
    def _staged(self) -> Folder:
        """Normalized packages waiting for their load, beside the data (or in the catalog
        destination's staging folder) so that any machine running this pipeline finishes them."""
        return self.destination_dataset.staging_folder(self.pipeline_name)

    @property
    def state(self) -> PipelineState:
        """dlt's ``pipeline.state``: the state the newest extract left while its package
        waits to load (its cursors already taken, as dlt's extract keeps them), else the
        committed state (``committed_state``). Reading it starts no engine."""
        pending = working_folder.pending_state(self)
        return pending if pending is not None else self.committed_state

    @property
    def committed_state(self) -> PipelineState:
        """The pipeline state as last committed: the working directory's copy, so reading it
        starts no engine; restored from the destination when the working directory has
        none. Every run first syncs with the destination."""
        if self._state is None:
            local = state_store.read_local(self.working_dir)
            if local is None:
                return self._synced_state()
            self._state, self._state_synced = local, False
        return self._state

    @property
    def local_state(self) -> PipelineState:
        """The state of the newest package waiting to load, else the state as the working
        directory last saw it committed (empty if it has none); read without the engine or
        the destination's state table: what a source function's body, or a source iterated
        by hand, sees of its state."""
        pending = working_folder.pending_state(self)
        if pending is not None:
            return pending
        if self._state is not None:
            return self._state
        return state_store.read_local(self.working_dir) or empty_state()

    def _synced_state(self) -> PipelineState:
        """The committed state, compared with the destination's once (see
        ``pipeline/working_folder.py``)."""
        return working_folder.synced_state(self)

    @property
    def default_schema_name(self) -> str | None:
        """dlt's: the schema's name (the pipeline's), None until the pipeline loads a table."""
        return self.pipeline_name if schema_view.has_schema(self.state) else None

    @property
    def default_schema(self) -> schema_view.Schema:
        """dlt's schema object, read from the loaded tables and the state (see
        ``pipeline/schema.py``); the tables of packages waiting to load are in it with the
        columns their extract (or normalize) found, as in dlt's after ``extract()``."""
        state = self.state
        with self._session_scope():
            return schema_view.read_schema(
                self.pipeline_name,
                state,
                self.destination_dataset,
                working_folder.pending_shapes(self, state),
            )

    @property
    def schemas(self) -> dict[str, schema_view.Schema]:
        """dlt's ``pipeline.schemas`` by name: the one schema, once the pipeline has one."""
        return {self.pipeline_name: self.default_schema} if self.default_schema_name else {}

    def table(self, name: str) -> DataFrame:
        """A destination table as a PySpark DataFrame: ``name`` as the resource gave it, or a
        nested table's ``parent__child`` path, normalized as the load names tables."""
        table = self.destination_dataset.table(normalize_column_path(name))
        if not table.exists():
            raise SparkloadError(f"table '{name}' does not exist in {self.destination_dataset.shown}")
        return table.read()

    def dataset(self, schema: str | schema_view.Schema | None = None) -> ReadableDataset:
        """dlt's ``pipeline.dataset()``: the loaded tables to read, as Spark DataFrames,
        Arrow, pandas or rows. A sparkload pipeline has one schema, so ``schema`` (accepted
        for dlt's signature) changes nothing."""
        return ReadableDataset(self.destination_dataset, self._session_scope)

    def sql_client(self, schema_name: str | None = None) -> SqlClient:
        """dlt's ``pipeline.sql_client()``: SQL in the engine's dialect over the dataset's
        tables (``client.execute_sql(...)`` returns the rows). ``schema_name`` is accepted for
        dlt's signature: a sparkload pipeline has one dataset."""
        return SqlClient(self.dataset())

    # -- the steps ----------------------------------------------------------------------------
    @locked_engine_later
    @traced("run")
    def run(
        self,
        data: object = None,
        *,
        table_name: str | None = None,
        execution_time: datetime.datetime | str | None = None,
        restate: Sequence[str] | None = None,
        start: TimeBound | None = None,
        end: TimeBound | None = None,
        refresh: RefreshMode | None = None,
        **hints: Unpack[TableHintArgs],
    ) -> LoadInfo:
        """Extract, normalize and load ``data``.

        If an earlier run left a package unfinished (a crash, a refused load), this run
        finishes that package instead and does not extract ``data``, as dlt's does: a run
        repeated after a crash then loads what the interrupted run would have loaded, once.

        ``restate`` (resource names, globs, ``tag:<glob>``) reprocesses [``start``, ``end``]
        for those resources and the transformers reading from them (see
        ``pipeline/restatement.py``); without it, ``start``/``end`` limit the run to the
        intervals it has not loaded inside [``start``, ``end``] (SQLMesh's ``run --start
        --end``; a date ``end`` is its whole day). ``refresh`` (dlt's ``"drop_sources"``,
        ``"drop_resources"``, ``"drop_data"``; default: the pipeline's) drops or truncates the
        extracted resources' tables and state in this run's first load (see
        ``pipeline/drop.py``).
        """
        return run_pipeline(
            self,
            data,
            hints,
            table_name=table_name,
            execution_time=execution_time,
            restate=restate,
            start=start,
            end=end,
            refresh=refresh,
        )

    @locked
    @untraced
    def plan(
        self,
        data: object,
        *,
        table_name: str | None = None,
        execution_time: datetime.datetime | str | None = None,
        restate: Sequence[str] | None = None,
        start: TimeBound | None = None,
        end: TimeBound | None = None,
        extract: bool = False,
        **hints: Unpack[TableHintArgs],
    ) -> Plan:
        """What ``run()`` with these arguments would do, computed without writing to the
        destination; ``plan.apply()`` does exactly that (see ``pipeline/plan.py``)."""
        return plan_run(
            self,
            data,
            hints,
            table_name=table_name,
            execution_time=execution_time,
            restate=restate,
            start=start,
            end=end,
            extract=extract,
        )

    @locked_engine_later
    @traced("extract")
    def extract(
        self,
        data: object,
        *,
        table_name: str | None = None,
        execution_time: datetime.datetime | str | None = None,
        refresh: RefreshMode | None = None,
        **hints: Unpack[TableHintArgs],
    ) -> str | None:
        """Run the resources into a new load package (one per batch of time intervals a
        resource has to load); returns the last load id, or None when nothing was due.
        ``refresh``: as ``run()``'s, dropped by the load of the first package."""
        return extract_data(
            self, data, hints, table_name=table_name, execution_time=execution_time, refresh=refresh
        )

    @locked
    @traced("normalize")
    def normalize(self) -> list[str]:
        """Normalize every extracted package into a package beside the dataset; returns
        their load ids."""
        return normalize_extracted(self)

    @locked
    @traced("load")
    def load(self) -> LoadInfo:
        """Load every normalized package, each followed by its state; returns what all of
        them loaded."""
        return load_staged(self)

    @locked
    def drop_pending_packages(self) -> None:
        """Discard load packages that were extracted but not loaded (dlt's method); tables
        a partly loaded package already committed keep its rows."""
        working_folder.delete_all_extracted(self)
        self._staged.delete()

    @property
    def first_run(self) -> bool:
        """True until a load of this pipeline has committed, as dlt's: read from the working
        directory alone, so it starts no engine."""
        local = state_store.read_local(self.working_dir)
        return local is None or int(local.get("_state_version", 0)) == 0

    @property
    def has_data(self) -> bool:
        """Whether the pipeline has loaded anything or holds a package to load, as dlt's."""
        return not self.first_run or self.has_pending_data

    @property
    def has_pending_data(self) -> bool:
        """Whether a package waits that a run can finish: completely extracted, or normalized
        beside the data. What a step cut short left is not: an incomplete normalized package
        whose extracted files are gone (a working directory emptied since) can never be
        completed and holds nothing to finish. A run that took it for pending data used to
        end having loaded nothing; the next run's normalize and load delete such leftovers."""
        return any(package.is_extracted() for package in list_packages(self._extracted)) or any(
            package.is_normalized() and not package.is_planned() for package in list_packages(self._staged)
        )

    @locked
    def drop(self) -> None:
        """Forget the local working directory: state and pending packages (not the data)."""
        shutil.rmtree(self.working_dir, ignore_errors=True)
        self.working_dir.mkdir(parents=True, exist_ok=True)
        self._state = None

    @locked
    def restore_working_folder(self) -> PipelineState:
        """Rebuild the working folder from the destination (dlt's ``pipeline sync``): its
        state, packages and records go, and the state the destination committed last is
        written in their place; returns that state. Normalized packages beside the dataset
        stay: they are the destination's, and the next run loads them. Refused, with the
        folder left as it is, when the destination holds no state of this pipeline."""
        return working_folder.restore(self)

    # -- load packages (dlt's names) -------------------------------------------------------------
    def list_extracted_load_packages(self) -> list[str]:
        """Load ids of the packages extracted and waiting for normalize, oldest first."""
        return [i.load_id for i in self.waiting_load_packages() if i.state == load_packages.EXTRACTED]

    def list_normalized_load_packages(self) -> list[str]:
        """Load ids of the normalized packages waiting for their load (partially loaded
        ones included), oldest first."""
        waiting = (load_packages.NORMALIZED, load_packages.PARTIALLY_LOADED)
        return [i.load_id for i in self.waiting_load_packages() if i.state in waiting]

    def list_completed_load_packages(self) -> list[str]:
        """Load ids of the recently loaded packages this working folder recorded, oldest first."""
        return load_packages.loaded_ids(self.working_dir)

    def get_load_package_info(self, load_id: str) -> load_packages.LoadPackageInfo:
        """A package, pending or recently loaded: its state, tables, rows and files."""
        found = next((i for i in self.waiting_load_packages() if i.load_id == load_id), None)
        found = found or load_packages.loaded_info(self.working_dir, load_id)
        if found is None:
            raise SparkloadError(f"pipeline '{self.pipeline_name}' has no load package {load_id}")
        return found

    def waiting_load_packages(self) -> list[load_packages.LoadPackageInfo]:
        """Every package not loaded yet, oldest first: pending ones and those a plan
        extracted for its apply()."""
        return load_packages.pending_infos(self._extracted, self._staged)

    @locked
    def drop_resources(
        self, resources: Sequence[str] | None = None, *, state_only: bool = False
    ) -> DropResult:
        """Drop resources' tables and state (all resources when none are named), so the next
        run loads them afresh; see ``sparkload.pipeline.drop``."""
        self._state_synced = False
        self._synced_state()  # what drop_pipeline_resources reads as pipeline.committed_state
        result = drop_pipeline_resources(self, resources, state_only=state_only)
        self._state = result.state
        return result

    @property
    def last_trace(self) -> PipelineTrace | None:
        """The trace of the last run: this object's if it ran, else the one saved in the
        working directory (by another process, or an earlier one); None if there is none."""
        if self._last_trace is not None:
            return self._last_trace
        return read_trace(self.working_dir)

    def _trace(self) -> PipelineTrace:
        """The trace the running method adds its steps to."""
        if self._running_trace is None:
            # Only traced (and planning) methods run steps; one called from elsewhere is
            # recorded nowhere rather than taken for a running method's.
            return PipelineTrace(self.pipeline_name)
        return self._running_trace

    def __repr__(self) -> str:
        return f"<pipeline '{self.pipeline_name}' → {self.dataset_uri}>"
