"""Plans (SQLMesh's ``plan`` then ``apply``): what a run would do, computed without writing
to the destination, then carried out exactly.

``pipeline.plan(source, ...)`` takes the arguments of ``run()`` and lists, per table,
whether it is added or changed, its disposition and schema difference (added columns,
type changes, which are destructive), the missing intervals of each interval resource as
date ranges, what every other resource the run would run loads ("all new rows" for
cursors and appends), restated ranges and ignored resources, and where every incremental
cursor starts. ``plan.apply()`` runs exactly that at the plan's execution time, and refuses if
the destination moved on in between. With ``extract=True`` the plan extracts and
normalizes into load packages first, so the schema difference comes from the real data,
and ``apply()`` loads those packages without extracting again.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from pyspark.sql import types as T

from sparkload.common import dlt_arguments as dlt_args
from sparkload.common.naming import normalize_table_name
from sparkload.common.package import PLANNED_MANIFEST, list_packages
from sparkload.common.state_record import PipelineState
from sparkload.common.time import Window
from sparkload.exceptions import PlanOutdatedError, SparkloadError
from sparkload.extract.hints import TableHintArgs, refuse_unknown_hints
from sparkload.extract.intervals import IntervalUnit
from sparkload.extract.jobs import ExtractJob, every_entry
from sparkload.extract.load_hints import load_hints, normalize_column_path
from sparkload.extract.resource import Resource
from sparkload.load import destructive
from sparkload.normalize.manifest import NormalizeManifest
from sparkload.normalize.normalizer import NormalizedTable
from sparkload.normalize.types import data_type_of_spark, spark_type
from sparkload.pipeline import html_tables, schedule
from sparkload.pipeline import state as state_store
from sparkload.pipeline.calls import RunArguments, TimeBound
from sparkload.pipeline.extract_step import extract_batch, schedule_jobs
from sparkload.pipeline.run_step import RunningPipeline, discard_planned

if TYPE_CHECKING:
    from sparkload.load.dataset import Dataset
    from sparkload.pipeline.load_info import LoadInfo


class PlannedPipeline(Protocol):
    """What a plan reads of the pipeline it is made for, and runs to apply it (a
    ``Pipeline``; named here so this module does not import the facade that imports it)."""

    @property
    def pipeline_name(self) -> str: ...
    @property
    def dataset_uri(self) -> str: ...
    @property
    def destination_dataset(self) -> Dataset: ...
    @property
    def committed_state(self) -> PipelineState: ...
    def load(self) -> LoadInfo: ...
    @property
    def run(self) -> Callable[..., LoadInfo]: ...


class Fingerprint(TypedDict, total=False):
    """What ``apply()`` checks has not moved since the plan: the pipeline's state version at
    the destination and each planned table's Delta version (None: no table yet)."""

    state_version: int
    tables: dict[str, int | None]


_TINY = datetime.timedelta(microseconds=1)
# Tables in the order the plan's text lists them.
STATUS_ORDER = {"added": 0, "changed": 1, "unchanged": 2}


@dataclasses.dataclass
class TypeChange:
    """A column whose type the run would change; ``destructive`` when its stored values
    would not fit the new type (the load then stops under ``on_destructive_change="error"``)."""

    column: str
    old: str
    new: str
    destructive: bool


@dataclasses.dataclass
class TablePlan:
    """One table the run fills: whether it is added or changed, its disposition (with the
    merge strategy), the columns it gains and the type changes."""

    table: str
    resource: str
    status: str  # "added", "changed" or "unchanged"
    disposition: str
    added_columns: dict[str, str] = dataclasses.field(default_factory=dict)
    type_changes: list[TypeChange] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class IntervalPlan:
    """The missing intervals of one interval resource, as inclusive ranges, in how many
    batches the run loads them, and the range a restatement reloads."""

    resource: str
    # Inclusive ranges, as SQLMesh prints them: dates for day, month and year units
    # ("2024-09-20", "2024-09-26"), times for shorter ones ("2024-09-20 00:00:00",
    # "2024-09-20 11:59:59").
    missing: list[tuple[str, str]]
    batches: int
    restated: tuple[str, str] | None = None


