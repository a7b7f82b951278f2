"""Which load packages a run makes: one, or one per batch of time intervals.

A resource with an intervals argument is called once per batch of the intervals it has
not loaded (see ``extract/intervals.py``), each batch in its own package so its rows and
its ledger entry commit together and a crash mid-backfill resumes at the first batch not
committed. Resources without intervals run once, in the first package.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from sparkload.common.hints import LoadHints
from sparkload.common.naming import normalize_table_name
from sparkload.common.state_record import LEDGER_KEY, PipelineState, ResourceState
from sparkload.common.time import Window
from sparkload.exceptions import HintCombinationError, ResourceError
from sparkload.extract.intervals import Span, record
from sparkload.extract.jobs import ExtractedTable, ExtractJob, every_entry
from sparkload.extract.load_hints import load_hints
from sparkload.load.merge_config import check_merge_hints

if TYPE_CHECKING:
    from sparkload.pipeline.drop import Refresh
    from sparkload.pipeline.restatement import Restatement


@dataclasses.dataclass
class IntervalResource:
    source: str
    windows: list[Window]


@dataclasses.dataclass
class Batch:
    jobs: list[ExtractJob]
    # The window each interval resource in this package loads, by resource name.
    windows: dict[str, Window]


@dataclasses.dataclass
class Scheduled:
    """What a run extracts: its resources, its packages, and what a restatement changed."""

    jobs: list[ExtractJob]
    batches: list[Batch]
    restatement: Restatement | None = None  # when the run restates
    refresh: Refresh | None = None  # when the run refreshes

    @property
    def notes(self) -> list[str]:
        return list(self.restatement.notes) if self.restatement is not None else []


def refuse_time_ranges_without_intervals(jobs: list[ExtractJob]) -> None:
    """The time-range strategy replaces the window an ``intervals`` argument gives; a
    resource without one is refused before anything is extracted."""
    for entry in every_entry(jobs):
        disposition = entry.resource.hints.write_disposition
        if disposition.strategy == "time-range" and entry.resource.intervals is None:
            raise ResourceError(
                f"resource '{entry.resource.name}': the time-range strategy takes its window from "
                "the resource's intervals argument: declare one, e.g. "
                "window=sl.sources.intervals('ts', start=...)"
            )


def refuse_bad_hint_combinations(jobs: list[ExtractJob]) -> None:
    """Merge hints that cannot mean anything (upsert without a primary key …) are refused
    before anything is extracted, for every resource whose table name is known now (a
    table named per item is checked when it appears: see :func:`refuse_bad_table_hints`)."""
    for entry in every_entry(jobs):
        resource = entry.resource
        if resource.hints.write_disposition.disposition != "merge" or callable(resource.table_name):
            continue
        table = normalize_table_name(str(resource.table_name))
        hints = load_hints(resource.hints, entry.root_key, entry.max_table_nesting)
        _check_merge_hints_of(resource.name, table, hints)


def refuse_bad_table_hints(tables: Iterable[ExtractedTable]) -> None:
    """The same check for every table an extract filled, before its package is recorded."""
    for table in tables:
        _check_merge_hints_of(table.resource, table.name, table.hints)


def _check_merge_hints_of(resource: str, table: str, hints: LoadHints) -> None:
    try:
        check_merge_hints(table, hints)
    except HintCombinationError as exc:
        raise HintCombinationError(
            f"resource '{resource}': {exc}", table=exc.table, column=exc.column, resource=resource
        ) from exc


def resource_state_of(state: PipelineState, source: str, resource: str) -> ResourceState:
    return state.get("sources", {}).get(source, {}).get("resources", {}).get(resource, {})


def interval_resources(
    jobs: list[ExtractJob],
    state: PipelineState,
    execution_time: datetime.datetime,
    span: Span | None = None,
    spans: Mapping[str, Span] | None = None,
) -> dict[str, IntervalResource]:
    """The windows each interval resource of ``jobs`` has to load at ``execution_time``:
    within its own span in ``spans`` (a restated range), else within ``span`` (the run's
    ``start=``/``end=``), else all it has not loaded."""
    found = {}
    for entry in every_entry(jobs):
        spec = entry.resource.intervals
        if spec is None:
            continue
        ledger = resource_state_of(state, entry.source_name, entry.resource.name).get(LEDGER_KEY, [])
        limit = (spans or {}).get(entry.resource.name, span)
        found[entry.resource.name] = IntervalResource(
            entry.source_name, spec.batches(execution_time, ledger, limit)
        )
    return found


def batches(
    jobs: list[ExtractJob],
    state: PipelineState,
    execution_time: datetime.datetime,
    span: Span | None = None,
    spans: Mapping[str, Span] | None = None,
) -> list[Batch]:
    """The packages of one run, in order (none when every resource is up to date)."""
    timed = interval_resources(jobs, state, execution_time, span, spans)
    # Plain resources run in the first package (a transformer of an interval resource runs
    # with its parent, so it alone does not make a package).
    has_plain = bool(_select(jobs, functools.partial(_runs, windows={}, index=0)))
    count = max([len(r.windows) for r in timed.values()] + [1 if has_plain else 0])
    result = []
    for index in range(count):
        windows = {name: r.windows[index] for name, r in timed.items() if index < len(r.windows)}
        result.append(Batch(_select(jobs, functools.partial(_runs, windows=windows, index=index)), windows))
    return result


def _runs(entry: ExtractJob, fed: bool, windows: Mapping[str, Window], index: int) -> bool:
    if entry.resource.intervals is not None:
        return entry.resource.name in windows
    # A plain transformer runs whenever its parent does: each batch of an interval
    # resource feeds it that batch's items.
    return fed or index == 0


def _select(
    jobs: list[ExtractJob], keep: Callable[[ExtractJob, bool], bool], fed: bool = False
) -> list[ExtractJob]:
    """The entries ``keep`` accepts (a transformer is fed only by a parent that runs)."""
    return [
        dataclasses.replace(entry, children=_select(entry.children, keep, fed=True))
        for entry in jobs
        if keep(entry, fed)
    ]


def record_windows(state: PipelineState, batch: Batch, resource_sources: Mapping[str, str]) -> None:
    """Add each window of ``batch`` to its resource's ledger in ``state``."""
    for name, window in batch.windows.items():
        resources = (
            state.setdefault("sources", {}).setdefault(resource_sources[name], {}).setdefault("resources", {})
        )
        resource_state = resources.setdefault(name, {})
        resource_state[LEDGER_KEY] = record(resource_state.get(LEDGER_KEY, []), window)


def sources_by_resource(jobs: list[ExtractJob]) -> dict[str, str]:
    return {entry.resource.name: entry.source_name for entry in every_entry(jobs)}
