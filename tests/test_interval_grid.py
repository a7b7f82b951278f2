"""The interval grid: intervals are cut at the cron's interval unit (SQLMesh's
IntervalUnit.from_cron), by calendar arithmetic, and the cron only says when they are due."""

from __future__ import annotations

import datetime

import pytest

from sparkload.common.time import Window
from sparkload.exceptions import ResourceError
from sparkload.extract.intervals import Intervals, IntervalUnit

UTC = datetime.timezone.utc
HOUR, DAY = datetime.timedelta(hours=1), datetime.timedelta(days=1)


@pytest.mark.parametrize(
    ("cron", "unit"),
    [
        ("@yearly", IntervalUnit.YEAR),
        ("@monthly", IntervalUnit.MONTH),
        ("@weekly", IntervalUnit.DAY),
        ("0 0 * * 1", IntervalUnit.DAY),
        ("@daily", IntervalUnit.DAY),
        ("0 5 * * *", IntervalUnit.DAY),
        ("0 9 * * 1-5", IntervalUnit.DAY),
        ("0 */6 * * *", IntervalUnit.HOUR),
        ("0 */2 * * *", IntervalUnit.HOUR),
        ("30 * * * *", IntervalUnit.HOUR),
        ("@hourly", IntervalUnit.HOUR),
        ("*/30 * * * *", IntervalUnit.HALF_HOUR),
        ("*/15 * * * *", IntervalUnit.QUARTER_HOUR),
        ("*/10 * * * *", IntervalUnit.FIVE_MINUTE),
        ("*/5 * * * *", IntervalUnit.FIVE_MINUTE),
    ],
)
def test_the_interval_unit_is_sqlmeshs(cron: str, unit: IntervalUnit) -> None:
    assert IntervalUnit.from_cron(cron) is unit
    assert Intervals("ts", start="2024-01-01", cron=cron).unit is unit


def test_a_cron_more_often_than_five_minutes_is_refused() -> None:
    with pytest.raises(ResourceError, match="5 minutes or slower"):
        Intervals("ts", start="2024-01-01", cron="* * * * *")


def test_months_and_years_are_calendar_ones() -> None:
    monthly = Intervals("ts", start="2024-01-15", cron="@monthly")
    grid = monthly.grid(datetime.datetime(2024, 5, 2, tzinfo=UTC))
    assert [(w.start.month, w.end.month, w.end.day) for w in grid] == [
        (1, 2, 1),
        (2, 3, 1),
        (3, 4, 1),
        (4, 5, 1),
    ]
    assert grid[1].end - grid[1].start == 29 * DAY  # 2024 is a leap year


def test_a_daily_cron_at_five_cuts_days_at_midnight_due_at_five() -> None:
    """start 2023-01-01, cron '0 5 * * *', a run at 2023-01-03 06:00 loads the days of
    1 and 2 January (SQLMesh), not [2022-12-31 05:00, 2023-01-03 05:00)."""
    spec = Intervals("ts", start="2023-01-01", cron="0 5 * * *")
    jan = datetime.datetime(2023, 1, 1, tzinfo=UTC)
    assert spec.batches(jan + 2 * DAY + 6 * HOUR, []) == [Window(jan, jan + 2 * DAY, 2)]
    # At 04:59 the cron has not ticked since 2 January began: only the first day is due.
    assert spec.batches(jan + 2 * DAY + 4 * HOUR, []) == [Window(jan, jan + DAY, 1)]


def test_every_two_hours_loads_hourly_intervals_in_the_hours_batch() -> None:
    spec = Intervals("ts", start="2024-01-01", cron="0 */2 * * *", batch_size=1)
    jan = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    assert spec.batches(jan + 5 * HOUR, []) == [
        Window(jan + i * HOUR, jan + (i + 1) * HOUR) for i in range(4)
    ]


def test_a_year_of_hours_in_weekly_batches() -> None:
    spec = Intervals("ts", start="2023-01-01", cron="@hourly", batch_size=168)
    windows = spec.batches(datetime.datetime(2024, 1, 1, tzinfo=UTC), [])
    assert sum(w.intervals for w in windows) == 8760
    assert len(windows) == 53  # 52 full weeks and one day
    assert all(a.end == b.start for a, b in zip(windows, windows[1:], strict=False))


def test_the_guides_interval_counts() -> None:
    """001_… "Calculating intervals" (Figures 1 and 2): start 12am two days ago, now 12pm
    today. Daily: 2 complete intervals, today's incomplete one is not due; hourly: 60, all
    complete; tomorrow at 12pm: 84, of which the 24 from 12pm yesterday to 12pm today are
    not processed."""
    today = datetime.datetime(2024, 10, 27, tzinfo=UTC)
    start, noon = today - datetime.timedelta(days=2), today + datetime.timedelta(hours=12)

    daily = Intervals("ts", start=start, cron="@daily")
    assert [(w.start, w.end) for w in daily.grid(noon)] == [(start, start + DAY), (start + DAY, today)]
    assert daily.batches(noon, []) == [Window(start, today, 2)]

    hourly = Intervals("ts", start=start, cron="@hourly")
    grid = hourly.grid(noon)
    assert len(grid) == 60 and not any(w.partial for w in grid)
    assert grid[0].start == start and grid[-1].end == noon
    tomorrow_noon = noon + datetime.timedelta(days=1)
    assert len(hourly.grid(tomorrow_noon)) == 84
    ledger = [[start.isoformat(), noon.isoformat()]]  # the 60 backfilled intervals
    assert hourly.batches(tomorrow_noon, ledger) == [Window(noon, tomorrow_noon, 24)]
