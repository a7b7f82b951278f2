"""Restatement (SQLMesh's ``--restate-model``): reprocess a time range of chosen resources
and of the transformers that read from them.

``pipeline.run(source, restate=["events", "raw_*", "tag:finance"], start=..., end=...)``
runs the chosen resources and the transformers reading from them, and nothing else (a
restating plan of SQLMesh backfills only the restated models and their downstream):
- a resource with intervals loads again the intervals that [start, end] touches (a date
  ``end`` is the whole day, as SQLMesh's) and only those: not the intervals it has not
  loaded yet outside that range, and no lookback (its ledger is read without the range
  for this run); time-range replacement makes that idempotent;
- any other resource is not idempotent (append, merge, scd2): following SQLMesh it is
  fully refreshed (loaded as into empty tables, in one commit per table, its cursors
  reset) when the restated start is at or before its own start (its incremental's
  initial value; no start means all of time), and
  otherwise ignored: not run at all this time (a transformer fed by a restated window
  would load it twice), with a note naming the start it expects;
- a resource with ``disable_restatement=True`` is skipped with a warning naming it, as
  SQLMesh skips such a model: not run at all this time, nor the transformers it feeds.
  scd2 resources are skipped so unless they set ``disable_restatement=False`` (SQLMesh's
  SCD_TYPE_2 kinds default to disable_restatement too: a full refresh loses history).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import fnmatch
from collections.abc import Sequence

from sparkload.common.state_record import LEDGER_KEY, PipelineState
from sparkload.common.time import as_utc
from sparkload.exceptions import ResourceError
from sparkload.extract.intervals import Span, without
from sparkload.extract.jobs import ExtractJob
from sparkload.extract.resource import Resource


@dataclasses.dataclass
class Restatement:
    jobs: list[ExtractJob]
    # The state the run's intervals are counted from (restated ranges taken out).
    state: PipelineState
    notes: list[str]
    # Interval resources and the range they reload.
    restated: dict[str, tuple[datetime.datetime, datetime.datetime]] = dataclasses.field(default_factory=dict)
    # Resources left out, with the start a restatement must reach to refresh them.
    ignored: dict[str, datetime.datetime | None] = dataclasses.field(default_factory=dict)
    # Resources whose restatement is disabled: skipped, not run.
    skipped: list[str] = dataclasses.field(default_factory=list)

    def spans(self) -> dict[str, Span]:
        """The range each restated interval resource loads this run."""
        return {name: Span(low, high) for name, (low, high) in self.restated.items()}


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
    start: object,
    end: object,
    state: PipelineState,
    execution_time: datetime.datetime,
    pipeline_name: str,
) -> Restatement:
    span = Span.of(start, end)
    low = span.start
    restated_state = copy.deepcopy(state)
    notes: list[str] = []
    matched: list[str] = []
    restated: dict[str, tuple[datetime.datetime, datetime.datetime]] = {}
    ignored: dict[str, datetime.datetime | None] = {}
    skipped: list[str] = []

    def left_out(entry: ExtractJob, children: list[ExtractJob]) -> None:
        if children:
            fed = ", ".join(f"'{child.resource.name}'" for child in children)
            parent = entry.resource.name
            notes.append(f"transformers {fed} are not run either: their parent '{parent}' is not")

    def visit(entry: ExtractJob, upstream_selected: bool) -> ExtractJob | None:
        """The entry as this run extracts it; None: it sits this run out."""
        resource = entry.resource
        chosen = upstream_selected or _selected(resource, entry.source_name, selectors)
        children = [c for c in (visit(child, chosen) for child in entry.children) if c is not None]
        if not chosen:
            # Not restated: it runs only to feed a chosen transformer.
            return dataclasses.replace(entry, children=children) if children else None
        matched.append(resource.name)
        if _refuses(resource):
            skipped.append(resource.name)
            default = " (the default for scd2)" if resource.disable_restatement is None else ""
            notes.append(
                f"resource '{resource.name}' not restated and not run: restatement is disabled for it"
                f"{default} to prevent data loss; set disable_restatement=False to restate it"
            )
            left_out(entry, children)
            return None
        if resource.intervals is not None:
            resources = restated_state.setdefault("sources", {}).setdefault(entry.source_name, {})
            resource_state = resources.setdefault("resources", {}).setdefault(resource.name, {})
            since, until = resource.intervals.restated(span, execution_time)
            resource_state[LEDGER_KEY] = without(resource_state.get(LEDGER_KEY, []), since, until)
            restated[resource.name] = (since, until)
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
            left_out(entry, children)
            return None
        refreshed = resource._clone()
        # Loaded as into empty tables with its own disposition (an scd2 table stays scd2,
        # a merge is deduplicated), its cursors started over.
        refreshed.hints = refreshed.hints.merge(refresh=True)
        return dataclasses.replace(entry, resource=refreshed, children=children)

    kept = [e for e in (visit(entry, False) for entry in jobs) if e is not None]
    if not matched:
        raise ResourceError(f"restate={list(selectors)} selects no resource of this run")
    return Restatement(kept, restated_state, notes, restated, ignored, skipped)
