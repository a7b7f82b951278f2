"""Small builders for the SQL sparkload sends: identifiers are always quoted, values never
appear in SQL text (they travel as DataFrames).

The one exception is a time window's bounds in a ``replaceWhere`` predicate, which Delta
takes only as text: they are written by ``timestamp_literal`` from datetime objects the
pipeline computed, never from data.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable


def quote(identifier: str) -> str:
    """A backtick-quoted identifier; a backtick inside is doubled."""
    return "`" + identifier.replace("`", "``") + "`"


def timestamp_literal(moment: datetime.datetime) -> str:
    """``TIMESTAMP'2024-01-01 00:00:00+00:00'`` for an aware datetime."""
    if moment.tzinfo is None:
        raise ValueError("a timestamp literal needs an aware datetime")
    return "TIMESTAMP'" + moment.isoformat(sep=" ") + "'"


def string_literal(text: str) -> str:
    """A quoted string literal; quotes and backslashes inside are escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def delta_path(path: str) -> str:
    """``delta.`<path>``` for statements on a table addressed by its location."""
    return "delta." + quote(path)


def qualified(alias: str, column: str) -> str:
    return f"{quote(alias)}.{quote(column)}"


def conjunction(conditions: Iterable[str]) -> str:
    parts = [f"({condition})" for condition in conditions]
    return " AND ".join(parts) if parts else "TRUE"
