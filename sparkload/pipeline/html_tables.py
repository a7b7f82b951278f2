"""The HTML tables Jupyter and Databricks notebooks show for a LoadInfo, a Plan and a
PipelineTrace (their ``_repr_html_``).

Every value goes through ``html.escape``: table and column names, notes, reasons and cursor
values come from the user's data and must show as text, never become markup. The renderers
read the objects by attribute only (no imports of their classes at run time), so the
classes can import this module without a cycle, and a field added to an object needs only
a column name added here.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkload.pipeline.load_info import LoadInfo
    from sparkload.pipeline.plan import IntervalPlan, Plan, TablePlan
    from sparkload.pipeline.trace import PipelineTrace

# The columns of a LoadInfo's table entries, in the order shown; keys an entry has beyond
# these follow them, so a new key shows without a change here.
_LOAD_COLUMNS = ("table", "rows", "disposition", "version", "load_id")
_LOAD_HEADERS = {"version": "Delta version", "load_id": "load id"}
# The attributes of a trace's steps (TraceStep) shown as columns, in order.
_STEP_COLUMNS = ("step", "load_id", "status", "seconds")
# Plan tables in the order the plan's text lists them.
_STATUS_ORDER = {"added": 0, "changed": 1, "unchanged": 2}
# One style for the whole output, scoped to it: notebooks right-align table cells by default.
_STYLE = (
    "<style>.sparkload table {border-collapse: collapse; margin: 0.4em 0}"
    " .sparkload th, .sparkload td {text-align: left; padding: 0.1em 0.6em; vertical-align: top}"
    " .sparkload caption {text-align: left; font-weight: bold}</style>"
)


def table(headers: Sequence[str] | None, rows: Iterable[Sequence[Any]], caption: str | None = None) -> str:
    """An HTML table of ``rows``, each value rendered by ``cell``; ``headers`` None: none."""
    parts = ["<table>"]
    if caption is not None:
        parts.append(f"<caption>{html.escape(caption)}</caption>")
    if headers is not None:
        parts.append("<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr></thead>")
    parts.append("<tbody>")
    for row in rows:
        parts.append("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def fields(pairs: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of named values, the name as the row's header."""
    rows = "".join(f"<tr><th>{html.escape(name)}</th><td>{cell(value)}</td></tr>" for name, value in pairs)
    return f"<table><tbody>{rows}</tbody></table>"


def cell(value: Any) -> str:
    """One value as escaped HTML: a list one item per line, numbers with separators."""
    if isinstance(value, (list, tuple)):
        return "<br>".join(cell(item) for item in value)
    if value is None:
        text = "–"
    elif isinstance(value, bool):
        text = str(value)
    elif isinstance(value, int):
        text = f"{value:,}"
    elif isinstance(value, float):
        text = f"{value:.2f}"
    elif isinstance(value, datetime.datetime):
        text = value.isoformat()
    else:
        text = str(value)
    return html.escape(text)


def _block(parts: Iterable[str]) -> str:
    return '<div class="sparkload">' + _STYLE + "".join(parts) + "</div>"


# -- LoadInfo ----------------------------------------------------------------------------------
def load_info_html(info: LoadInfo) -> str:
    """The pipeline, dataset and load ids, then one row per table and package loaded, the
    rows rules dropped or warned of, and the notes."""
    summary: list[tuple[str, Any]] = [("pipeline", info.pipeline_name)]
    summary += _load_summary(info)
    if info.timings:
        summary.append(("took", [f"{t.step} {t.seconds:.2f}s" for t in info.timings]))
    return _block([fields(summary), *_load_details(info)])


def _load_summary(info: LoadInfo) -> list[tuple[str, Any]]:
    return [
        ("dataset", info.dataset_uri),
        ("load ids", list(info.loads_ids) if info.loads_ids else "nothing loaded"),
    ]


