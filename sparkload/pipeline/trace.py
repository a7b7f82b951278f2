"""The trace of a run: when it ran, each step (extract, normalize, load) with its time,
status and tables, the LoadInfo, the exception that ended it and the config names it
resolved. ``pipeline/trace_file.py`` saves it in the working directory as JSON.

Secrets never reach a trace's text: the error's message and traceback are redacted when the
error is recorded, and ``to_dict`` redacts every string again (see ``config/resolved.py``).
"""

from __future__ import annotations

import dataclasses
import datetime
import traceback
from collections.abc import Mapping
from typing import Any

from sparkload.config.resolved import own_text, redact_strings, redact_text, resolved_names
from sparkload.exceptions import PipelineStepFailed
from sparkload.pipeline import html_tables
from sparkload.pipeline.load_info import LoadInfo, StepTiming, load_details, load_summary

OK = "ok"
FAILED = "failed"
RUNNING = "running"  # a trace on disk whose run never finished (the process was killed)
# The attributes of a trace's steps (TraceStep) shown as columns of its HTML, in order.
STEP_COLUMNS = ("step", "load_id", "status", "seconds")


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


@dataclasses.dataclass
class TraceStep:
    """One step of one load package (``load_id`` None: before there is a package).
    ``tables``: what the step knows of each table, e.g. ``{"orders": {"rows": 3}}``."""

    step: str
    load_id: str | None
    started_at: datetime.datetime
    finished_at: datetime.datetime | None = None
    seconds: float = 0.0
    status: str = OK
    tables: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "load_id": own_text(self.load_id),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceStep:
        started = datetime.datetime.fromisoformat(data["started_at"])
        return cls(**{**data, "started_at": started, "finished_at": _parse(data.get("finished_at"))})


@dataclasses.dataclass
class TraceError:
    """The exception that ended a run, with secrets replaced by ``***``. ``type`` is the
    cause's (a step's failure is raised as PipelineStepFailed wrapping it)."""

    type: str
    message: str
    step: str | None
    load_id: str | None
    traceback: str
    # Where it failed, as the errors in its chain name it (a trace written before these
    # were recorded has none).
    resource: str | None = None
    table: str | None = None
    column: str | None = None
    file: str | None = None

    @classmethod
    def of(cls, error: BaseException) -> TraceError:
        step = error.step if isinstance(error, PipelineStepFailed) else None
        load_id = error.load_id if isinstance(error, PipelineStepFailed) else None
        cause = error.__cause__ if step is not None and error.__cause__ is not None else error
        return cls(
            _type_name(cause),
            redact_text(str(error) or type(error).__name__),
            step,
            load_id,
            redact_text("".join(traceback.format_exception(error))),
            **{name: _named(error, name) for name in CULPRIT_FIELDS},
        )

    def culprit(self) -> str:
        """Where it failed, in words: "resource 'r', table 't', column 'c', file 'f'"."""
        return ", ".join(f"{name} '{getattr(self, name)}'" for name in CULPRIT_FIELDS if getattr(self, name))


# What an error names, as its attributes: sparkload's errors carry them (exceptions.py).
CULPRIT_FIELDS = ("resource", "table", "column", "file")