@dataclasses.dataclass
class Plan:
    """What ``pipeline.plan(...)`` returns: what the run would do (``tables``, ``intervals``,
    ``incrementals``, the resources a restatement ``ignored``), printed as SQLMesh prints a
    plan by ``str(plan)``; ``apply()`` carries it out."""

    pipeline_name: str
    dataset_uri: str
    execution_time: datetime.datetime
    tables: list[TablePlan]
    intervals: list[IntervalPlan]
    ignored: dict[str, str | None]
    incrementals: dict[str, object]
    extracted: list[str]
    # Every resource without intervals the run would run, with what it loads ("all new
    # rows" for cursors and appends): a run loads them even when no interval is missing.
    loads: dict[str, str] = dataclasses.field(default_factory=dict)
    # What apply() checks has not moved: the state version and every table's version.
    fingerprint: Fingerprint = dataclasses.field(repr=False, default_factory=lambda: Fingerprint())
    _pipeline: PlannedPipeline | None = dataclasses.field(repr=False, default=None)
    _run: dict[str, object] = dataclasses.field(repr=False, default_factory=dict)

    @property
    def has_changes(self) -> bool:
        """False when the run would load nothing: no table added or changed, no interval
        missing, no resource without intervals to run."""
        return bool(
            any(t.status != "unchanged" for t in self.tables)
            or any(i.missing for i in self.intervals)
            or self.loads
            or self.extracted
        )

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain data (JSON-ready): for a review step or a log."""
        data = {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if not field.name.startswith("_") and field.name != "fingerprint"
        }
        data["tables"] = [dataclasses.asdict(t) for t in self.tables]
        data["intervals"] = [dataclasses.asdict(i) for i in self.intervals]
        data["execution_time"] = self.execution_time.isoformat()
        return data

    def apply(self) -> LoadInfo:
        """Carry out this plan; refuses if the destination changed since it was made."""
        pipeline = self._pipeline
        assert pipeline is not None, "a plan is made by Pipeline.plan(), which gives it its pipeline"
        now = fingerprint(pipeline, [t.table for t in self.tables])
        if now != self.fingerprint:
            planned = self.fingerprint.get("tables", {})
            moved = [name for name, version in now["tables"].items() if planned.get(name) != version]
            raise PlanOutdatedError(self.pipeline_name, self.fingerprint, now, moved)
        if self.extracted:
            return pipeline.load()
        return pipeline.run(**self._run, execution_time=self.execution_time)

    def _repr_html_(self) -> str:
        return plan_html(self)

    def _repr_pretty_(self, printer: html_tables.PrettyPrinter, cycle: bool) -> None:
        printer.text(str(self))  # IPython's plain-text display: the plan's text

    def __str__(self) -> str:
        lines = [f"Plan for pipeline `{self.pipeline_name}` against {self.dataset_uri}:"]
        groups = {status: [t for t in self.tables if t.status == status] for status in STATUS_ORDER}
        lines += _tree(
            "Tables:",
            [
                (status.capitalize() + ":", [_describe_table(t) for t in tables])
                for status, tables in groups.items()
                if tables
            ],
        )
        missing = [i for i in self.intervals if i.missing]
        if missing:
            lines += _tree(
                "Intervals needing backfill (missing dates):",
                [(_describe_intervals(i), []) for i in missing],
            )
        if self.loads:
            lines += _tree(
                "Resources without intervals to run:",
                [(f"{name}: {what}", []) for name, what in self.loads.items()],
            )
        restated = [i for i in self.intervals if i.restated]
        if restated:
            lines += _tree(
                "Restated:",
                [(f"{i.resource}: {i.restated[0]} - {i.restated[1]}", []) for i in restated if i.restated],
            )
        if self.ignored:
            lines += _tree(
                "Ignored resources (expected start):",
                [
                    (f"{name} ({start or 'no start: restate without start='})", [])
                    for name, start in self.ignored.items()
                ],
            )
        if self.incrementals:
            lines += _tree(
                "Incremental cursors start at:",
                [(f"{name}: {value!r}", []) for name, value in self.incrementals.items()],
            )
        if not self.has_changes:
            lines.append("No changes: nothing to load.")
        return "\n".join(lines)


# -- making a plan ----------------------------------------------------------------------------
def fingerprint(pipeline: PlannedPipeline, tables: Iterable[str]) -> Fingerprint:
    return {
        "state_version": state_store.destination_version(
            pipeline.destination_dataset,
            pipeline.pipeline_name,
            known_version=int(pipeline.committed_state.get("_state_version", 0)),
        ),
        "tables": {name: pipeline.destination_dataset.table(name).version() for name in tables},
    }


def make_plan(
    pipeline: PlannedPipeline,
    scheduled: schedule.Scheduled,
    run_args: dict[str, object],
    execution_time: datetime.datetime,
    normalized: list[NormalizedTable] | None,
    extracted: list[str],
) -> Plan:
    """The plan of ``scheduled``; ``normalized`` are the tables of the packages extracted
    for it (None: the schema difference comes from the declared column hints)."""
    state = pipeline.committed_state
    tables = [
        _table_plan(pipeline, entry, normalized, state)
        for entry in every_entry(scheduled.jobs)
        if not callable(entry.resource.table_name)
    ]
    restated: dict[str, tuple[datetime.datetime, datetime.datetime]] = (
        scheduled.restatement.restated if scheduled.restatement is not None else {}
    )
    windows: dict[str, list[Window]] = {}
    for batch in scheduled.batches:
        for name, window in batch.windows.items():
            windows.setdefault(name, []).append(window)
    intervals = [
        IntervalPlan(
            entry.resource.name,
            _inclusive_ranges(windows.get(entry.resource.name, []), spec.unit),
            len(windows.get(entry.resource.name, [])),
            (
                _inclusive(*restated[entry.resource.name], spec.unit)
                if entry.resource.name in restated
                else None
            ),
        )
        for entry in every_entry(scheduled.jobs)
        if (spec := entry.resource.intervals) is not None
    ]
    ignored = (
        {name: start.isoformat() if start else None for name, start in scheduled.restatement.ignored.items()}
        if scheduled.restatement is not None
        else {}
    )
    incrementals = _incremental_starts(scheduled.jobs, state, pipeline.pipeline_name)
    with_cursors = {key.split(".", 1)[0] for key in incrementals}
    plan = Plan(
        pipeline.pipeline_name,
        pipeline.dataset_uri,
        execution_time,
        tables,
        intervals,
        ignored,
        incrementals,
        extracted,
        loads=_loads_without_intervals(scheduled.batches[0].jobs if scheduled.batches else [], with_cursors),
        _pipeline=pipeline,
        _run=run_args,
    )
    plan.fingerprint = fingerprint(pipeline, [t.table for t in tables])
    return plan


class PlanningPipeline(RunningPipeline, PlannedPipeline, Protocol):
    """A pipeline as ``plan_run`` sees it: as a run does, and as its plan reads it."""


def plan_run(
    pipeline: PlanningPipeline,
    data: object,
    hints: TableHintArgs,
    *,
    table_name: str | None,
    execution_time: datetime.datetime | str | None,
    restate: Sequence[str] | None,
    start: TimeBound | None,
    end: TimeBound | None,
    extract: bool,
) -> Plan:
    """``pipeline.plan(data, ...)`` (see its docstring); the caller holds the run lock.
    With ``extract``, the packages are extracted and normalized, and marked as the plan's."""
    refuse_unknown_hints(hints, TableHintArgs.__optional_keys__, dlt_args.PLAN)
    discard_planned(pipeline)  # an earlier plan's packages: this plan replaces it
    if pipeline.has_pending_data:
        raise SparkloadError(
            f"pipeline '{pipeline.pipeline_name}' has load packages pending: run() finishes them, "
            "drop_pending_packages() discards them; plan after that"
        )
    args = RunArguments(table_name, hints, execution_time)
    scheduled = schedule_jobs(pipeline, data, args, restate, start, end)
    normalized = None
    extracted = []
    if extract:
        extracted = [
            extract_batch(pipeline, scheduled.jobs, batch, args.clock) for batch in scheduled.batches
        ]
        pipeline.normalize()
        for package in list_packages(pipeline._staged):
            package.write(PLANNED_MANIFEST, {})
        normalized = [
            table
            for package in list_packages(pipeline._staged)
            for table in NormalizeManifest.read(package).tables
        ]
    run_args = dict(args.hints, data=data, table_name=table_name, restate=restate, start=start, end=end)
    return make_plan(pipeline, scheduled, run_args, args.clock, normalized, extracted)


