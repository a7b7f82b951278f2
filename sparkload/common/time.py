"""Time helpers: every moment sparkload computes with is an aware UTC ``datetime.datetime``
of the standard library.

Users pass pendulum's ``DateTime``, aware or naive stdlib datetimes (naive means UTC),
dates and ISO text. They are all turned into the stdlib type here, once: pendulum's
subclass does not mix with stdlib arithmetic, and Spark's literal conversion does not
take it.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import TypedDict

import pendulum
from typing_extensions import Required

from sparkload.exceptions import ResourceError

UTC = datetime.timezone.utc


def plain_utc(moment: datetime.datetime) -> datetime.datetime:
    """``moment`` as an aware UTC datetime of the stdlib (a naive one is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return datetime.datetime(
        moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second,
        moment.microsecond, tzinfo=UTC,
    )  # fmt: skip


def as_utc(value: object, what: str) -> datetime.datetime:
    """A datetime (stdlib or pendulum), date or ISO text as an aware UTC datetime of the
    stdlib. ``what`` names the argument in the error a value of another kind raises."""
    if isinstance(value, str):
        try:
            parsed = pendulum.parse(value, tz="UTC")
        except ValueError as exc:  # pendulum's ParserError
            raise ResourceError(f"{what}: {value!r} is not a date or a datetime") from exc
        if not isinstance(parsed, (datetime.datetime, datetime.date)):
            raise ResourceError(f"{what}: {value!r} is not a date or a datetime")
        value = parsed
    if isinstance(value, datetime.datetime):
        return plain_utc(value)
    if isinstance(value, datetime.date):
        return datetime.datetime(value.year, value.month, value.day, tzinfo=UTC)
    raise ResourceError(f"{what}: expected a date, a datetime or ISO text, got {value!r}")


def now() -> datetime.datetime:
    return datetime.datetime.now(UTC)


class WindowDict(TypedDict, total=False):
    """A :class:`Window` as package manifests hold it."""

    start: Required[str]
    end: Required[str]
    partial: bool


@dataclasses.dataclass(frozen=True)
class Window:
    """A half-open time range [start, end): the intervals one batch of an interval resource
    covers, and the range a time-range merge replaces."""

    start: datetime.datetime
    end: datetime.datetime
    # How many intervals of the grid it covers, and whether its last one is incomplete.
    intervals: int = 1
    partial: bool = False

    def to_dict(self) -> WindowDict:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "partial": self.partial}

    @classmethod
    def from_dict(cls, data: WindowDict) -> Window:
        return cls(
            datetime.datetime.fromisoformat(data["start"]),
            datetime.datetime.fromisoformat(data["end"]),
            partial=bool(data.get("partial")),
        )
