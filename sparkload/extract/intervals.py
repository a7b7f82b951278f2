"""Time intervals (SQLMesh's accounting of time) as a resource argument.

``window=sl.sources.intervals("event_time", start="2024-01-01", cron="@daily")`` declares
that a resource loads data by time. As in SQLMesh, time is cut into intervals of the
cron's *interval unit* (year, month, day, hour, half-hour, quarter-hour or five minutes:
the largest unit not longer than the shortest gap between the cron's ticks, or
``interval_unit=``), counted from the start of the unit holding ``start``; the cron only
says when intervals are due: a run at ``execution_time`` takes the intervals that end at
or before the cron's last tick (in ``cron_tz``). The pipeline keeps a ledger of processed
[start, end) ranges in the resource's state, works out which intervals are missing, adds
the last ``lookback`` ones again, splits them into batches of ``batch_size`` intervals and
calls the resource once per batch with the argument bound to that batch's window. Each
batch is its own load package, so its rows and its ledger entry commit together.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import enum
import inspect
import re
import zoneinfo
from collections.abc import Callable, Mapping

from croniter import croniter

from sparkload.common.time import UTC, Window, as_utc, now, plain_utc
from sparkload.exceptions import ResourceError

_TINY = datetime.timedelta(microseconds=1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
_DATE_TEXT = re.compile(r"\d{4}-?\d{2}-?\d{2}")
# The fields of a text time column's format, most significant first: text in a format made
# of a prefix of them (with any fixed separators) sorts as its times do.
_SORTABLE_FIELDS = ("%Y", "%m", "%d", "%H", "%M", "%S", "%f")


class IntervalUnit(enum.Enum):
    """The length of one interval (SQLMesh's IntervalUnit), longest first. A month and a
    year are calendar months and years; their ``seconds`` are the shortest they can be."""

    YEAR = "year"
    MONTH = "month"
    DAY = "day"
    HOUR = "hour"
    HALF_HOUR = "half_hour"
    QUARTER_HOUR = "quarter_hour"
    FIVE_MINUTE = "five_minute"

    @property
    def seconds(self) -> int:
        return _UNIT_SECONDS[self]

    @property
    def is_date_granularity(self) -> bool:
        """Whole days: its intervals are printed as dates."""
        return self in (IntervalUnit.YEAR, IntervalUnit.MONTH, IntervalUnit.DAY)

    @classmethod
    def of(cls, value: object) -> IntervalUnit:
        if isinstance(value, IntervalUnit):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            names = ", ".join(repr(unit.value) for unit in cls)
            raise ResourceError(f"intervals: interval_unit {value!r} is not one of {names}") from None

    @classmethod
    def from_cron(cls, cron: str) -> IntervalUnit:
        """The largest unit not longer than the shortest gap between the cron's next five
        ticks (SQLMesh samples the same ticks, from now)."""
        ticks = croniter(cron, now())
        samples = [ticks.get_next(datetime.datetime) for _ in range(5)]
        gap = min(b - a for a, b in zip(samples, samples[1:], strict=False)).total_seconds()
        for unit in cls:
            if unit.seconds <= gap:
                return unit
        raise ResourceError(f"intervals: cron {cron!r} must run at a frequency of 5 minutes or slower")

    def floor(self, moment: datetime.datetime) -> datetime.datetime:
        """The start of the interval holding ``moment`` (units are cut in UTC, as SQLMesh's)."""
        if self is IntervalUnit.YEAR:
            return moment.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
        if self is IntervalUnit.MONTH:
            return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        step = datetime.timedelta(seconds=self.seconds)
        return moment - (moment - _EPOCH) % step

    def following(self, boundary: datetime.datetime) -> datetime.datetime:
        """The end of the interval that starts at ``boundary``."""
        if self is IntervalUnit.YEAR:
            return boundary.replace(year=boundary.year + 1)
        if self is IntervalUnit.MONTH:
            return (boundary + datetime.timedelta(days=32)).replace(day=1)
        return boundary + datetime.timedelta(seconds=self.seconds)

    def preceding(self, moment: datetime.datetime) -> datetime.datetime:
        """One unit before ``moment`` (the previous boundary, for a calendar unit)."""
        if self is IntervalUnit.YEAR or self is IntervalUnit.MONTH:
            floor = self.floor(moment)
            if floor < moment:
                return floor
            return self.floor(floor - _TINY)
        return moment - datetime.timedelta(seconds=self.seconds)

    def ceil(self, moment: datetime.datetime) -> datetime.datetime:
        floor = self.floor(moment)
        return floor if floor == moment else self.following(floor)


_UNIT_SECONDS = {
    IntervalUnit.YEAR: 365 * 86400,
    IntervalUnit.MONTH: 28 * 86400,
    IntervalUnit.DAY: 86400,
    IntervalUnit.HOUR: 3600,
    IntervalUnit.HALF_HOUR: 1800,
    IntervalUnit.QUARTER_HOUR: 900,
    IntervalUnit.FIVE_MINUTE: 300,
}


@dataclasses.dataclass(frozen=True)
class Span:
    """The range a run is limited to: ``run(start=, end=)`` (SQLMesh's ``run --start
    --end``), or the range a restatement reloads. ``start`` is inclusive (None: the
    resource's own start); ``end`` exclusive, or a whole day when ``end_is_date`` (None:
    the execution time)."""

    start: datetime.datetime | None = None
    end: datetime.datetime | None = None
    end_is_date: bool = False

    @classmethod
    def of(cls, start: object, end: object) -> Span:
        """The span of a user's ``start=``/``end=`` (dates, datetimes or their text); an end
        before the start is refused, a date end read as its midnight, as SQLMesh reads it
        here (``start="2024-01-05 10:00", end="2024-01-05"`` is refused)."""
        span = cls(
            as_utc(start, "start") if start is not None else None,
            as_utc(end, "end") if end is not None else None,
            end is not None and _is_date(end),
        )
        if span.start is not None and span.end is not None and span.end < span.start:
            raise ResourceError(
                f"end {end!r} lies before start {start!r}"
                + (" (a date end is that day's midnight here: give the next day)" if span.end_is_date else "")
            )
        return span


class Intervals:
    """The argument a resource declares; bound to one batch's window when it is called.

    SQLMesh's macro values are there too: ``start_ds``/``end_ds`` are inclusive dates as
    ``YYYY-MM-DD``, ``start_dt``/``end_dt`` inclusive datetimes (``end_dt`` is one
    microsecond before ``end``).
    """

    def __init__(
        self,
        time_column: str,
        start: object,
        cron: str = "@daily",
        lookback: int = 0,
        batch_size: int | None = None,
        end: object = None,
        allow_partials: bool = False,
        time_column_format: str | None = None,
        interval_unit: str | IntervalUnit | None = None,
        cron_tz: str | datetime.tzinfo | None = None,
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
        self.cron_tz = _time_zone(cron_tz)
        self.lookback = lookback
        self.batch_size = batch_size
        self.end_value = as_utc(end, "intervals end") if end is not None else None
        # A date end is the whole of that day (SQLMesh's inclusive end).
        self.end_is_date = end is not None and _is_date(end)
        if self.end_value is not None and self.end_value < self.start_value:
            raise ResourceError(
                f"intervals: end {end!r} lies before start {start!r}"
                + (
                    " (a date end is that day's midnight, before a start later that day)"
                    if self.end_is_date
                    else ""
                )
            )
        self.allow_partials = allow_partials
        self.unit = self._unit(interval_unit)
        if time_column_format is not None:
            _check_sortable(time_column_format)
        self.time_column_format = time_column_format
        self.window: Window | None = None

    def _unit(self, declared: str | IntervalUnit | None) -> IntervalUnit:
        inferred = IntervalUnit.from_cron(self.cron)
        if declared is None:
            return inferred
        unit = IntervalUnit.of(declared)
        # Intervals longer than the cron's ticks would be due before they are complete.
        if unit.seconds > inferred.seconds and not self.allow_partials:
            raise ResourceError(
                f"intervals: cron {self.cron!r} runs more often than interval_unit {unit.value!r}; "
                "set allow_partials=True if that is intended"
            )
        return unit

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
        return f"intervals({self.time_column!r}, cron={self.cron!r}, unit={self.unit.value!r}){where}"

    # -- the grid and the ledger ---------------------------------------------------------
    def last_tick(self, execution_time: datetime.datetime) -> datetime.datetime:
        """The cron's last tick at or before ``execution_time`` (in ``cron_tz``)."""
        local = as_utc(execution_time, "execution_time").astimezone(self.cron_tz)
        following = croniter(self.cron, local).get_next(datetime.datetime)
        return plain_utc(croniter(self.cron, following).get_prev(datetime.datetime))

    def model_end(self) -> datetime.datetime | None:
        """The exclusive end of the declared range (a date end takes its whole day)."""
        if self.end_value is None:
            return None
        return self.end_value + datetime.timedelta(days=1) if self.end_is_date else self.end_value

    def restated(
        self, span: Span, execution_time: datetime.datetime
    ) -> tuple[datetime.datetime, datetime.datetime]:
        """The range a restatement of ``span`` reloads (SQLMesh's restatement interval): from
        the start of the interval holding its start to the end of the interval holding its
        end (a date end is its whole day), partials allowed or not."""
        low = self.unit.floor(span.start if span.start is not None else self.start_value)
        high = span.end if span.end is not None else as_utc(execution_time, "execution_time")
        if span.end_is_date:
            high += datetime.timedelta(days=1)
        high = self.unit.ceil(high)
        if high < low:
            raise ResourceError(f"restatement: end {high.isoformat()} must be after start {low.isoformat()}")
        return low, high

    def grid(self, execution_time: datetime.datetime, span: Span | None = None) -> list[Window]:
        """The unit intervals from the one holding ``start`` up to what is due at
        ``execution_time`` (and up to ``end``, extended to the end of its interval), within
        ``span`` when the run is limited to one; the last is partial when partials are
        allowed and it is incomplete."""
        moment = as_utc(execution_time, "execution_time")
        span = span or Span()
        start = self.start_value if span.start is None else max(self.start_value, span.start)
        # The run's end (its span's, or the execution time), or the declared end before it.
        until, until_is_date = (span.end, span.end_is_date) if span.end is not None else (moment, False)
        if self.end_value is not None and self.end_value < until:
            until, until_is_date = self.end_value, self.end_is_date
        # A span starting after the declared end (a date end read as its midnight here, as
        # SQLMesh compares them), or ending before the declared start, holds nothing.
        if (self.end_value is not None and start > self.end_value) or self.start_value > until:
            return []
        # Less than one unit between start and a datetime end: nothing can be complete.
        too_short = (until - start).total_seconds() < self.unit.seconds
        if too_short and not until_is_date and not self.allow_partials:
            return []
        low = self.unit.floor(start)
        high = until + datetime.timedelta(days=1) if until_is_date else until
        if not self.allow_partials:
            high = self.unit.ceil(high)
        due = self.last_tick(moment)
        if not self.allow_partials:
            due = self.unit.floor(due)
        high = min(high, due)
        windows = []
        while low < high:
            following = self.unit.following(low)
            windows.append(Window(low, min(following, high), partial=following > high))
            low = following
        return windows

    def missing(
        self, execution_time: datetime.datetime, ledger: list[list[str]], span: Span | None = None
    ) -> list[Window]:
        """The intervals of the grid (within ``span``) the ledger does not cover, and with
        them the last ``lookback`` intervals of the grid and the ``lookback`` before each
        missing one (SQLMesh's compute_missing_intervals). A restated span has every
        interval missing, so lookback adds nothing to it."""
        grid = self.grid(execution_time, span)
        done = _parse_ledger(ledger)
        missing = {i for i, window in enumerate(grid) if not _covered(window, done)}
        if missing and self.lookback:
            lookback = self.lookback
            model_end = self.model_end()
            if model_end is not None:
                # Past the declared end there is nothing late to look back for: the
                # lookback shrinks by the units the grid reaches beyond it.
                edge = self.unit.preceding(grid[-1].end)
                while model_end < edge:
                    edge = self.unit.preceding(edge)
                    lookback -= 1
                lookback = max(lookback, 0)
            missing |= {i for i in range(len(grid)) if i + lookback >= len(grid) or i + lookback in missing}
        model_end = self.model_end()
        return [grid[i] for i in sorted(missing) if model_end is None or grid[i].start < model_end]

    def batches(
        self, execution_time: datetime.datetime, ledger: list[list[str]], span: Span | None = None
    ) -> list[Window]:
        """The windows this run processes: the missing intervals (within ``span``),
        contiguous runs of them cut into batches of ``batch_size`` intervals."""
        windows: list[Window] = []
        run: list[Window] = []
        for window in self.missing(execution_time, ledger, span):
            if run and (window.start != run[-1].end or (self.batch_size and len(run) == self.batch_size)):
                windows.append(_joined(run))
                run = []
            run.append(window)
        if run:
            windows.append(_joined(run))
        return windows


def _joined(run: list[Window]) -> Window:
    return Window(run[0].start, run[-1].end, len(run), partial=run[-1].partial)


def _is_date(value: object) -> bool:
    """A date (not a datetime), or text of one: SQLMesh takes such an end as inclusive."""
    if isinstance(value, datetime.datetime):
        return False
    if isinstance(value, datetime.date):
        return True
    return isinstance(value, str) and _DATE_TEXT.fullmatch(value.strip()) is not None


def _time_zone(value: str | datetime.tzinfo | None) -> datetime.tzinfo:
    if value is None:
        return UTC
    if isinstance(value, datetime.tzinfo):
        return value
    try:
        return zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ResourceError(f"intervals: cron_tz {value!r} is not an IANA time zone ({exc})") from exc


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


def record(ledger: list[list[str]], window: Window) -> list[list[str]]:
    """The ledger with ``window`` added, as sorted, merged [start, end) ranges (ISO text).
    A partial window is recorded as far as it reaches (SQLMesh records it too): its interval
    is not covered, so it is loaded again, whole, once it is due."""
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
def declared_intervals(func: Callable[..., object] | None) -> Intervals | None:
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


def bind_intervals(
    arguments: dict[str, object], parameters: Mapping[str, inspect.Parameter], window: Window | None
) -> None:
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