def _table_plan(
    pipeline: PlannedPipeline,
    entry: ExtractJob,
    normalized: list[NormalizedTable] | None,
    state: PipelineState,
) -> TablePlan:
    resource = entry.resource
    name = normalize_table_name(str(resource.table_name))
    wd = resource.hints.write_disposition
    disposition = wd.disposition + (f"/{wd.strategy}" if wd.strategy else "")
    existing = pipeline.destination_dataset.table(name).schema()
    if normalized is not None:
        incoming = {
            spec.name: spec.spark_type for table in normalized if table.name == name for spec in table.columns
        }
    else:
        incoming = {
            normalize_column_path(column): spark_type(
                hints["data_type"], hints.get("precision"), hints.get("scale")
            )
            for column, hints in resource.hints.columns.items()
            if hints.get("data_type")
        }
    if existing is None:
        added = {column: dtype.simpleString() for column, dtype in incoming.items()}
        return TablePlan(name, resource.name, "added", disposition, added)
    old = {field.name: field.dataType for field in existing.fields}
    added = {column: dtype.simpleString() for column, dtype in incoming.items() if column not in old}
    changes = [
        TypeChange(
            column, old[column].simpleString(), _data_type_name(dtype), not _widens(old[column], dtype)
        )
        for column, dtype in incoming.items()
        if column in old and old[column].simpleString() != dtype.simpleString()
    ]
    # A value of another type opens a variant column: the column's type changes (which is
    # not destructive when the values only outgrew a narrow column another writer made).
    for column in incoming:
        variant = destructive.split_variant(column)
        if variant is not None and variant[0] in old and column not in old:
            base, kind = variant
            changes.append(
                TypeChange(base, old[base].simpleString(), kind, not destructive.widens(old[base], kind))
            )
            added.pop(column, None)
    recorded = (state.get(destructive.KEYS_STATE) or {}).get(name)
    # The keys as a run records them (normalized column names).
    keys = load_hints(resource.hints, root_key=False, max_table_nesting=None)
    for change in destructive.key_changes(name, keys, recorded):
        changes.append(TypeChange("(keys)", "", change.description, True))
    status = "changed" if added or changes else "unchanged"
    return TablePlan(name, resource.name, status, disposition, added, changes)


