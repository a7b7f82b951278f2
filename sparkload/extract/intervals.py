"""Time intervals (SQLMesh's accounting of time) as a resource argument.

``window=sl.sources.intervals("event_time", start="2024-01-01", cron="@daily")`` declares
that a resource loads data by time. Time since ``start`` is cut into intervals at the
cron's ticks (croniter); the pipeline keeps a ledger of processed intervals in the
resource's state, works out which complete intervals are missing at the run's execution
time, adds the last ``lookback`` ones again, splits them into batches of ``batch_size``
intervals and calls the resource once per batch with the argument bound to that batch's
window. Each batch is its own load package, so its rows and its ledger entry commit
together.
"""

from __future__ import annotations

import copy
import datetime
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

from croniter import croniter

from sparkload.common.time import Window, as_utc, plain_utc
from sparkload.exceptions import ResourceError

LEDGER_KEY = "intervals"
_TINY = datetime.timedelta(microseconds=1)
# The fields of a text time column's format, most significant first: text in a format made
# of a prefix of them (with any fixed separators) sorts as its times do.
_SORTABLE_FIELDS = ("%Y", "%m", "%d", "%H", "%M", "%S", "%f")


class Intervals:
    """The argument a resource declares; bound to one batch's window when it is called.

    SQLMesh's macro values are there too: ``start_ds``/``end_ds`` are inclusive dates as
    ``YYYY-MM-DD``, ``start_dt``/``end_dt`` inclusive datetimes (``end_dt`` is one
    microsecond before ``end``).
    """

    def __init__(
        self,
        time_column: str,
        start: Any,
        cron: str = "@daily",
        lookback: int = 0,
        batch_size: int | None = None,
        end: Any = None,
        allow_partials: bool = False,
        time_column_format: str | None = None,
    ) -> None:
        if not time_column:
            raise ResourceError("intervals need a time_column")
        if not croniter.is_valid(cron):
            raise ResourceError(f"intervals: {cron!r} is not a cron expression")
        if lookback < 0 or (batch_size is not None and batch_size < 1):
            raise ResourceError("intervals: lookback must be >= 0 and batch_size >= 1")
        self.time_column = time_column
        self.start_value = as_utc(start, "intervals start")
        self.cron = cron
        self.lookback = lookback
        self.batch_size = batch_size
        self.end_value = as_utc(end, "intervals end") if end is not None else None
        self.allow_partials = allow_partials
        if time_column_format is not None:
            _check_sortable(time_column_format)
        self.time_column_format = time_column_format
        self.window: Window | None = None

    # -- the bound window ---------------------------------------------------------------
    def _bound(self) -> Window:
        if self.window is None:
            raise ResourceError(
                "this intervals argument is not bound to a window: run the resource in a pipeline"
            )
        return self.window

    @property
    def start(self) -> datetime.datetime:
        return self._bound().start

    @property
    def end(self) -> datetime.datetime:
        return self._bound().end

    @property
    def start_dt(self) -> datetime.datetime:
        return self.start

    @property
    def end_dt(self) -> datetime.datetime:
        return self.end - _TINY

    @property
    def start_ds(self) -> str:
        return self.start.date().isoformat()

    @property
    def end_ds(self) -> str:
        return self.end_dt.date().isoformat()

    def bound_to(self, window: Window) -> Intervals:
        bound = copy.copy(self)
        bound.window = window
        return bound

    def __repr__(self) -> str:
        where = f" [{self.window.start.isoformat()}, {self.window.end.isoformat()})" if self.window else ""
        return f"intervals({self.time_column!r}, cron={self.cron!r}){where}"

    # -- the grid and the ledger ---------------------------------------------------------
    def grid(self, execution_time: datetime.datetime) -> tuple[list[Window], Window | None]:
        """The complete intervals from start up to ``execution_time`` (and ``end``), and
        the incomplete one that ``execution_time`` falls in (None at a tick)."""
        until = as_utc(execution_time, "execution_time")
        if self.end_value is not None:
            until = min(until, self.end_value)
        # The interval holding ``start`` is the first: SQLMesh floors start to the cron.
        tick = plain_utc(croniter(self.cron, self.start_value + _TINY).get_prev(datetime.datetime))
        step = _regular_step(self.cron)
        if step is not None:
            # Evenly spaced ticks (hourly, daily, every 15 minutes …): arithmetic, not
            # croniter's per-tick search, so a year of hours takes milliseconds.
            count = int((until - tick) / step)
            complete = [Window(tick + i * step, tick + (i + 1) * step) for i in range(count)]
            last = tick + count * step
            return complete, (Window(last, until, partial=True) if last < until else None)
        ticks = croniter(self.cron, tick)
        complete = []
        while True:
            following = plain_utc(ticks.get_next(datetime.datetime))
            if following > until:
                partial = Window(tick, until, partial=True) if tick < until else None
                return complete, partial
            complete.append(Window(tick, following))
            tick = following

    def batches(self, execution_time: datetime.datetime, ledger: list[list[str]]) -> list[Window]:
        """The windows this run processes: missing complete intervals plus ``lookback``
        before them, contiguous runs cut into ``batch_size`` intervals; then the
        incomplete interval if partials are allowed."""
        complete, partial = self.grid(execution_time)
        done = _parse_ledger(ledger)
        missing = [i for i, window in enumerate(complete) if not _covered(window, done)]
        chosen = sorted({j for i in missing for j in range(max(0, i - self.lookback), i + 1)})
        windows: list[Window] = []
        run: list[int] = []
        for index in chosen:
            if run and (index != run[-1] + 1 or (self.batch_size and len(run) == self.batch_size)):
                windows.append(Window(complete[run[0]].start, complete[run[-1]].end, len(run)))
                run = []
            run.append(index)
        if run:
            windows.append(Window(complete[run[0]].start, complete[run[-1]].end, len(run)))
        if self.allow_partials and partial is not None:
            windows.append(partial)
        return windows


