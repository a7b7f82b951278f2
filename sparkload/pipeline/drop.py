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
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sparkload.exceptions import SparkloadError
from sparkload.load.dataset import Dataset
from sparkload.pipeline import state as state_store
from sparkload.pipeline.resource_tables import (
    TABLES_KEY,
    ResourceKey,
    known_resources,
    tables_by_resource,
)

if TYPE_CHECKING:
    from sparkload.pipeline.pipeline import Pipeline


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
    state: dict[str, Any]
    state_changed: bool


def plan_drop(
    state: dict[str, Any],
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


def state_after(state: dict[str, Any], plan: DropPlan) -> dict[str, Any]:
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
    pipeline: Pipeline, resources: Sequence[str] | None = None, *, state_only: bool = False
) -> DropResult:
    """Drop ``resources`` (None: all) of ``pipeline``. The caller holds the pipeline's run
    lock (``Pipeline.drop_resources`` does)."""
    committed = pipeline.state
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