def _data_type_name(dtype: T.DataType) -> str:
    """A new type as the load's messages name it: sparkload's data type (``text``, as in a
    column hint), the engine's name where there is none."""
    try:
        return data_type_of_spark(dtype)
    except ValueError:
        return dtype.simpleString()


def _widens(old: T.DataType, new: T.DataType) -> bool:
    """Values of ``new`` fit ``old`` without loss (int → bigint, float → double)."""
    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    if isinstance(old, T.LongType) and isinstance(new, integral):
        return True
    return isinstance(old, T.DoubleType) and isinstance(new, (*integral, T.FloatType))


def _loads_without_intervals(jobs: list[ExtractJob], with_cursors: set[str]) -> dict[str, str]:
    """What each resource without intervals among ``jobs`` (the first package's: they run
    there) loads; ``with_cursors`` names the resources an incremental cursor bounds (their
    cursors bound as the run binds them, config of the pipeline's own sections included)."""
    loads: dict[str, str] = {}

    def walk(entries: list[ExtractJob], parent: str | None) -> None:
        for entry in entries:
            if entry.resource.intervals is None and not entry.feeds_only:
                loads[entry.resource.name] = _what_it_loads(entry.resource, parent, with_cursors)
            walk(entry.children, entry.resource.name)

    walk(jobs, None)
    return loads


def _what_it_loads(resource: Resource, parent: str | None, with_cursors: set[str]) -> str:
    disposition = resource.hints.write_disposition.disposition
    if resource.hints.refresh:
        return f"all rows (full refresh, {disposition})"
    if parent is not None:
        return f"the items '{parent}' feeds it ({disposition})"
    if resource.name in with_cursors or disposition == "append":
        return f"all new rows ({disposition})"
    return f"all rows ({disposition})"


def _incremental_starts(
    jobs: list[ExtractJob], state: PipelineState, pipeline_name: str
) -> dict[str, object]:
    """Where each incremental cursor starts, as ``resource.cursor_path``: bound as the run
    binds it, against the state the run finds."""
    starts: dict[str, object] = {}
    for entry in every_entry(jobs):
        resource = entry.resource
        stored = schedule.resource_state_of(state, entry.source_name, resource.name)
        for cursor, start in resource.cursor_starts(stored, pipeline_name).items():
            starts[f"{resource.name}.{cursor}"] = start
    return starts


