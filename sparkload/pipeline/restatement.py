"""Restatement (SQLMesh's ``--restate-model``): reprocess a time range of chosen resources
and of the transformers that read from them.

``pipeline.run(source, restate=["events", "raw_*", "tag:finance"], start=..., end=...)``:
- a resource with intervals loads the intervals overlapping [start, end) again (its
  ledger is read without them for this run); time-range replacement makes that
  idempotent;
- any other resource is not idempotent (append, merge, scd2): following SQLMesh it is
  fully refreshed (loaded as into empty tables, in one commit per table, its cursors
  reset) when the restated start is at or before its own start (its incremental's
  initial value; no start means all of time), and
  otherwise ignored: not run at all this time (a transformer fed by a restated window
  would load it twice), with a note naming the start it expects;
- a resource with ``disable_restatement=True`` refuses to be restated; scd2 resources
  refuse unless they set ``disable_restatement=False`` (a full refresh loses history).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import fnmatch
from collections.abc import Sequence
from typing import Any

from sparkload.common.time import as_utc
from sparkload.exceptions import ResourceError
from sparkload.extract.intervals import LEDGER_KEY, without
from sparkload.extract.jobs import ExtractJob
from sparkload.extract.resource import Resource


@dataclasses.dataclass
class Restatement:
    jobs: list[ExtractJob]
    # The state the run's intervals are counted from (restated ranges taken out).
    state: dict[str, Any]
    notes: list[str]
    # Interval resources and the range they reload.
    restated: dict[str, tuple[datetime.datetime, datetime.datetime]] = dataclasses.field(default_factory=dict)
    # Resources left out, with the start a restatement must reach to refresh them.
    ignored: dict[str, datetime.datetime | None] = dataclasses.field(default_factory=dict)


def _selected(resource: Resource, source: str, selectors: Sequence[str]) -> bool:
    for selector in selectors:
        if selector.startswith("tag:"):
            if any(fnmatch.fnmatchcase(tag, selector[4:]) for tag in resource.tags):
                return True
        elif fnmatch.fnmatchcase(resource.name, selector) or fnmatch.fnmatchcase(
            f"{source}.{resource.name}", selector
        ):
            return True
    return False


def _own_start(resource: Resource, pipeline_name: str) -> datetime.datetime | None:
    """Where a resource's data starts: where its incremental starts with no state (its initial
    value, as the run binds it), if that is a time."""
    for start in resource.cursor_starts({}, pipeline_name).values():
        if start is not None:
            try:
                return as_utc(start, "initial_value")
            except ResourceError:
                return None  # a numeric cursor: no time to compare with
    return None


def _refuses(resource: Resource) -> bool:
    if resource.disable_restatement is not None:
        return resource.disable_restatement
    return resource.hints.write_disposition.strategy == "scd2"


def restate(
    jobs: list[ExtractJob],
    selectors: Sequence[str],
    start: Any,
    end: Any,
    state: dict[str, Any],
    execution_time: datetime.datetime,
    pipeline_name: str,
) -> Restatement:
    low = as_utc(start, "restatement start") if start is not None else None
    high = as_utc(end, "restatement end") if end is not None else as_utc(execution_time, "execution_time")
    restated_state = copy.deepcopy(state)
    notes: list[str] = []
    matched: list[str] = []
    restated: dict[str, tuple[datetime.datetime, datetime.datetime]] = {}
    ignored: dict[str, datetime.datetime | None] = {}

    def visit(entry: ExtractJob, upstream_selected: bool) -> ExtractJob | None:
        """The entry as this run extracts it; None: it sits this run out."""
        resource = entry.resource
        chosen = upstream_selected or _selected(resource, entry.source_name, selectors)
        children = [c for c in (visit(child, chosen) for child in entry.children) if c is not None]
        if not chosen:
            return dataclasses.replace(entry, children=children)
        matched.append(resource.name)
        if _refuses(resource):
            raise ResourceError(
                f"resource '{resource.name}' cannot be restated (disable_restatement"
                + (", the default for scd2" if resource.disable_restatement is None else "")
                + "); leave it out of restate="
            )
        if resource.intervals is not None:
            resources = restated_state.setdefault("sources", {}).setdefault(entry.source_name, {})
            resource_state = resources.setdefault("resources", {}).setdefault(resource.name, {})
            since = low if low is not None else resource.intervals.start_value
            resource_state[LEDGER_KEY] = without(resource_state.get(LEDGER_KEY, []), since, high)
            restated[resource.name] = (since, high)
            return dataclasses.replace(entry, children=children)
        own = _own_start(resource, pipeline_name)
        if low is not None and (own is None or low > own):
            ignored[resource.name] = own
            expected = own.isoformat() if own is not None else "none: leave start= out"
            notes.append(
                f"resource '{resource.name}' ignored by the restatement and not run: it cannot "
                f"reload a limited range, and the restated start {low.isoformat()} is after its "
                f"own start (expected start: {expected})"
            )
            if children:
                fed = ", ".join(f"'{child.resource.name}'" for child in children)
                notes.append(f"transformers {fed} are not run either: their parent is ignored")
            return None
        refreshed = resource._clone()
        # Loaded as into empty tables with its own disposition (an scd2 table stays scd2,
        # a merge is deduplicated), its cursors started over.
        refreshed.hints = refreshed.hints.merge(refresh=True)
        return dataclasses.replace(entry, resource=refreshed, children=children)

    kept = [e for e in (visit(entry, False) for entry in jobs) if e is not None]
    if not matched:
        raise ResourceError(f"restate={list(selectors)} selects no resource of this run")
    return Restatement(kept, restated_state, notes, restated, ignored)