def _load_details(info: LoadInfo) -> list[str]:
    """The tables loaded, the rows rules dropped or warned of, and the notes."""
    parts = []
    if info.tables:
        columns = list(_LOAD_COLUMNS)
        if len(info.loads_ids) <= 1:
            columns.remove("load_id")  # the summary names the one load
        columns += [key for entry in info.tables for key in entry if key not in _LOAD_COLUMNS]
        columns = list(dict.fromkeys(columns))
        parts.append(
            table(
                [_LOAD_HEADERS.get(c, c) for c in columns],
                ([entry.get(c) for c in columns] for entry in info.tables),
                "Tables",
            )
        )
    by_reason = [
        (name, reason, outcome, rows)
        for outcome, counts in (("dropped", info.dropped_rows), ("warned", info.warned_rows))
        for name, reasons in counts.items()
        for reason, rows in reasons.items()
    ]
    if by_reason:
        parts.append(
            table(("table", "reason", "outcome", "rows"), by_reason, "Rows dropped or loaded with a warning")
        )
    if info.notes:
        parts.append(table(None, ([note] for note in info.notes), "Notes"))
    return parts


# -- Plan --------------------------------------------------------------------------------------
def plan_html(plan: Plan) -> str:
    """The tables with their status and changes, the intervals to run, restated and ignored
    resources and where the incremental cursors start."""
    summary: list[tuple[str, Any]] = [
        ("pipeline", plan.pipeline_name),
        ("dataset", plan.dataset_uri),
        ("execution time", plan.execution_time),
    ]
    if plan.extracted:
        summary.append(("extracted packages", list(plan.extracted)))
    if not plan.has_changes:
        summary.append(("changes", "none: nothing to load"))
    parts = [fields(summary)]
    if plan.tables:
        parts.append(
            table(
                ("table", "resource", "status", "disposition", "changes"),
                (
                    (t.table, t.resource, t.status, t.disposition, _table_changes(t))
                    for t in sorted(plan.tables, key=lambda t: _STATUS_ORDER.get(t.status, 3))
                ),
                "Tables",
            )
        )
    if plan.intervals:
        parts.append(
            table(
                ("resource", "missing", "batches", "restated"),
                (_interval_row(i) for i in plan.intervals),
                "Intervals to run",
            )
        )
    if plan.ignored:
        parts.append(
            table(
                ("resource", "expected start"),
                ((name, start or "no start: restate without start=") for name, start in plan.ignored.items()),
                "Ignored resources",
            )
        )
    if plan.incrementals:
        parts.append(
            table(
                ("cursor", "starts at"),
                ((name, repr(value)) for name, value in plan.incrementals.items()),
                "Incremental cursors",
            )
        )
    return _block(parts)


def _table_changes(table_plan: TablePlan) -> list[str]:
    changes = [f"+ {column} {dtype}" for column, dtype in table_plan.added_columns.items()]
    changes += [
        f"~ {c.column} {c.old} → {c.new}" + (" (destructive)" if c.destructive else "")
        for c in table_plan.type_changes
    ]
    return changes


def _interval_row(interval: IntervalPlan) -> tuple[Any, ...]:
    missing = [f"{start} – {end}" for start, end in interval.missing] or "none"
    restated = f"{interval.restated[0]} – {interval.restated[1]}" if interval.restated else None
    return interval.resource, missing, interval.batches, restated


# -- PipelineTrace -----------------------------------------------------------------------------
def trace_html(trace: PipelineTrace) -> str:
    """The run's status and time, its steps with their status and seconds, the error that
    ended it, then what the last load loaded."""
    summary: list[tuple[str, Any]] = [
        ("pipeline", trace.pipeline_name),
        ("status", trace.status),
        ("started", trace.started_at),
        ("seconds", trace.seconds),
    ]
    if trace.last_load_info is not None:
        summary += _load_summary(trace.last_load_info)
    parts = [fields(summary)]
    if trace.steps:
        parts.append(
            table(
                [_LOAD_HEADERS.get(c, c) for c in _STEP_COLUMNS],
                ([getattr(step, column, None) for column in _STEP_COLUMNS] for step in trace.steps),
                "Steps",
            )
        )
    if trace.error is not None:
        error = trace.error
        where = f"Error in step {error.step}" if error.step else "Error"
        parts.append(table(None, [[f"{error.type}: {error.message}"]], where))
    if trace.last_load_info is not None:
        parts += _load_details(trace.last_load_info)
    return _block(parts)
