"""Lag: a run of an incremental with ``lag`` starts that far behind the stored cursor, to
refetch rows that arrived late or changed at the edge.

The unit follows the cursor: seconds for datetimes (and ISO datetime strings), days for
dates (and ISO date strings), units for numbers. "Behind" is in ``last_value_func``'s order
(earlier for max, later for min), and never past the incremental's ``initial_value``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

import pendulum

from sparkload.exceptions import ResourceError
from sparkload.extract.incremental.transform import comparable


def apply_lag(
    value: object, lag: float, last_value_func: Callable[[Sequence[Any]], Any], initial_value: object
) -> object:
    """``value`` moved back (max) or forward (min) by ``lag``, bounded by ``initial_value``."""
    sign = -1 if last_value_func is max else 1
    if isinstance(value, bool):
        raise ResourceError("incremental lag does not apply to boolean cursors")
    if isinstance(value, (int, float)):
        number = value + sign * lag
        moved: object = int(number) if isinstance(value, int) and float(number).is_integer() else number
    elif isinstance(value, datetime.datetime):
        moved = value + sign * datetime.timedelta(seconds=lag)
    elif isinstance(value, datetime.date):
        moved = value + sign * datetime.timedelta(days=lag)
    elif isinstance(value, str):
        moved = _moved_text(value, sign * lag)
    else:
        raise ResourceError(f"incremental lag does not apply to cursor values like {value!r}")
    if initial_value is not None:
        moved = last_value_func((moved, comparable(initial_value, moved)))
    return moved


def _moved_text(value: str, lag: float) -> str:
    """An ISO datetime string moved by ``lag`` seconds, an ISO date by ``lag`` days, in the
    same notation (a trailing ``Z`` stays)."""
    parsed = pendulum.parse(value)
    if isinstance(parsed, datetime.datetime) and ("T" in value or " " in value):
        shifted = parsed + datetime.timedelta(seconds=lag)
        return shifted.isoformat().replace("+00:00", "Z") if value.endswith("Z") else shifted.isoformat()
    day = datetime.date.fromisoformat(value[:10]) + datetime.timedelta(days=lag)
    return day.isoformat()