def _check_sortable(time_format: str) -> None:
    """A text time column is compared with a window's bounds as text (as SQLMesh does), so
    its format must sort as time does: '%d/%m/%Y' would put 02/02/2024 inside a window of
    1-3 January, and replacing that window would delete it."""
    fields = [field for field in re.findall(r"%.", time_format) if field != "%%"]
    if not fields or fields != list(_SORTABLE_FIELDS[: len(fields)]):
        raise ResourceError(
            f"intervals: time_column_format {time_format!r} does not sort as text in time order; "
            "its fields must run from year down, zero-padded: %Y, %m, %d, %H, %M, %S, %f "
            "(e.g. '%Y-%m-%d' or '%Y-%m-%d %H:%M:%S')"
        )


def _regular_step(cron: str) -> datetime.timedelta | None:
    """The fixed distance between ticks, for crons that fire at evenly spaced times of
    every day (no day-of-month, month or weekday fields); None for the others."""
    minutes, hours, day_of_month, month, weekday = croniter(cron).expanded[:5]
    if [day_of_month, month, weekday] != [["*"], ["*"], ["*"]]:
        return None
    every_hour, every_minute = range(24), range(60)
    times = sorted(
        60 * hour + minute
        for hour in (every_hour if hours == ["*"] else hours)
        for minute in (every_minute if minutes == ["*"] else minutes)
    )
    gaps = {b - a for a, b in zip(times, times[1:], strict=False)} | {times[0] + 24 * 60 - times[-1]}
    return datetime.timedelta(minutes=gaps.pop()) if len(gaps) == 1 else None


def record(ledger: list[list[str]], window: Window) -> list[list[str]]:
    """The ledger with ``window`` added, as sorted, merged [start, end) ranges (ISO text).
    A partial window is not recorded: its interval is processed again once complete."""
    if window.partial:
        return ledger
    ranges = sorted([*_parse_ledger(ledger), (window.start, window.end)])
    merged: list[tuple[datetime.datetime, datetime.datetime]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return [[start.isoformat(), end.isoformat()] for start, end in merged]


def without(ledger: list[list[str]], start: datetime.datetime, end: datetime.datetime) -> list[list[str]]:
    """The ledger with [start, end) taken out: those intervals count as not processed."""
    kept = []
    for low, high in _parse_ledger(ledger):
        for piece in ((low, min(high, start)), (max(low, end), high)):
            if piece[0] < piece[1]:
                kept.append([piece[0].isoformat(), piece[1].isoformat()])
    return kept


def _parse_ledger(ledger: list[list[str]]) -> list[tuple[datetime.datetime, datetime.datetime]]:
    return [(datetime.datetime.fromisoformat(s), datetime.datetime.fromisoformat(e)) for s, e in ledger]


def _covered(window: Window, done: list[tuple[datetime.datetime, datetime.datetime]]) -> bool:
    return any(start <= window.start and window.end <= end for start, end in done)


# -- finding and binding the argument ----------------------------------------------------------
def declared_intervals(func: Callable[..., Any] | None) -> Intervals | None:
    """The intervals a resource function declares as a default argument, if any."""
    if func is None:
        return None
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    found = [p.default for p in parameters if isinstance(p.default, Intervals)]
    if len(found) > 1:
        raise ResourceError(f"resource function '{func.__name__}' declares more than one intervals argument")
    return found[0] if found else None


def bind_intervals(arguments: dict[str, Any], parameters: Mapping[str, Any], window: Window | None) -> None:
    """Put the intervals argument, bound to ``window``, among a call's ``arguments``."""
    for name, param in parameters.items():
        value = arguments.get(name, param.default)
        if isinstance(value, Intervals):
            if window is None:
                raise ResourceError(
                    f"argument '{name}' takes time intervals; the resource runs in a pipeline, "
                    "which binds it to the windows it has not loaded yet"
                )
            arguments[name] = value.bound_to(window)
