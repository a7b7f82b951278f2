"""External schedulers (``allow_external_schedulers=True``): inside an Airflow task, the
task's data interval is the incremental's range instead of the stored cursor.

The interval is read from the running task's context and clipped by dlt's rules
(``scheduler_interval``); ``external_bound`` turns its ends into the cursor's type. Outside
an Airflow task there is no interval and the incremental uses its state as usual.
"""

from __future__ import annotations

import datetime
import importlib
from collections.abc import Mapping
from typing import Any

from sparkload.common import context as run_context
from sparkload.common.time import plain_utc
from sparkload.exceptions import ResourceError


def external_interval() -> tuple[datetime.datetime, datetime.datetime] | None:
    """The running Airflow task's data interval (see ``scheduler_interval``), or None outside
    an Airflow task."""
    airflow = _airflow_context()
    if airflow is None:
        return None
    return scheduler_interval(
        airflow.get("data_interval_start"), airflow.get("data_interval_end"), run_context.execution_time()
    )


def scheduler_interval(
    start: datetime.datetime | None, end: datetime.datetime | None, now: datetime.datetime
) -> tuple[datetime.datetime, datetime.datetime]:
    """A scheduler's data interval as the cursor range, in UTC, by dlt's rules.

    The end is ``now`` (the run's ``execution_time``) when the interval ends in the future or
    has no end, and when it is empty (``start == end``, a manual run): such a run loads from
    its logical date up to now. A run without a start (Airflow 3's manual run without a
    logical date) starts now too, so it loads nothing rather than everything.
    """
    now = plain_utc(now)
    first = now if start is None else plain_utc(start)
    last = now if end is None else plain_utc(end)
    if last > now or first == last:
        last = now
    return first, max(first, last)


def external_bound(
    instant: datetime.datetime, kind: type | None
) -> datetime.datetime | datetime.date | int | float | str:
    """``instant`` as a cursor of type ``kind``: ISO-8601 text (``...Z``), a Unix timestamp
    (int or float), a date, or a UTC datetime."""
    if kind is None or issubclass(kind, datetime.datetime):
        return instant
    if issubclass(kind, bool):
        raise ResourceError("an external scheduler's interval cannot bound a boolean cursor")
    if issubclass(kind, int):
        return int(instant.timestamp())
    if issubclass(kind, float):
        return instant.timestamp()
    if issubclass(kind, datetime.date):
        return instant.date()
    if issubclass(kind, str):
        return instant.isoformat().replace("+00:00", "Z")
    raise ResourceError(
        f"an external scheduler's interval cannot be converted to a cursor of type {kind.__name__}; "
        "use a str, int, float, date or datetime cursor"
    )


def _airflow_context() -> Mapping[str, Any] | None:
    """The running Airflow task's context (Airflow 3's task SDK, else Airflow 2's), or None."""
    for module in ("airflow.sdk", "airflow.operators.python"):
        try:
            get_context = importlib.import_module(module).get_current_context
        except (ImportError, AttributeError):
            continue  # not this Airflow
        try:
            context: Mapping[str, Any] = get_context()
        except Exception:  # no task is running
            return None
        return context
    return None
