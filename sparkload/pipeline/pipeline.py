"""The Pipeline: extract → normalize → load, with state committed after the data."""

from __future__ import annotations

import copy
import datetime
import functools
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from sparkload import destinations
from sparkload.engine import resolve_spark
from sparkload.exceptions import NormalizeError, PipelineStepFailed, SparkloadError
from sparkload.extract.extractor import ExtractedTable, Extractor
from sparkload.load.loader import Loader
from sparkload.load.table import DeltaTable
from sparkload.normalize.json_schema import SchemaInference
from sparkload.normalize.normalizer import TableNormalizer
from sparkload.pipeline import current, pipeline_file, resource_tables
from sparkload.pipeline import state as state_store
from sparkload.pipeline.drop import DropResult, drop_pipeline_resources
from sparkload.pipeline.load_info import LoadInfo, StepTiming
from sparkload.pipeline.lock import RunLock
from sparkload.pipeline.package import EXTRACT_MANIFEST, NORMALIZE_MANIFEST, LoadPackage, list_packages
from sparkload.pipeline.plan import build_plan
from sparkload.pipeline.progress import Progress
from sparkload.pipeline.trace import PipelineTrace

_last_pipeline: list[Pipeline | None] = [None]


def last_pipeline() -> Pipeline | None:
    return _last_pipeline[0]


def _default_pipelines_dir() -> Path:
    return Path(os.environ.get("SPARKLOAD_PIPELINES_DIR", Path.home() / ".sparkload" / "pipelines"))


