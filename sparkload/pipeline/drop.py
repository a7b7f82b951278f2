"""Drop resources from a pipeline: their tables and their state, so that the next run
loads them afresh (dlt's ``dlt pipeline <name> drop`` and ``refresh="drop_resources"``).

A dropped resource loses its tables (the recorded root tables and their nested
``<root>__…`` tables), its record in ``state["tables"]`` and its resource state, its
incremental cursors included: the next run starts from their ``initial_value``. A source
whose every known resource is dropped loses its whole state, source state included.
With no resources named, every resource of every source is dropped.

``state_only`` resets the state alone, as dlt's ``drop --state-only`` does: the tables and
their record stay, so the next run loads from the initial values into the existing tables
(with merge it rewrites the same rows; with append it adds them again).

Either way pending load packages are discarded first: each carries the state extracted
with it, and loading one after the drop would bring the dropped cursors back.

A run's ``refresh=`` (dlt's) drops in the run's own first load package instead:

- ``"drop_sources"``: every resource of the sources the run extracts (run or not) loses
  its tables and state, and each source its source state;
- ``"drop_resources"``: the resources the run extracts (and the parents feeding its
  transformers) lose their tables and resource state; source state stays;
- ``"drop_data"``: the same resources' tables are truncated (they keep their columns) and
  their resource state reset.

The extract starts from the state without what is dropped (incrementals start from their
initial values, interval ledgers are empty), and the package records the tables to drop
or truncate. The load drops or truncates them after claiming the package and before its
first commit, then marks the package (``refreshed.json``), so a load cut short and
retried neither repeats the drop over tables it has since committed nor loses it: the
dropped state is committed with the package's data, as every state is.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from sparkload.common.package import LoadPackage
from sparkload.common.state_record import PipelineState
from sparkload.exceptions import ResourceError, SparkloadError
from sparkload.extract.jobs import ExtractJob, every_entry
from sparkload.extract.resource import Resource
from sparkload.load import dispositions
from sparkload.load.dataset import Dataset
from sparkload.pipeline import state as state_store
from sparkload.pipeline.resource_tables import (
    TABLES_KEY,
    ResourceKey,
    known_resources,
    tables_by_resource,
)


class DroppingPipeline(Protocol):
    """What dropping resources reads and changes of a pipeline (a ``Pipeline``; named here so
    this module does not import the facade that imports it)."""

    @property
    def pipeline_name(self) -> str: ...
    @property
    def working_dir(self) -> Path: ...
    @property
    def destination_dataset(self) -> Dataset: ...
    @property
    def committed_state(self) -> PipelineState: ...
    def drop_pending_packages(self) -> None: ...


@dataclasses.dataclass(frozen=True)
class DropPlan:
    """What a drop removes."""

    resources: list[ResourceKey]
    tables: list[str]
    # Tables of dropped resources that a resource staying also fills: kept, with its rows.
    shared_tables: list[str]
    # Sources whose whole state goes (every resource of theirs is dropped).
    cleared_sources: list[str]
    state_only: bool


@dataclasses.dataclass(frozen=True)
class DropResult:
    plan: DropPlan
    state: PipelineState
    state_changed: bool


def plan_drop(
    state: PipelineState,
    dataset: Dataset,
    resources: Sequence[str] | None = None,
    *,
    state_only: bool = False,
) -> DropPlan:
    """What dropping ``resources`` (names, or ``section.name``; None: all) would remove."""
    known = known_resources(state)
    if resources is None:
        chosen = known
        cleared = sorted(set(state.get("sources", {})) | {section for section, _ in known})
    else:
        chosen = _select(known, resources)
        cleared = sorted(
            section
            for section in {section for section, _ in chosen}
            if all(key in chosen for key in known if key[0] == section)
        )
    dropping: set[str] = set()
    staying: set[str] = set()
    if not state_only:
        for key, tables in tables_by_resource(state, dataset.user_tables()).items():
            (dropping if key in chosen else staying).update(tables)
    return DropPlan(chosen, sorted(dropping - staying), sorted(dropping & staying), cleared, state_only)


def _select(known: list[ResourceKey], names: Sequence[str]) -> list[ResourceKey]:
    chosen: set[ResourceKey] = set()
    unknown = []
    for name in names:
        matches = [key for key in known if name in (key[1], f"{key[0]}.{key[1]}")]
        if not matches:
            unknown.append(name)
        chosen.update(matches)
    if unknown:
        listed = ", ".join(f"{section}.{resource}" for section, resource in known) or "none"
        raise SparkloadError(
            f"the pipeline state has no resource {', '.join(repr(n) for n in unknown)}; "
            f"its resources: {listed}"
        )
    return sorted(chosen)


def state_after(state: PipelineState, plan: DropPlan) -> PipelineState:
    """``state`` without what ``plan`` drops (the version is not bumped here)."""
    new = copy.deepcopy(state)
    sources = new.get("sources", {})
    recorded = new.get(TABLES_KEY, {})
    for section, resource in plan.resources:
        sources.get(section, {}).get("resources", {}).pop(resource, None)
        if not plan.state_only:
            recorded.get(section, {}).pop(resource, None)
    for section in plan.cleared_sources:
        sources.pop(section, None)
    for section in [section for section, resources in recorded.items() if not resources]:
        del recorded[section]
    return new


def drop_pipeline_resources(
    pipeline: DroppingPipeline, resources: Sequence[str] | None = None, *, state_only: bool = False
) -> DropResult:
    """Drop ``resources`` (None: all) of ``pipeline``. The caller holds the pipeline's run
    lock (``Pipeline.drop_resources`` does)."""
    committed = pipeline.committed_state
    plan = plan_drop(committed, pipeline.destination_dataset, resources, state_only=state_only)
    pipeline.drop_pending_packages()
    # Tables first, the state last: the state is the only record of which tables belong to
    # the dropped resources. A drop cut short between the two leaves a state that still
    # names them, so running the drop again finds what is left, deletes it and commits.
    # Committing first would leave tables that nothing names any more.
    for table in plan.tables:
        pipeline.destination_dataset.drop_table(table)
    new_state = state_store.next_version(committed, state_after(committed, plan))
    changed = new_state.get("_state_version") != committed.get("_state_version")
    if changed:
        drop_id = f"drop_{time.time():.6f}"
        state_store.write_destination(
            pipeline.destination_dataset, pipeline.pipeline_name, new_state, drop_id
        )
        state_store.write_local(pipeline.working_dir, new_state)
    return DropResult(plan, new_state, changed)


RefreshMode = Literal["drop_sources", "drop_resources", "drop_data"]
REFRESH_MODES: tuple[str, ...] = get_args(RefreshMode)
# Written into a load package once its refresh has dropped or truncated the tables.
REFRESHED_MANIFEST = "refreshed.json"


def refresh_mode(value: Any) -> RefreshMode | None:
    """``value`` checked as dlt's refresh mode (None: no refresh)."""
    if value is not None and value not in REFRESH_MODES:
        raise ResourceError(f"refresh must be one of {', '.join(REFRESH_MODES)} or None, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class Refresh:
    """What a run's refresh drops: the state its extract starts from, the resources loaded
    as into new tables, and the manifest entry its first package carries."""

    mode: RefreshMode
    plan: DropPlan
    state: PipelineState

    @property
    def drops_tables(self) -> bool:
        return self.mode != "drop_data"

    def manifest(self) -> dict[str, Any]:
        return {"mode": self.mode, "tables": self.plan.tables}

    def jobs(self, jobs: list[ExtractJob]) -> list[ExtractJob]:
        """``jobs`` with each refreshed resource loaded as into new tables: normalize types
        its rows without the dropped table's columns, the load writes them as the table's
        first rows. (Truncated tables keep their columns, as in dlt: ``drop_data`` loads
        into them as they are.)"""
        if not self.drops_tables:
            return jobs
        chosen = set(self.plan.resources)

        def refreshed(entry: ExtractJob) -> ExtractJob:
            children = [refreshed(child) for child in entry.children]
            resource = entry.resource
            if (entry.source_name, resource.name) in chosen:
                resource = resource._clone()
                resource.hints = resource.hints.merge(refresh=True)
            return dataclasses.replace(entry, resource=resource, children=children)

        return [refreshed(entry) for entry in jobs]


def _extracted_resources(jobs: list[ExtractJob]) -> set[ResourceKey]:
    """The resources a run extracts, as dlt counts them: those it runs and the parents that
    feed its transformers."""
    keys: set[ResourceKey] = set()
    for entry in every_entry(jobs):
        resource: Resource | None = entry.resource
        while resource is not None:
            keys.add((entry.source_name, resource.name))
            resource = resource._data_from
    return keys


def plan_refresh(
    mode: RefreshMode, state: PipelineState, dataset: Dataset, jobs: list[ExtractJob]
) -> Refresh:
    """What ``refresh=mode`` drops for a run extracting ``jobs`` from ``state``."""
    extracted = _extracted_resources(jobs)
    sources = sorted({section for section, _ in extracted})
    known = known_resources(state)
    if mode == "drop_sources":
        chosen = [key for key in known if key[0] in sources]
        cleared = sources
    else:
        chosen = [key for key in known if key in extracted]
        cleared = []
    dropping: set[str] = set()
    staying: set[str] = set()
    for key, tables in tables_by_resource(state, dataset.user_tables()).items():
        (dropping if key in chosen else staying).update(tables)
    truncating = mode == "drop_data"
    plan = DropPlan(
        sorted(chosen), sorted(dropping - staying), sorted(dropping & staying), cleared, truncating
    )
    return Refresh(mode, plan, state_after(state, plan))


def apply_refresh(dataset: Dataset, package: LoadPackage, refresh: dict[str, Any] | None) -> None:
    """Before a package's first commit: drop (or truncate) the tables its refresh names,
    once. The package is claimed, so a crash from here on leaves it to be finished."""
    if not refresh or package.has(REFRESHED_MANIFEST):
        return
    _drop_or_truncate(dataset, refresh["tables"], refresh["mode"] == "drop_data", package.load_id)
    package.write(REFRESHED_MANIFEST, {"mode": refresh["mode"], "tables": refresh["tables"]})


def _drop_or_truncate(dataset: Dataset, tables: Iterable[str], truncate: bool, load_id: str) -> None:
    for name in tables:
        if not truncate:
            dataset.drop_table(name)
            continue
        table = dataset.table(name)
        if table.exists():
            # Tagged apart from the load's own commits: a commit tagged with the load id
            # tells a retried load that the table is already loaded.
            dispositions.truncate(table, f"refresh:{load_id}")
