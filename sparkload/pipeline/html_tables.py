"""The pieces of the HTML tables Jupyter and Databricks notebooks show for a LoadInfo, a
Plan and a PipelineTrace: each class renders itself (its ``_repr_html_``, next to it) with
these, so this module knows none of them.

Every value goes through ``html.escape``: table and column names, notes, reasons and cursor
values come from the user's data and must show as text, never become markup.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Iterable, Sequence
from typing import Protocol

# Headers that read better than the attribute they show.
HEADERS = {"version": "Delta version", "load_id": "load id"}
# Styles on each element, not in a <style> block: JupyterLab strips <style> from the
# outputs of a notebook it does not trust (one opened rather than run), and its own
# stylesheet then right-aligns table cells; an element's own style attribute is kept
# and wins over both.
_TABLE = 'style="border-collapse: collapse; margin: 0.4em 0"'
_CELL = 'style="text-align: left; padding: 0.1em 0.6em; vertical-align: top"'
_CAPTION = 'style="text-align: left; font-weight: bold"'


class PrettyPrinter(Protocol):
    """What the classes' ``_repr_pretty_`` uses of IPython's plain-text printer (IPython is
    not a dependency: this names the one method called)."""

    def text(self, obj: str) -> None: ...


def table(headers: Sequence[str] | None, rows: Iterable[Sequence[object]], caption: str | None = None) -> str:
    """An HTML table of ``rows``, each value rendered by ``cell``; ``headers`` None: none."""
    parts = [f"<table {_TABLE}>"]
    if caption is not None:
        parts.append(f"<caption {_CAPTION}>{html.escape(caption)}</caption>")
    if headers is not None:
        heads = "".join(f"<th {_CELL}>{html.escape(h)}</th>" for h in headers)
        parts.append(f"<thead><tr>{heads}</tr></thead>")
    parts.append("<tbody>")
    for row in rows:
        parts.append("<tr>" + "".join(f"<td {_CELL}>{cell(v)}</td>" for v in row) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def fields(pairs: Iterable[tuple[str, object]]) -> str:
    """A two-column table of named values, the name as the row's header."""
    rows = "".join(
        f"<tr><th {_CELL}>{html.escape(name)}</th><td {_CELL}>{cell(value)}</td></tr>"
        for name, value in pairs
    )
    return f"<table {_TABLE}><tbody>{rows}</tbody></table>"


def cell(value: object) -> str:
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


def block(parts: Iterable[str]) -> str:
    """The parts of one object's output, in one element."""
    return '<div class="sparkload">' + "".join(parts) + "</div>"