def _new_load_id() -> str:
    # Wall-clock based like dlt's, so ids sort in creation order; not the execution_time,
    # which tests fix and two runs may share.
    return f"{time.time():.6f}"


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _locked(method: _Method) -> _Method:
    """Run ``method`` holding the pipeline's run lock (one run of a pipeline at a time)."""

    @functools.wraps(method)
    def locked(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
        with self._lock.held():
            return method(self, *args, **kwargs)

    return cast(_Method, locked)


class Pipeline:
    def __init__(
        self,
        pipeline_name: str,
        destination: destinations.DeltaDestination,
        dataset_name: str,
        pipelines_dir: Path,
        dev_mode: bool = False,
        spark: Any = None,
        progress: str | None = None,
    ) -> None:
        self.pipeline_name = pipeline_name
        self.destination = destination
        self.dev_mode = dev_mode
        self.dataset_name = dataset_name
        self.pipelines_dir = pipelines_dir
        self.working_dir = pipelines_dir / pipeline_name
        # Beside the working directory, so drop() (which removes that) keeps the lock.
        self._lock = RunLock(pipelines_dir / f".{pipeline_name}.lock", pipeline_name)
        self.progress = Progress(progress)
        self._spark_arg = spark
        self._spark: Any = None
        self._state: dict[str, Any] | None = None
        self.last_trace: PipelineTrace | None = None
        if dev_mode:
            shutil.rmtree(self.working_dir, ignore_errors=True)
            stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d%H%M%S%f")
            self.dataset_name = f"{dataset_name}_{stamp}"
        self.working_dir.mkdir(parents=True, exist_ok=True)
        pipeline_file.write_pipeline_file(self.working_dir, destination.bucket_url, self.dataset_name)
        _last_pipeline[0] = self

    # -- properties ---------------------------------------------------------------------------
    @property
    def spark(self) -> Any:
        """The SparkSession this pipeline runs on (the embedded engine starts on first use)."""
        if self._spark is None:
            self._spark = resolve_spark(self._spark_arg)
        return self._spark

    @property
    def dataset_uri(self) -> str:
        return self.destination.dataset_uri(self.dataset_name)

    @property
    def packages_dir(self) -> Path:
        return self.working_dir / "packages"

    @property
    def state(self) -> dict[str, Any]:
        """The pipeline state as last committed (restored from the destination if the
        working directory has none)."""
        if self._state is None:
            local = state_store.read_local(self.working_dir)
            remote = state_store.read_destination(self.spark, self.dataset_uri, self.pipeline_name)
            candidates = [s for s in (local, remote) if s is not None]
            self._state = (
                max(candidates, key=lambda s: s.get("_state_version", 0))
                if candidates
                else state_store.empty_state()
            )
        return self._state

    def table(self, name: str) -> Any:
        """A destination table as a PySpark DataFrame."""
        table = DeltaTable(self.spark, self.dataset_uri, name)
        if not table.exists():
            raise SparkloadError(f"table '{name}' does not exist in {self.dataset_uri}")
        return table.read()

    # -- the steps ----------------------------------------------------------------------------
    @_locked
    def run(
        self,
        data: Any = None,
        *,
        table_name: str | None = None,
        write_disposition: Any = None,
        primary_key: Any = None,
        merge_key: Any = None,
        columns: Any = None,
        execution_time: datetime.datetime | None = None,
    ) -> LoadInfo:
        """Finish any package left by an interrupted run, then extract, normalize and load."""
        self.last_trace = PipelineTrace(self.pipeline_name)
        if any(list_packages(self.packages_dir)):
            self.normalize()
            self.load()
        if data is None:
            return self.last_trace.last_load_info or LoadInfo(self.pipeline_name, self.dataset_uri, None)
        self.extract(
            data,
            table_name=table_name,
            write_disposition=write_disposition,
            primary_key=primary_key,
            merge_key=merge_key,
            columns=columns,
            execution_time=execution_time,
        )
        self.normalize()
        return self.load()

    @_locked
    def extract(
        self,
        data: Any,
        *,
        table_name: str | None = None,
        write_disposition: Any = None,
        primary_key: Any = None,
        merge_key: Any = None,
        columns: Any = None,
        execution_time: datetime.datetime | None = None,
    ) -> str:
        """Run the resources into a new load package; returns its load id."""
        trace = self._trace()
        clock = execution_time or datetime.datetime.now(datetime.timezone.utc)
        load_id = _new_load_id()
        package = LoadPackage(self.packages_dir, load_id)
        hint_changes = {
            "write_disposition": write_disposition,
            "primary_key": primary_key,
            "merge_key": merge_key,
            "columns": columns,
        }
        started = time.perf_counter()
        self.progress.start("extract")
        try:
            plan = build_plan(data, self.pipeline_name, table_name, hint_changes)
            committed = self.state
            working_state = copy.deepcopy(committed)
            inference = SchemaInference(self.spark)
            try:
                with current.extraction(self, working_state):
                    extractor = Extractor(package.extracted_dir, self.progress.items, inference.file_closed)
                    tables = extractor.run(plan)
            except BaseException:
                inference.cancel()
                raise
            for name, schema in inference.results().items():
                tables[name].json_schema = schema
            _add_empty_replace_tables(plan, tables)
            resource_tables.record(working_state, plan, tables.values())
            package.write(
                EXTRACT_MANIFEST,
                {
                    "load_id": load_id,
                    "pipeline_name": self.pipeline_name,
                    "execution_time": clock.isoformat(),
                    "tables": [t.to_dict() for t in tables.values()],
                    # as text, so dates and timestamps in it keep their type
                    "state": state_store.dumps_state(
                        state_store.next_version(committed, working_state)
                    ).decode(),
                },
            )
        except Exception as exc:
            package.delete()
            raise PipelineStepFailed("extract", load_id, exc) from exc
        finally:
            self.progress.finish("extract")
        trace.add(StepTiming("extract", time.perf_counter() - started))
        return load_id

    @_locked
    def normalize(self) -> list[str]:
        """Normalize every extracted package; returns their load ids."""
        trace = self._trace()
        done = []
        for package in list_packages(self.packages_dir):
            if not package.is_extracted():
                package.delete()  # an extract that never finished: its items were not consumed
                continue
            if package.is_normalized():
                continue
            started = time.perf_counter()
            try:
                self._normalize_package(package)
            except Exception as exc:
                package.discard_normalized()
                raise PipelineStepFailed("normalize", package.load_id, exc) from exc
            trace.add(StepTiming("normalize", time.perf_counter() - started))
            done.append(package.load_id)
        return done

    def _normalize_package(self, package: LoadPackage) -> None:
        manifest = package.read(EXTRACT_MANIFEST)
        tables: list[dict[str, Any]] = []
        hints: dict[str, Any] = {}
        for extracted in manifest["tables"]:
            name = extracted["name"]
            hints[name] = extracted["hints"]
            if not extracted["rows"]:
                continue
            replacing = extracted["hints"]["write_disposition"]["disposition"] == "replace"

            def destination_schema(table: str, replacing: bool = replacing) -> Any:
                # A replaced table takes the load's types; other tables keep theirs.
                return None if replacing else DeltaTable(self.spark, self.dataset_uri, table).schema()

            normalizer = TableNormalizer(self.spark, package.load_id, extracted["hints"], destination_schema)
            staged = package.extracted_table_dir(name)
            try:
                normalized = normalizer.normalize(
                    name, staged, package.normalized_dir, extracted.get("json_schema")
                )
            except SparkloadError:
                raise
            except Exception as exc:
                raise NormalizeError(
                    f"table '{name}' (resource '{extracted['resource']}'): {exc}. The extracted "
                    "package stays in the working directory and the next run retries it; "
                    "pipeline.drop_pending_packages() discards it"
                ) from exc
            tables += [table.to_dict() for table in normalized]
        package.write(
            NORMALIZE_MANIFEST,
            {
                "load_id": package.load_id,
                "execution_time": manifest["execution_time"],
                "tables": tables,
                "hints": hints,
                "state": manifest["state"],
            },
        )

    @_locked
    def load(self) -> LoadInfo:
        """Load every normalized package, then commit its state; returns the last LoadInfo."""
        trace = self._trace()
        info = LoadInfo(self.pipeline_name, self.dataset_uri, None)
        for package in list_packages(self.packages_dir):
            if not package.is_normalized():
                continue
            started = time.perf_counter()
            self.progress.start("load")
            try:
                loads = Loader(self.spark, self.dataset_uri, package, on_table=self.progress.table).load()
                normalized = package.read(NORMALIZE_MANIFEST)
                new_state = state_store.loads_state(normalized["state"])
                if new_state.get("_state_version", 0) > self.state.get("_state_version", 0):
                    state_store.write_destination(
                        self.spark, self.dataset_uri, self.pipeline_name, new_state, package.load_id
                    )
                    state_store.write_local(self.working_dir, new_state)
                    self._state = new_state
            except SparkloadError as exc:
                # A refused load (bad hints, duplicate keys, a type conflict) changes nothing;
                # the package waits so a fixed run can retry it, or it can be dropped.
                raise PipelineStepFailed(
                    "load",
                    package.load_id,
                    exc,
                    "The load package stays in the working directory and the next run retries "
                    "it; pipeline.drop_pending_packages() discards it",
                ) from exc
            except Exception as exc:
                raise PipelineStepFailed("load", package.load_id, exc) from exc
            finally:
                self.progress.finish("load")
            trace.add(StepTiming("load", time.perf_counter() - started))
            info = LoadInfo(
                self.pipeline_name,
                self.dataset_uri,
                package.load_id,
                [entry.to_dict() for entry in loads],
                list(trace.timings),
                [
                    f"table '{table['name']}': column name collision resolved: {note}"
                    for table in normalized["tables"]
                    for note in table["collisions"]
                ],
            )
            package.delete()
        trace.last_load_info = info
        return info

    @_locked
    def drop_pending_packages(self) -> None:
        """Discard load packages that were extracted but not loaded (dlt's method)."""
        shutil.rmtree(self.packages_dir, ignore_errors=True)

    def has_pending_data(self) -> bool:
        return bool(list_packages(self.packages_dir))

    @_locked
    def drop(self) -> None:
        """Forget the local working directory: state and pending packages (not the data)."""
        shutil.rmtree(self.working_dir, ignore_errors=True)
        self.working_dir.mkdir(parents=True, exist_ok=True)
        self._state = None

    @_locked
    def drop_resources(
        self, resources: Sequence[str] | None = None, *, state_only: bool = False
    ) -> DropResult:
        """Drop resources' tables and state (all resources when none are named), so the next
        run loads them afresh; see ``sparkload.pipeline.drop``."""
        result = drop_pipeline_resources(self, resources, state_only=state_only)
        self._state = result.state
        return result

    def _trace(self) -> PipelineTrace:
        if self.last_trace is None:
            self.last_trace = PipelineTrace(self.pipeline_name)
        return self.last_trace

    def __repr__(self) -> str:
        return f"<pipeline '{self.pipeline_name}' → {self.dataset_uri}>"


def _add_empty_replace_tables(plan: list[Any], tables: dict[str, ExtractedTable]) -> None:
    """A replace resource that yielded nothing still empties its table, as in dlt."""
    from sparkload.extract.extractor import hints_for_manifest
    from sparkload.normalize.naming import normalize_table_name

    for entry in plan:
        resource = entry.resource
        if resource.write_disposition.disposition != "replace" or callable(resource.table_name):
            continue
        name = normalize_table_name(str(resource.table_name))
        if name not in tables:
            hints = hints_for_manifest(resource.hints, entry.root_key, entry.max_table_nesting)
            tables[name] = ExtractedTable(name, resource.name, hints, 0)


def pipeline(
    pipeline_name: str | None = None,
    destination: Any = None,
    dataset_name: str | None = None,
    pipelines_dir: str | os.PathLike[str] | None = None,
    dev_mode: bool = False,
    spark: Any = None,
    progress: str | None = None,
    **_ignored: Any,
) -> Pipeline:
    """Make a pipeline (dlt's ``dlt.pipeline``) that loads into Delta Lake tables."""
    if pipeline_name is None:
        script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "pipeline"
        pipeline_name = f"sparkload_{script or 'pipeline'}"
    if destination is None:
        raise SparkloadError("a pipeline needs destination=sl.destinations.delta(path_or_url)")
    if not isinstance(destination, destinations.DeltaDestination):
        destination = destinations.delta(destination)
    return Pipeline(
        pipeline_name,
        destination,
        dataset_name or f"{pipeline_name}_dataset",
        Path(pipelines_dir) if pipelines_dir is not None else _default_pipelines_dir(),
        dev_mode=dev_mode,
        spark=spark,
        progress=progress,
    )
