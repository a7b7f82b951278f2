"""Small builders for the SQL sparkload sends: identifiers are always quoted, values never
appear in SQL text (they travel as DataFrames).

The exceptions are bounds the pipeline computes itself and a statement takes only as text
(a time window's bounds in a ``replaceWhere`` predicate): ``literals`` writes them, and
nothing else writes a value into SQL.
"""

from __future__ import annotations

from collections.abc import Iterable


def quote(identifier: str) -> str:
    """A backtick-quoted identifier; a backtick inside is doubled."""
    return "`" + identifier.replace("`", "``") + "`"


def delta_path(path: str) -> str:
    """``delta.`<path>``` for statements on a table addressed by its location."""
    return "delta." + quote(path)


def qualified(alias: str, column: str) -> str:
    return f"{quote(alias)}.{quote(column)}"


def conjunction(conditions: Iterable[str]) -> str:
    parts = [f"({condition})" for condition in conditions]
    return " AND ".join(parts) if parts else "TRUE"
