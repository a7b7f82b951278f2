"""The interval grid: evenly spaced crons are computed by arithmetic; the result must be
croniter's, tick for tick."""

from __future__ import annotations

import datetime

import pytest
from croniter import croniter

from sparkload.common.time import Window
from sparkload.extract import intervals
from sparkload.extract.intervals import Intervals

UTC = datetime.timezone.utc


def croniter_ticks(cron: str, start: datetime.datetime, until: datetime.datetime) -> list[datetime.datetime]:
    first = croniter(cron, start + datetime.timedelta(microseconds=1)).get_prev(datetime.datetime)
    ticks, it = [first], croniter(cron, first)
    while (following := it.get_next(datetime.datetime)) <= until:
        ticks.append(following)
    return ticks


@pytest.mark.parametrize(
    "cron",
    ["@hourly", "@daily", "*/15 * * * *", "0 */6 * * *", "30 9 * * *", "* * * * *", "0 9 * * 1-5", "@weekly"],
)
def test_the_grid_has_croniters_ticks(cron: str) -> None:
    start = datetime.datetime(2024, 2, 27, 3, 7, tzinfo=UTC)
    until = datetime.datetime(2024, 3, 12, 5, 7, 30, tzinfo=UTC)  # between ticks
    complete, partial = Intervals("ts", start=start, cron=cron).grid(until)
    ticks = croniter_ticks(cron, start, until)
    assert [w.start for w in complete] == ticks[:-1]
    assert [w.end for w in complete] == ticks[1:]
    assert partial is not None and (partial.start, partial.end) == (ticks[-1], until)


def test_evenly_spaced_crons_take_the_arithmetic_path() -> None:
    assert intervals._regular_step("@hourly") == datetime.timedelta(hours=1)
    assert intervals._regular_step("0 */6 * * *") == datetime.timedelta(hours=6)
    assert intervals._regular_step("0 9 * * 1-5") is None  # weekdays: not evenly spaced
    assert intervals._regular_step("0 0,1 * * *") is None


def test_a_year_of_hours_in_weekly_batches() -> None:
    spec = Intervals("ts", start="2023-01-01", cron="@hourly", batch_size=168)
    windows = spec.batches(datetime.datetime(2024, 1, 1, tzinfo=UTC), [])
    assert sum(w.intervals for w in windows) == 8760
    assert len(windows) == 53  # 52 full weeks and one day
    assert all(a.end == b.start for a, b in zip(windows, windows[1:], strict=False))


def test_the_guides_interval_counts() -> None:
    """001_… "Calculating intervals" (Figures 1 and 2): start 12am two days ago, now 12pm
    today. Daily: 3 intervals, today's incomplete; hourly: 60, all complete; tomorrow at
    12pm: 84, of which the 24 from 12pm yesterday to 12pm today are not processed."""
    today = datetime.datetime(2024, 10, 27, tzinfo=UTC)
    start, noon = today - datetime.timedelta(days=2), today + datetime.timedelta(hours=12)

    complete, partial = Intervals("ts", start=start, cron="@daily").grid(noon)
    assert [(w.start, w.end) for w in complete] == [
        (start, start + datetime.timedelta(days=1)),
        (start + datetime.timedelta(days=1), today),
    ]
    assert partial is not None and (partial.start, partial.end, partial.partial) == (today, noon, True)
    assert len(complete) + 1 == 3
    assert Intervals("ts", start=start, cron="@daily").batches(noon, []) == [Window(start, today, 2)]

    hourly = Intervals("ts", start=start, cron="@hourly")
    complete, partial = hourly.grid(noon)
    assert len(complete) == 60 and partial is None
    assert complete[0].start == start and complete[-1].end == noon
    tomorrow_noon = noon + datetime.timedelta(days=1)
    complete, partial = hourly.grid(tomorrow_noon)
    assert len(complete) == 84 and partial is None
    ledger = [[start.isoformat(), noon.isoformat()]]  # the 60 backfilled intervals
    assert hourly.batches(tomorrow_noon, ledger) == [Window(noon, tomorrow_noon, 24)]