def _inclusive(start: datetime.datetime, end: datetime.datetime, unit: IntervalUnit) -> tuple[str, str]:
    """[start, end) as SQLMesh's format_intervals prints it: inclusive, as dates for units of
    a day or longer, as times to the second for shorter ones."""
    last = end - _TINY
    if unit.is_date_granularity:
        return start.date().isoformat(), last.date().isoformat()
    return _second(start), _second(last)


def _second(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None, microsecond=0).isoformat(sep=" ")


def _inclusive_ranges(windows: list[Window], unit: IntervalUnit) -> list[tuple[str, str]]:
    """Contiguous windows merged, as inclusive ranges."""
    merged: list[list[datetime.datetime]] = []
    for window in sorted(windows, key=lambda w: w.start):
        if merged and window.start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], window.end)
        else:
            merged.append([window.start, window.end])
    return [_inclusive(start, end, unit) for start, end in merged]


def _describe_table(table: TablePlan) -> str:
    text = f"{table.table} ({table.disposition}, resource {table.resource})"
    parts = [f"+ {column} {dtype}" for column, dtype in table.added_columns.items()]
    parts += [
        f"~ {c.column} {c.old} → {c.new}" + (" (destructive)" if c.destructive else "")
        for c in table.type_changes
    ]
    return text + (": " + "; ".join(parts) if parts else "")


def _describe_intervals(plan: IntervalPlan) -> str:
    ranges = ", ".join(f"{start} - {end}" for start, end in plan.missing)
    return f"{plan.resource}: {ranges} ({plan.batches} batch{'es' if plan.batches != 1 else ''})"


def _tree(title: str, items: list[tuple[str, list[str]]]) -> list[str]:
    """SQLMesh's summary layout: ├── / └── branches, one level of children."""
    lines = [title]
    for i, (label, children) in enumerate(items):
        last = i == len(items) - 1
        lines.append(("└── " if last else "├── ") + label)
        for j, child in enumerate(children):
            lines.append(
                ("    " if last else "│   ") + ("└── " if j == len(children) - 1 else "├── ") + child
            )
    return lines


# -- HTML --------------------------------------------------------------------------------------
def plan_html(plan: Plan) -> str:
    """The tables with their status and changes, the intervals to run, restated and ignored
    resources and where the incremental cursors start."""
    summary: list[tuple[str, object]] = [
        ("pipeline", plan.pipeline_name),
        ("dataset", plan.dataset_uri),
        ("execution time", plan.execution_time),
    ]
    if plan.extracted:
        summary.append(("extracted packages", list(plan.extracted)))
    if not plan.has_changes:
        summary.append(("changes", "none: nothing to load"))
    parts = [html_tables.fields(summary)]
    if plan.tables:
        parts.append(
            html_tables.table(
                ("table", "resource", "status", "disposition", "changes"),
                (
                    (t.table, t.resource, t.status, t.disposition, _table_changes(t))
                    for t in sorted(plan.tables, key=lambda t: STATUS_ORDER.get(t.status, 3))
                ),
                "Tables",
            )
        )
    if plan.intervals:
        parts.append(
            html_tables.table(
                ("resource", "missing", "batches", "restated"),
                (_interval_row(i) for i in plan.intervals),
                "Intervals to run",
            )
        )
    if plan.loads:
        parts.append(
            html_tables.table(("resource", "loads"), plan.loads.items(), "Resources without intervals to run")
        )
    if plan.ignored:
        parts.append(
            html_tables.table(
                ("resource", "expected start"),
                ((name, start or "no start: restate without start=") for name, start in plan.ignored.items()),
                "Ignored resources",
            )
        )
    if plan.incrementals:
        parts.append(
            html_tables.table(
                ("cursor", "starts at"),
                ((name, repr(value)) for name, value in plan.incrementals.items()),
                "Incremental cursors",
            )
        )
    return html_tables.block(parts)


def _table_changes(table_plan: TablePlan) -> list[str]:
    changes = [f"+ {column} {dtype}" for column, dtype in table_plan.added_columns.items()]
    changes += [
        f"~ {c.column} {c.old} → {c.new}" + (" (destructive)" if c.destructive else "")
        for c in table_plan.type_changes
    ]
    return changes


def _interval_row(interval: IntervalPlan) -> tuple[object, ...]:
    missing = [f"{start} – {end}" for start, end in interval.missing] or "none"
    restated = f"{interval.restated[0]} – {interval.restated[1]}" if interval.restated else None
    return interval.resource, missing, interval.batches, restated