def _named(error: BaseException, name: str) -> str | None:
    """The first ``name`` an error of ``error``'s chain of causes carries (redacted: a file's
    URL may hold credentials)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        value = getattr(current, name, None)
        if isinstance(value, str) and value:
            return redact_text(value)
        current = current.__cause__ or current.__context__
    return None


@dataclasses.dataclass(frozen=True)
class NormalizeInfo:
    """What the normalize steps of a trace did, as dlt's ``NormalizeInfo`` tells it:
    ``loads_ids`` and ``row_counts`` (rows of each table, nested tables included)."""

    pipeline_name: str
    loads_ids: list[str]
    row_counts: dict[str, int]


@dataclasses.dataclass
class PipelineTrace:
    pipeline_name: str
    steps: list[TraceStep] = dataclasses.field(default_factory=list)
    last_load_info: LoadInfo | None = None
    started_at: datetime.datetime | None = None
    finished_at: datetime.datetime | None = None
    # The Pipeline methods the trace covers: ["run"], or extract, normalize and load called
    # one after another (their steps add up to one trace, as in dlt).
    calls: list[str] = dataclasses.field(default_factory=list)
    error: TraceError | None = None
    # The config names resolved in the process by the end of the run (ResolvedName.to_dict:
    # key, provider, name, secret, and the value of a name that is not secret).
    config: list[dict[str, object]] = dataclasses.field(default_factory=list)

    @property
    def timings(self) -> list[StepTiming]:
        """The time of each step that succeeded."""
        return [StepTiming(step.step, step.seconds) for step in self.steps if step.status == OK]

    @property
    def status(self) -> str:
        if self.error is not None or any(step.status == FAILED for step in self.steps):
            return FAILED
        if self.started_at is not None and self.finished_at is None:
            return RUNNING
        return OK

    @property
    def seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def dropped_rows(self) -> dict[str, dict[str, int]]:
        """The last load's rows left out by rules (``LoadInfo.dropped_rows``)."""
        return self.last_load_info.dropped_rows if self.last_load_info else {}

    @property
    def warned_rows(self) -> dict[str, dict[str, int]]:
        """The last load's rows let through with a warning (``LoadInfo.warned_rows``)."""
        return self.last_load_info.warned_rows if self.last_load_info else {}

    @property
    def expectations(self) -> dict[str, dict[str, dict[str, int]]]:
        """The last load's expectation counts (``LoadInfo.expectations``)."""
        return self.last_load_info.expectations if self.last_load_info else {}

    @property
    def last_normalize_info(self) -> NormalizeInfo | None:
        """dlt's ``trace.last_normalize_info``: the packages normalized under this trace and
        the rows of each table; None if no normalize step ran."""
        steps = [step for step in self.steps if step.step == "normalize" and step.load_id is not None]
        if not steps:
            return None
        counts: dict[str, int] = {}
        for step in steps:
            for table, known in step.tables.items():
                counts[table] = counts.get(table, 0) + int(known.get("rows") or 0)
        return NormalizeInfo(self.pipeline_name, [str(step.load_id) for step in steps], counts)

    def add_step(self, step: TraceStep) -> None:
        self.steps.append(step)

    def start(self, call: str) -> None:
        """A Pipeline method begins under this trace (a run, or one step called alone)."""
        if self.started_at is None:
            self.started_at = utc_now()
        self.calls.append(call)
        self.finished_at = None

    def finish(self, error: BaseException | None = None) -> None:
        """The method ended, by returning or by ``error``."""
        self.finished_at = utc_now()
        if error is not None:
            self.error = TraceError.of(error)
            failed = [step for step in self.steps if step.status == FAILED]
            if self.error.step is None and failed:
                # Not wrapped by its step (an interrupt): the step it stopped is where.
                self.error.step, self.error.load_id = failed[-1].step, failed[-1].load_id
        self.config = [name.to_dict() for name in resolved_names()]

    def to_dict(self) -> dict[str, Any]:
        """The trace as JSON-ready values, every string redacted."""
        data = {
            "pipeline_name": self.pipeline_name,
            "calls": self.calls,
            "status": self.status,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "seconds": self.seconds,
            "steps": [step.to_dict() for step in self.steps],
            "error": _error_dict(self.error) if self.error else None,
            "load_info": _load_info_dict(self.last_load_info) if self.last_load_info else None,
            "config": self.config,
        }
        redacted: dict[str, Any] = redact_strings(data)
        return redacted

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PipelineTrace:
        error = data.get("error")
        load_info = data.get("load_info")
        return cls(
            data["pipeline_name"],
            [TraceStep.from_dict(step) for step in data.get("steps", [])],
            LoadInfo.from_dict(load_info) if load_info else None,
            _parse(data.get("started_at")),
            _parse(data.get("finished_at")),
            list(data.get("calls", [])),
            TraceError(**error) if error else None,
            list(data.get("config", [])),
        )

    def __str__(self) -> str:
        lines = [f"Run of {self.pipeline_name}: {self.status}"]
        lines += [
            f"  {step.step} {step.status} {step.seconds:.2f}s"
            + (f" (load {step.load_id})" if step.load_id else "")
            for step in self.steps
        ]
        if self.error is not None:
            culprit = self.error.culprit()
            if culprit:
                lines.append(f"  failed at: {culprit}")
            lines.append(f"  error: {self.error.type}: {self.error.message}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return trace_html(self)

    def _repr_pretty_(self, printer: html_tables.PrettyPrinter, cycle: bool) -> None:
        printer.text(str(self))  # IPython's plain-text display: one line per step

    def describe(self) -> str:
        """The whole trace, readable: what ``sparkload pipeline <name> trace`` prints."""
        took = "" if self.seconds is None else f" in {self.seconds:.2f}s"
        lines = [
            f"pipeline: {self.pipeline_name}",
            f"calls: {', '.join(self.calls) or '-'}",
            f"started: {_iso(self.started_at) or '-'}",
            f"finished: {_iso(self.finished_at) or '- (the run did not finish)'}",
            f"status: {self.status}{took}",
            "steps:",
        ]
        if not self.steps:
            lines.append("  (none)")
        for step in self.steps:
            package = f" load {step.load_id}" if step.load_id else ""
            lines.append(f"  {step.step}{package}: {step.status} in {step.seconds:.2f}s")
            lines += [f"    {table}: {_counts(counts)}" for table, counts in step.tables.items()]
        if self.error is not None:
            where = f" in step {self.error.step}" if self.error.step else ""
            package = f" (load {self.error.load_id})" if self.error.load_id else ""
            lines.append(f"error{where}{package}: {self.error.type}")
            if self.error.culprit():
                lines.append(f"  at {self.error.culprit()}")
            lines += [f"  {line}" for line in self.error.message.splitlines()]
            lines.append("traceback:")
            lines += [f"  {line}" for line in self.error.traceback.rstrip().splitlines()]
        if self.last_load_info is not None:
            lines.append("load info:")
            lines += [f"  {line}" for line in str(self.last_load_info).splitlines()]
        lines.append("resolved config:")
        if not self.config:
            lines.append("  (none)")
        for entry in self.config:
            value = "(secret)" if entry.get("secret") else repr(entry.get("value"))
            lines.append(f"  {entry['key']} = {value} from {entry['provider']} ({entry['name']})")
        return "\n".join(redact_text(line) for line in lines)


def _counts(counts: Mapping[str, object]) -> str:
    return ", ".join(f"{name} {value}" for name, value in counts.items())


def _type_name(error: BaseException) -> str:
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _iso(moment: datetime.datetime | None) -> str | None:
    return own_text(moment.isoformat()) if moment is not None else None


# The trace's own texts (timestamps, load ids) are kept out of its redaction: see OwnText.
def _error_dict(error: TraceError) -> dict[str, Any]:
    return {**dataclasses.asdict(error), "load_id": own_text(error.load_id)}


def _load_info_dict(info: LoadInfo) -> dict[str, Any]:
    data = info.to_dict()
    data["load_id"] = own_text(info.load_id)
    data["loads_ids"] = [own_text(load_id) for load_id in info.loads_ids]
    for key in ("tables", "rows_by_reason"):
        data[key] = [{**entry, "load_id": own_text(entry["load_id"])} for entry in data[key]]
    return data


def _parse(text: str | None) -> datetime.datetime | None:
    return datetime.datetime.fromisoformat(text) if text else None


# -- HTML -----------------------------------------------------------------------------
def trace_html(trace: PipelineTrace) -> str:
    """The run's status and time, its steps with their status and seconds, the error that
    ended it, then what the last load loaded."""
    summary: list[tuple[str, object]] = [
        ("pipeline", trace.pipeline_name),
        ("status", trace.status),
        ("started", trace.started_at),
        ("seconds", trace.seconds),
    ]
    if trace.last_load_info is not None:
        summary += load_summary(trace.last_load_info)
    parts = [html_tables.fields(summary)]
    if trace.steps:
        parts.append(
            html_tables.table(
                [html_tables.HEADERS.get(c, c) for c in STEP_COLUMNS],
                ([getattr(step, column, None) for column in STEP_COLUMNS] for step in trace.steps),
                "Steps",
            )
        )
    if trace.error is not None:
        error = trace.error
        where = f"Error in step {error.step}" if error.step else "Error"
        rows = [[f"at {error.culprit()}"]] if error.culprit() else []
        parts.append(html_tables.table(None, [*rows, [f"{error.type}: {error.message}"]], where))
    if trace.last_load_info is not None:
        parts += load_details(trace.last_load_info)
    return html_tables.block(parts)
