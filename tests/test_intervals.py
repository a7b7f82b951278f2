"""Time intervals end to end (SQLMesh 001_… "Counting time", "Running run", "Scheduling
computations", "Model time"; 000_… INCREMENTAL_BY_TIME_RANGE and its lookback example):
which windows a run hands the resource, the ledger kept in resource state, one package
and one Delta commit per batch, and the time-range strategy that replaces exactly a
window's rows (leak guard, nested tables, empty windows, date and text time columns).

Every test runs real pipelines on the embedded engine and reads the Delta tables back with
delta-rs (and Spark where it matters)."""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator
from typing import Any

import deltalake
import pendulum
import pytest
from conftest import delta_history, delta_rows, delta_version, spark_rows
from table_checks import assert_table, project, row_count

import sparkload as sl
from sparkload.exceptions import PipelineStepFailed, ResourceError

# The engine sessions that run this file (noxfile.py says why): `cluster` runs the tests
# that load through the engine (marked on each), not the schedule's arithmetic alone nor a
# day of hourly runs whose statements the other tests run.

UTC = datetime.timezone.utc
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)
# "Today" of the 001_ guide's Figure 1: start is 12am two days ago, we work at 12pm today.
TODAY = datetime.datetime(2024, 10, 27, tzinfo=UTC)
TWO_DAYS_AGO = TODAY - 2 * DAY
NOON = TODAY + 12 * HOUR
LOAD_ID = "_sparkload_load_id"


def naive(moment: datetime.datetime) -> datetime.datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


class Feed:
    """A source system holding rows by time. The resources it makes record every window
    they are called with and yield only the rows inside it, as a model's WHERE clause
    does; ``extra`` rows are yielded on every call whatever the window (a leaky query)."""

    def __init__(self, rows: list[dict[str, Any]] | None = None) -> None:
        self.rows = list(rows or [])
        self.extra: list[dict[str, Any]] = []
        self.calls: list[tuple[datetime.datetime, datetime.datetime]] = []
        self.bound: list[Any] = []
        self.fail_at: datetime.datetime | None = None

    def resource(self, name: str = "events", time_column: str = "ts", **intervals: Any) -> sl.Resource:
        intervals.setdefault("start", TWO_DAYS_AGO)

        @sl.resource(name=name)
        def events(
            window: Any = sl.sources.intervals(time_column, **intervals),  # noqa: B008 (dlt's way)
        ) -> Iterator[dict[str, Any]]:
            self.calls.append((window.start, window.end))
            self.bound.append(window)
            if self.fail_at is not None and window.start == self.fail_at:
                raise RuntimeError(f"source down at {window.start}")
            for row in self.rows:
                moment = row["moment"]
                if window.start <= moment < window.end:
                    yield {k: v for k, v in row.items() if k != "moment"}
            yield from self.extra

        return events


def hourly_rows(start: datetime.datetime, hours: int, version: int = 1) -> list[dict[str, Any]]:
    """One event per hour, each with a nested list."""
    return [
        {
            "moment": start + i * HOUR,
            "ts": start + i * HOUR,
            "id": i,
            "version": version,
            "tags": [f"h{i}", f"v{version}"],
        }
        for i in range(hours)
    ]


def daily_rows(start: datetime.datetime, days: int, per_day: int = 2) -> list[dict[str, Any]]:
    return [
        {"moment": start + d * DAY + j * HOUR, "ts": start + d * DAY + j * HOUR, "day": d, "n": j}
        for d in range(days)
        for j in range(per_day)
    ]


def ledger(pipeline: sl.Pipeline, resource: str = "events", section: str | None = None) -> list[list[str]]:
    resources = pipeline.state["sources"][section or pipeline.pipeline_name]["resources"]
    return resources[resource]["intervals"]


def span(start: datetime.datetime, end: datetime.datetime) -> list[str]:
    return [start.isoformat(), end.isoformat()]


def state_version(pipeline: sl.Pipeline) -> int:
    return int(pipeline.state["_state_version"])


def commits(pipeline: sl.Pipeline, table: str) -> list[dict[str, Any]]:
    """The table's Delta commits, oldest first."""
    return sorted(delta_history(pipeline, table), key=lambda c: c["version"])


# -- 001_ "Counting time": the seed example ---------------------------------------------------


@pytest.mark.cluster
def test_hourly_model_backfills_60_intervals_then_loads_only_the_24_unprocessed_ones(
    pipeline: sl.Pipeline,
) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 4 * 24))
    events = feed.resource(cron="@hourly")

    pipeline.run(events, execution_time=NOON)

    # One batch (no batch_size) covering exactly the 60 complete hours.
    assert feed.calls == [(TWO_DAYS_AGO, NOON)]
    assert feed.bound[0].window.intervals == 60
    assert project(pipeline, "events", "ts") == [(naive(TWO_DAYS_AGO + i * HOUR),) for i in range(60)]
    assert row_count(pipeline, "events__tags") == 120
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, NOON)]
    first_load = {r[LOAD_ID] for r in delta_rows(pipeline, "events")}
    assert len(first_load) == 1

    # "If we sqlmesh run the model tomorrow at 12pm": 84 intervals, 24 unprocessed.
    feed.calls.clear()
    pipeline.run(feed.resource(cron="@hourly"), execution_time=NOON + DAY)

    assert feed.calls == [(NOON, NOON + DAY)]
    assert feed.bound[-1].window.intervals == 24
    assert project(pipeline, "events", "ts") == [(naive(TWO_DAYS_AGO + i * HOUR),) for i in range(84)]
    assert row_count(pipeline, "events__tags") == 168
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, NOON + DAY)]
    # The 60 rows of the first run were not touched: still the first run's load.
    loads = {r["id"]: r[LOAD_ID] for r in delta_rows(pipeline, "events")}
    assert {loads[i] for i in range(60)} == first_load
    assert len({loads[i] for i in range(60, 84)} - first_load) == 1


def test_daily_model_has_three_intervals_and_skips_todays_incomplete_one(pipeline: sl.Pipeline) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 60))  # the source has data up to 12pm today
    pipeline.run(feed.resource(cron="@daily"), execution_time=NOON)

    assert feed.calls == [(TWO_DAYS_AGO, TODAY)]
    assert row_count(pipeline, "events") == 48
    assert max(ts for (ts,) in project(pipeline, "events", "ts")) == naive(TODAY - HOUR)
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, TODAY)]

    # Later the same day: today is still incomplete, nothing is due.
    feed.calls.clear()
    pipeline.run(feed.resource(cron="@daily"), execution_time=NOON + 6 * HOUR)
    assert feed.calls == []
    assert row_count(pipeline, "events") == 48


def test_allow_partials_loads_an_incomplete_day_when_the_cron_is_due_and_records_it(
    pipeline: sl.Pipeline,
) -> None:
    """Daily intervals on a six-hourly cron: at noon the cron is due and today's incomplete
    day joins the backfill's batch; it is recorded, so a run at 1pm (the cron not due
    again) loads nothing, and the 6pm tick loads today again, now up to 6pm."""
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 60))
    make = lambda: feed.resource(cron="0 */6 * * *", interval_unit="day", allow_partials=True)  # noqa: E731
    pipeline.run(make(), execution_time=NOON)

    assert feed.calls == [(TWO_DAYS_AGO, NOON)]
    assert feed.bound[-1].window.partial
    assert row_count(pipeline, "events") == 60
    assert row_count(pipeline, "events__tags") == 120
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, NOON)]

    feed.calls.clear()
    pipeline.run(make(), execution_time=NOON + HOUR)
    assert feed.calls == []

    # At 6pm the partial day is loaded again, now with 18 hours: no duplicates.
    feed.rows = hourly_rows(TWO_DAYS_AGO, 66)
    pipeline.run(make(), execution_time=NOON + 6 * HOUR)
    assert feed.calls == [(TODAY, NOON + 6 * HOUR)]
    assert project(pipeline, "events", "id") == [(i,) for i in range(66)]
    assert row_count(pipeline, "events__tags") == 132
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, NOON + 6 * HOUR)]

    # At midnight today is complete: loaded once more, whole.
    feed.rows = hourly_rows(TWO_DAYS_AGO, 96)
    feed.calls.clear()
    pipeline.run(make(), execution_time=TODAY + DAY)
    assert feed.calls == [(TODAY, TODAY + DAY)]
    assert not feed.bound[-1].window.partial
    assert project(pipeline, "events", "id") == [(i,) for i in range(72)]
    assert row_count(pipeline, "events__tags") == 144
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, TODAY + DAY)]


def test_allow_partials_loads_nothing_until_the_cron_is_due(pipeline: sl.Pipeline) -> None:
    """A daily cron with partials at noon: the cron last ticked at midnight, so only the
    complete days are loaded (before, sparkload loaded today's partial on every run)."""
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 60))
    pipeline.run(feed.resource(cron="@daily", allow_partials=True), execution_time=NOON)
    assert feed.calls == [(TWO_DAYS_AGO, TODAY)]
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, TODAY)]


# -- 001_ "Running run": the cron decides whether a run does anything -------------------------


def test_a_daily_resource_run_every_hour_does_nothing_until_a_day_has_passed(pipeline: sl.Pipeline) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 96))
    pipeline.run(feed.resource(cron="@daily"), execution_time=TODAY)
    assert feed.calls == [(TWO_DAYS_AGO, TODAY)]
    version, table_version = state_version(pipeline), delta_version(pipeline, "events")
    rows = delta_rows(pipeline, "events", order_by="id")

    feed.calls.clear()
    for hour in range(1, 24):
        info = pipeline.run(feed.resource(cron="@daily"), execution_time=TODAY + hour * HOUR)
        assert not info.has_data
    assert feed.calls == []  # the resource was never called
    assert state_version(pipeline) == version  # no new state
    assert delta_version(pipeline, "events") == table_version  # no new commit
    assert delta_rows(pipeline, "events", order_by="id") == rows

    pipeline.run(feed.resource(cron="@daily"), execution_time=TODAY + DAY)
    assert feed.calls == [(TODAY, TODAY + DAY)]
    assert state_version(pipeline) == version + 1
    assert row_count(pipeline, "events") == 72


def test_an_hourly_and_a_daily_resource_run_every_hour_load_hourly_and_once_a_day(
    pipeline: sl.Pipeline,
) -> None:
    """001_… "Running run": run at least hourly for the hourly model; "another model with a
    cron of daily will only run once per day when 24 hours have elapsed"."""
    hourly_feed = Feed(hourly_rows(TWO_DAYS_AGO, 72))
    daily_feed = Feed(hourly_rows(TWO_DAYS_AGO, 72))

    @sl.source
    def shop() -> Any:
        return hourly_feed.resource("hourly", cron="@hourly"), daily_feed.resource("daily", cron="@daily")

    for hour in range(25):
        pipeline.run(shop(), execution_time=TODAY + hour * HOUR)

    assert hourly_feed.calls == [(TWO_DAYS_AGO, TODAY)] + [
        (TODAY + (hour - 1) * HOUR, TODAY + hour * HOUR) for hour in range(1, 25)
    ]
    assert daily_feed.calls == [(TWO_DAYS_AGO, TODAY), (TODAY, TODAY + DAY)]
    for table in ("hourly", "daily"):
        assert project(pipeline, table, "id") == [(i,) for i in range(72)], table
        assert ledger(pipeline, table, section="shop") == [span(TWO_DAYS_AGO, TODAY + DAY)]
    # the daily table got a commit in two of the 25 runs only, the hourly table in every one
    assert len(commits(pipeline, "daily")) == 2
    assert len(commits(pipeline, "hourly")) == 25


def test_moving_start_earlier_loads_only_the_intervals_before_the_old_start(pipeline: sl.Pipeline) -> None:
    """Missing intervals are all intervals minus the ledger (001_… "Counting time"), not
    "everything after the newest loaded time": a start moved back leaves a gap before the
    processed range, and the next run fills exactly that gap."""
    early = TWO_DAYS_AGO - 3 * DAY
    feed = Feed(hourly_rows(early, 5 * 24))
    pipeline.run(feed.resource(cron="@daily"), execution_time=TODAY)
    assert feed.calls == [(TWO_DAYS_AGO, TODAY)]
    first_load = {r["id"]: r[LOAD_ID] for r in delta_rows(pipeline, "events")}
    assert sorted(first_load) == list(range(72, 120))

    feed.calls.clear()
    pipeline.run(feed.resource(cron="@daily", start=early), execution_time=TODAY)
    assert feed.calls == [(early, TWO_DAYS_AGO)]
    assert project(pipeline, "events", "id") == [(i,) for i in range(120)]
    assert row_count(pipeline, "events__tags") == 240
    assert ledger(pipeline) == [span(early, TODAY)]
    loads = {r["id"]: r[LOAD_ID] for r in delta_rows(pipeline, "events")}
    assert {i: loads[i] for i in first_load} == first_load  # the processed days untouched


def test_lookback_after_a_gap_also_reloads_the_newest_intervals(pipeline: sl.Pipeline) -> None:
    """SQLMesh's ``compute_missing_intervals``: once any interval is missing, the last
    ``lookback`` intervals of the range are loaded again besides the ``lookback`` before each
    missing one. A gap before the processed days (start moved back) is filled, and the
    newest day is reloaded too, as each run with lookback reloads it."""
    early = TWO_DAYS_AGO - 3 * DAY
    feed = Feed(hourly_rows(early, 5 * 24))
    pipeline.run(feed.resource(cron="@daily", lookback=1), execution_time=TODAY)
    assert feed.calls == [(TWO_DAYS_AGO, TODAY)]

    feed.calls.clear()
    pipeline.run(feed.resource(cron="@daily", lookback=1, start=early), execution_time=TODAY)
    assert sorted(feed.calls) == [(early, TWO_DAYS_AGO), (TODAY - DAY, TODAY)]
    assert project(pipeline, "events", "id") == [(i,) for i in range(120)]
    assert ledger(pipeline) == [span(early, TODAY)]


# -- 001_ "Scheduling computations": batch_size ----------------------------------------------


@pytest.mark.parametrize(("days", "batch_size"), [(10, 3), (6, 2), (4, 5)])
@pytest.mark.cluster
def test_batch_size_splits_a_backfill_into_contiguous_batches_one_commit_each(
    pipeline: sl.Pipeline, days: int, batch_size: int
) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, days * 24))
    pipeline.run(
        feed.resource(cron="@daily", batch_size=batch_size), execution_time=TWO_DAYS_AGO + days * DAY
    )

    batches = math.ceil(days / batch_size)
    assert len(feed.calls) == batches
    assert feed.calls[0][0] == TWO_DAYS_AGO and feed.calls[-1][1] == TWO_DAYS_AGO + days * DAY
    assert all(a[1] == b[0] for a, b in zip(feed.calls, feed.calls[1:], strict=False))  # contiguous
    assert [end - start for start, end in feed.calls] == [
        min(batch_size, days - i * batch_size) * DAY for i in range(batches)
    ]
    for table in ("events", "events__tags"):
        # one commit per batch (the table's creation is the first batch's)
        assert len(commits(pipeline, table)) == batches, table
        assert len({r[LOAD_ID] for r in delta_rows(pipeline, table)}) == batches, table
    # the root's commits carry their package's load id, in batch order (MERGE commits of
    # nested tables carry none on Sail 0.7, see load/merge_sql.py)
    loads = [r[LOAD_ID] for r in delta_rows(pipeline, "events", order_by="ts")]
    assert [c.get("userMetadata") for c in commits(pipeline, "events")] == list(dict.fromkeys(loads))
    assert row_count(pipeline, "events") == days * 24
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, TWO_DAYS_AGO + days * DAY)]


# -- 000_ lookback: late-arriving data ---------------------------------------------------------


@pytest.mark.jvm
@pytest.mark.cluster
def test_lookback_two_reprocesses_the_two_days_before_each_new_one_idempotently(
    pipeline: sl.Pipeline,
) -> None:
    start = TWO_DAYS_AGO
    feed = Feed(daily_rows(start, 3))
    pipeline.run(feed.resource(cron="@daily", lookback=2, start=start), execution_time=start + 3 * DAY)
    assert feed.calls == [(start, start + 3 * DAY)]
    assert row_count(pipeline, "events") == 6

    for today in range(3, 6):
        # Day ``today`` arrives, and a late event for the day before yesterday.
        feed.rows += daily_rows(start, today + 1)[2 * today :]
        late = start + (today - 2) * DAY + 20 * HOUR
        feed.rows.append({"moment": late, "ts": late, "day": today - 2, "n": 20})
        feed.calls.clear()
        pipeline.run(
            feed.resource(cron="@daily", lookback=2, start=start), execution_time=start + (today + 1) * DAY
        )
        # "it will process today, yesterday, and the day before yesterday"
        assert feed.calls == [(start + (today - 2) * DAY, start + (today + 1) * DAY)]
        assert ledger(pipeline) == [span(start, start + (today + 1) * DAY)]

    expected = sorted((r["day"], r["n"]) for r in feed.rows)
    assert len(expected) == len(set(expected))
    # Each row exactly once although most days were replaced three times.
    assert project(pipeline, "events", "day", "n") == expected
    assert (3, 20) in expected and (1, 20) in expected


# -- the leak guard -------------------------------------------------------------------------


@pytest.mark.cluster
def test_rows_outside_the_window_and_their_nested_rows_are_dropped_and_counted(pipeline: sl.Pipeline) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 48))
    feed.extra = [
        {"ts": TWO_DAYS_AGO - HOUR, "id": 100, "version": 1, "tags": ["early", "x"]},  # before
        {"ts": TODAY, "id": 101, "version": 1, "tags": ["at the end"]},  # the end is excluded
        {"ts": TODAY + 5 * DAY, "id": 102, "version": 1, "tags": ["late"]},  # after
        {"ts": None, "id": 103, "version": 1, "tags": ["null time"]},  # NULL is outside
    ]
    info = pipeline.run(feed.resource(cron="@daily"), execution_time=TODAY)

    assert project(pipeline, "events", "id") == [(i,) for i in range(48)]
    tags = project(pipeline, "events__tags", "value")
    assert len(tags) == 96
    assert not {"early", "x", "at the end", "late", "null time"} & {t for (t,) in tags}
    assert any("4 rows outside the window" in note and "'events'" in note for note in info.notes), info.notes


@pytest.mark.cluster
def test_the_leak_guard_keeps_rows_of_other_windows_already_in_the_table(pipeline: sl.Pipeline) -> None:
    """A leaky row for a window loaded earlier neither replaces nor duplicates its rows."""
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 72, version=1))
    pipeline.run(feed.resource(cron="@daily"), execution_time=TODAY)
    feed.extra = [{"ts": TWO_DAYS_AGO, "id": 0, "version": 2, "tags": ["leak"]}]
    info = pipeline.run(feed.resource(cron="@daily"), execution_time=TODAY + DAY)
    assert [n for n in info.notes if "outside the window" in n]
    assert project(pipeline, "events", "id", "version") == [(i, 1) for i in range(72)]
    assert ("leak",) not in project(pipeline, "events__tags", "value")


def test_rows_dropped_in_an_earlier_batch_are_listed_in_the_runs_notes(pipeline: sl.Pipeline) -> None:
    calls: list[datetime.datetime] = []

    @sl.resource(name="events")
    def events(window: Any = sl.sources.intervals("ts", start=TWO_DAYS_AGO, batch_size=1)) -> Iterator[Any]:  # noqa: B008
        calls.append(window.start)
        yield {"ts": window.start, "n": 1}
        if len(calls) == 1:  # only the first of the two batches leaks
            yield {"ts": TODAY + 5 * DAY, "n": 2}

    info = pipeline.run(events, execution_time=TODAY)
    assert calls == [TWO_DAYS_AGO, TODAY - DAY]
    assert project(pipeline, "events", "n") == [(1,), (1,)]
    assert any("1 rows outside the window" in note for note in info.notes), info.notes
    # the run reports both batches' packages, not only the last
    assert len(info.loads_ids) == 2 and info.load_id == info.loads_ids[-1]
    assert info.row_counts == {"events": 2}
    assert [t["load_id"] for t in info.tables] == info.loads_ids
    assert "2 loads" in str(info) and "2 rows" in str(info)


# -- idempotency: a crash mid-backfill ---------------------------------------------------------


@pytest.mark.cluster
def test_a_backfill_that_fails_in_batch_k_resumes_there_and_ends_as_an_uninterrupted_one(
    make_pipeline: Any,
) -> None:
    days, execution_time = 8, TWO_DAYS_AGO + 8 * DAY
    feed = Feed(hourly_rows(TWO_DAYS_AGO, days * 24))
    feed.fail_at = TWO_DAYS_AGO + 4 * DAY  # the third batch of two days
    crashed = make_pipeline()

    with pytest.raises(PipelineStepFailed, match="source down"):
        crashed.run(feed.resource(cron="@daily", batch_size=2), execution_time=execution_time)
    assert feed.calls == [(TWO_DAYS_AGO + i * DAY, TWO_DAYS_AGO + (i + 2) * DAY) for i in (0, 2, 4)]
    # the two batches before the failure are committed, with their ledger entries
    assert project(crashed, "events", "id") == [(i,) for i in range(4 * 24)]
    assert row_count(crashed, "events__tags") == 2 * 4 * 24
    assert ledger(crashed) == [span(TWO_DAYS_AGO, TWO_DAYS_AGO + 4 * DAY)]
    assert not crashed.has_pending_data

    feed.fail_at = None
    feed.calls.clear()
    crashed.run(feed.resource(cron="@daily", batch_size=2), execution_time=execution_time)
    assert feed.calls == [(TWO_DAYS_AGO + i * DAY, TWO_DAYS_AGO + (i + 2) * DAY) for i in (4, 6)]
    assert ledger(crashed) == [span(TWO_DAYS_AGO, execution_time)]

    clean = make_pipeline()
    clean.run(Feed(feed.rows).resource(cron="@daily", batch_size=2), execution_time=execution_time)
    for table in ("events", "events__tags"):
        for read in (delta_rows, spark_rows):
            got = sorted(_data_of(r) for r in read(crashed, table))
            want = sorted(_data_of(r) for r in read(clean, table))
            assert got == want, (table, read.__name__)
        assert len(commits(crashed, table)) == len(commits(clean, table)) == 4


def _data_of(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row without its ids, linking nested rows to their parent by the parent's data."""
    return tuple(
        (k, str(v))
        for k, v in sorted(row.items())
        if not k.startswith("_sparkload") or k == "_sparkload_list_idx"
    )


# -- an empty window deletes what the table held in it ------------------------------------------


@pytest.mark.jvm
@pytest.mark.cluster
def test_an_empty_window_deletes_the_rows_and_nested_rows_the_table_held_in_it(pipeline: sl.Pipeline) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 72))
    pipeline.run(feed.resource(cron="@daily", lookback=1), execution_time=TODAY + DAY)
    assert row_count(pipeline, "events") == 72

    # The source withdrew today's rows; tomorrow's run looks back at today and yields nothing.
    feed.rows = hourly_rows(TWO_DAYS_AGO, 48)
    feed.calls.clear()
    pipeline.run(feed.resource(cron="@daily", lookback=1), execution_time=TODAY + 2 * DAY)
    assert feed.calls == [(TODAY, TODAY + 2 * DAY)]
    assert project(pipeline, "events", "id") == [(i,) for i in range(48)]
    assert row_count(pipeline, "events__tags") == 96
    assert {t for (t,) in project(pipeline, "events__tags", "value")} >= {"h0", "h47"}
    assert "h48" not in {t for (t,) in project(pipeline, "events__tags", "value")}
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, TODAY + 2 * DAY)]


# -- "Model time": kinds of time column ---------------------------------------------------------


@pytest.mark.cluster
def test_a_date_time_column_replaces_whole_days(pipeline: sl.Pipeline) -> None:
    start = datetime.date(2024, 3, 1)
    rows = [
        {"moment": datetime.datetime(2024, 3, d, tzinfo=UTC), "day": datetime.date(2024, 3, d), "n": 1}
        for d in (1, 2, 3)
    ]
    feed = Feed(rows)
    feed.extra = [{"day": datetime.date(2024, 2, 28), "n": 9}]  # outside
    make = lambda: feed.resource(time_column="day", start=start, lookback=1)  # noqa: E731
    info = pipeline.run(make(), execution_time=datetime.datetime(2024, 3, 4, tzinfo=UTC))
    assert any("1 rows outside" in n for n in info.notes)
    assert project(pipeline, "events", "day", "n") == [(datetime.date(2024, 3, d), 1) for d in (1, 2, 3)]

    feed.rows = [{**r, "n": 2} for r in rows] + [
        {"moment": datetime.datetime(2024, 3, 4, tzinfo=UTC), "day": datetime.date(2024, 3, 4), "n": 2}
    ]
    feed.extra = []
    pipeline.run(make(), execution_time=datetime.datetime(2024, 3, 5, tzinfo=UTC))
    # the looked-back day 3 is replaced, days 1 and 2 untouched
    assert project(pipeline, "events", "day", "n") == [
        (datetime.date(2024, 3, 1), 1),
        (datetime.date(2024, 3, 2), 1),
        (datetime.date(2024, 3, 3), 2),
        (datetime.date(2024, 3, 4), 2),
    ]


@pytest.mark.cluster
def test_a_text_time_column_with_a_format_replaces_its_window(pipeline: sl.Pipeline) -> None:
    start = datetime.datetime(2024, 3, 1, tzinfo=UTC)

    def rows(n: int) -> list[dict[str, Any]]:
        days = [start + d * DAY for d in range(4)]
        return [{"moment": d, "day": d.strftime("%Y-%m-%d"), "n": n} for d in days]

    feed = Feed(rows(1)[:3])
    feed.extra = [{"day": "2024-02-29", "n": 9}, {"day": "2024-03-04", "n": 9}]
    make = lambda: feed.resource(time_column="day", start=start, lookback=1, time_column_format="%Y-%m-%d")  # noqa: E731
    info = pipeline.run(make(), execution_time=start + 3 * DAY)
    assert any("2 rows outside" in n for n in info.notes), info.notes
    assert_table(pipeline, "events", [{"day": f"2024-03-0{d}", "n": 1} for d in (1, 2, 3)])

    feed.rows, feed.extra = rows(2), []
    pipeline.run(make(), execution_time=start + 4 * DAY)
    assert_table(
        pipeline,
        "events",
        [{"day": "2024-03-01", "n": 1}, {"day": "2024-03-02", "n": 1}]
        + [{"day": f"2024-03-0{d}", "n": 2} for d in (3, 4)],
    )


@pytest.mark.cluster
def test_todays_partial_interval_loads_into_a_text_day_column(pipeline: sl.Pipeline) -> None:
    """A window ending at 12pm today formats its end as today's date: today's rows are
    inside it (their time, today 00:00, is in the window) and are replaced once the day is
    complete."""

    def rows(n: int) -> list[dict[str, Any]]:
        days = [TWO_DAYS_AGO + d * DAY for d in range(3)]
        return [{"moment": d, "day": d.strftime("%Y-%m-%d"), "n": n} for d in days]

    feed = Feed(rows(1))
    make = lambda: feed.resource(  # noqa: E731
        time_column="day",
        time_column_format="%Y-%m-%d",
        cron="0 */6 * * *",
        interval_unit="day",
        allow_partials=True,
    )
    info = pipeline.run(make(), execution_time=NOON)
    assert feed.calls == [(TWO_DAYS_AGO, NOON)]
    assert not [n for n in info.notes if "outside" in n], info.notes
    assert project(pipeline, "events", "day", "n") == [(r["day"], 1) for r in rows(1)]

    feed.rows = rows(2)
    feed.calls.clear()
    pipeline.run(make(), execution_time=TODAY + DAY)
    assert feed.calls == [(TODAY, TODAY + DAY)]
    assert project(pipeline, "events", "day", "n") == [(r["day"], 1) for r in rows(1)[:2]] + [
        ("2024-10-27", 2)
    ]


@pytest.mark.cluster
def test_an_hourly_window_in_a_text_day_column_holds_the_day_only_in_its_first_hour(
    pipeline: sl.Pipeline,
) -> None:
    """Text '2024-10-27' stands for 00:00 that day: the window [00:00, 01:00) holds it, the
    later hours of the day do not (their bounds both format as the same day)."""
    feed = Feed()
    feed.extra = [{"day": TODAY.strftime("%Y-%m-%d"), "n": 1}]
    pipeline.run(
        feed.resource(
            time_column="day", start=TODAY, cron="@hourly", batch_size=1, time_column_format="%Y-%m-%d"
        ),
        execution_time=TODAY + 3 * HOUR,
    )
    assert feed.calls == [(TODAY + i * HOUR, TODAY + (i + 1) * HOUR) for i in range(3)]
    assert project(pipeline, "events", "day") == [("2024-10-27",)]


@pytest.mark.parametrize("time_format", ["%d/%m/%Y", "%m/%d/%Y", "%Y-%d-%m", "%y-%m-%d", "%H:%M", "day"])
def test_a_text_format_that_does_not_sort_as_time_is_refused(time_format: str) -> None:
    """The window's bounds are compared with the column as text (as SQLMesh does): in
    ``%d/%m/%Y`` '02/02/2024' lies between '01/01/2024' and '04/01/2024', so the leak guard
    would keep it and replacing the window would delete it."""
    with pytest.raises(ResourceError, match="does not sort as text"):
        sl.sources.intervals("day", start="2024-01-01", time_column_format=time_format)


@pytest.mark.parametrize(
    "time_format", ["%Y-%m-%d", "%Y%m%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m"]
)
def test_text_formats_that_sort_as_time_are_accepted(time_format: str) -> None:
    assert sl.sources.intervals("day", start="2024-01-01", time_column_format=time_format).time_column_format


@pytest.mark.cluster
def test_a_bigint_time_column_fails_naming_the_table_and_the_column(pipeline: sl.Pipeline) -> None:
    @sl.resource(name="counters")
    def counters(window: Any = sl.sources.intervals("epoch", start=TWO_DAYS_AGO)) -> Iterator[Any]:  # noqa: B008
        yield {"epoch": 1_700_000_000, "n": 1}

    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(counters, execution_time=TODAY)
    message = str(failed.value)
    assert "'counters'" in message and "'epoch'" in message and "bigint" in message
    assert "time_column_format" in message


@pytest.mark.cluster
def test_a_missing_time_column_fails_naming_it(pipeline: sl.Pipeline) -> None:
    @sl.resource(name="counters")
    def counters(window: Any = sl.sources.intervals("ts", start=TWO_DAYS_AGO)) -> Iterator[Any]:  # noqa: B008
        yield {"when": TWO_DAYS_AGO, "n": 1}

    with pytest.raises(PipelineStepFailed, match="time column 'ts' is missing"):
        pipeline.run(counters, execution_time=TODAY)


# -- SQLMesh's macro values -------------------------------------------------------------------


def test_start_ds_end_ds_start_dt_end_dt_of_a_three_day_batch(pipeline: sl.Pipeline) -> None:
    seen: list[tuple[Any, ...]] = []

    @sl.resource(name="daily")
    def daily(
        window: Any = sl.sources.intervals("ts", start="2024-01-01", cron="@daily", batch_size=3),  # noqa: B008
    ) -> Iterator[Any]:
        seen.append(
            (window.start_ds, window.end_ds, window.start_dt, window.end_dt, window.start, window.end)
        )
        # a WHERE clause as SQLMesh writes it: BETWEEN @start_ds AND @end_ds
        for d in range(1, 10):
            day = f"2024-01-0{d}"
            if window.start_ds <= day <= window.end_ds:
                yield {"ts": datetime.datetime.fromisoformat(day).replace(tzinfo=UTC), "day": day}

    pipeline.run(daily, execution_time=datetime.datetime(2024, 1, 7, 5, tzinfo=UTC))
    jan = lambda d, *hms: datetime.datetime(2024, 1, d, *hms, tzinfo=UTC)  # noqa: E731
    assert seen == [
        ("2024-01-01", "2024-01-03", jan(1), jan(3, 23, 59, 59, 999999), jan(1), jan(4)),
        ("2024-01-04", "2024-01-06", jan(4), jan(6, 23, 59, 59, 999999), jan(4), jan(7)),
    ]
    assert all(isinstance(s[2], datetime.datetime) and s[2].tzinfo is not None for s in seen)
    assert project(pipeline, "daily", "day") == [(f"2024-01-0{d}",) for d in range(1, 7)]


def test_an_unbound_intervals_argument_says_it_runs_in_a_pipeline() -> None:
    spec = sl.sources.intervals("ts", start="2024-01-01")
    with pytest.raises(ResourceError, match="not bound"):
        _ = spec.start

    @sl.resource
    def alone(window: Any = spec) -> Iterator[Any]:
        yield {"ts": window.start}

    with pytest.raises(ResourceError, match="pipeline"):
        list(alone)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cron": "every day"}, "not a cron"),
        ({"lookback": -1}, "lookback"),
        ({"batch_size": 0}, "batch_size"),
        ({"start": "not a date"}, "intervals start: 'not a date' is not a date"),
        ({"end": "2024-13-45"}, "intervals end"),
        ({"start": 20240101}, "intervals start"),
        ({"interval_unit": "week"}, "interval_unit 'week' is not one of 'year', 'month'"),
        ({"cron": "@hourly", "interval_unit": "day"}, "runs more often than interval_unit 'day'"),
        ({"cron_tz": "Mars/Olympus"}, "cron_tz 'Mars/Olympus' is not an IANA time zone"),
        ({"cron": "* * * * *"}, "5 minutes or slower"),
    ],
)
def test_bad_intervals_arguments_are_refused_naming_the_argument(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ResourceError, match=match):
        sl.sources.intervals("ts", **{"start": "2024-01-01", **kwargs})


def test_cron_tz_moves_when_intervals_are_due_not_where_they_are_cut() -> None:
    """A daily cron at midnight in New York (05:00 UTC in winter): UTC days, due at 05:00."""
    spec = sl.sources.intervals("ts", start="2024-01-01", cron="@daily", cron_tz="America/New_York")
    jan = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    assert [(w.start, w.end) for w in spec.batches(jan + 2 * DAY + 4 * HOUR, [])] == [(jan, jan + DAY)]
    assert [(w.start, w.end) for w in spec.batches(jan + 2 * DAY + 5 * HOUR, [])] == [(jan, jan + 2 * DAY)]


def test_a_ledger_recorded_on_the_cron_ticks_still_counts_where_it_covers_whole_units() -> None:
    """Before interval units, '0 5 * * *' cut days at 05:00: a ledger of [25th 05:00,
    27th 05:00) covers the day of the 26th whole, which is not loaded again; the 25th and
    the 27th are covered only in part, so they are loaded (replacing their windows)."""
    spec = sl.sources.intervals("ts", start=TWO_DAYS_AGO, cron="0 5 * * *")
    recorded = [span(TWO_DAYS_AGO + 5 * HOUR, TODAY + 5 * HOUR)]
    windows = spec.batches(TODAY + DAY + 6 * HOUR, recorded)
    assert [(w.start, w.end) for w in windows] == [(TWO_DAYS_AGO, TWO_DAYS_AGO + DAY), (TODAY, TODAY + DAY)]
    # An hourly ledger cut on the old grid is the same grid: nothing is loaded twice.
    hourly = sl.sources.intervals("ts", start=TWO_DAYS_AGO, cron="@hourly")
    assert hourly.batches(TODAY, [span(TWO_DAYS_AGO, TODAY)]) == []


# -- a source mixing interval and plain resources ------------------------------------------------


def test_a_plain_resource_runs_once_in_the_first_package_the_interval_one_per_batch(
    pipeline: sl.Pipeline,
) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 96))
    plain_calls: list[int] = []

    @sl.resource(name="customers", write_disposition="replace")
    def customers() -> Iterator[Any]:
        plain_calls.append(1)
        yield [{"id": 1, "name": "ada"}, {"id": 2, "name": "bob"}]

    @sl.source
    def shop() -> Any:
        return feed.resource(cron="@daily", batch_size=1), customers

    pipeline.run(shop(), execution_time=TODAY + DAY)
    assert len(feed.calls) == 3 and plain_calls == [1]
    first_batch = commits(pipeline, "events")[0].get("userMetadata")
    assert {r[LOAD_ID] for r in delta_rows(pipeline, "customers")} == {first_batch}
    assert row_count(pipeline, "customers") == 2
    assert ledger(pipeline, section="shop") == [span(TWO_DAYS_AGO, TODAY + DAY)]

    # A run with no interval due still runs the plain resource, once.
    feed.calls.clear()
    pipeline.run(shop(), execution_time=TODAY + DAY + HOUR)
    assert feed.calls == [] and plain_calls == [1, 1]
    assert row_count(pipeline, "customers") == 2
    assert row_count(pipeline, "events") == 72


def test_a_transformer_of_an_interval_resource_runs_with_every_batch(pipeline: sl.Pipeline) -> None:
    feed = Feed(daily_rows(TWO_DAYS_AGO, 3, per_day=1))
    events = feed.resource(cron="@daily", batch_size=1)

    @sl.transformer(data_from=events, name="doubled")
    def doubled(item: dict[str, Any]) -> Iterator[Any]:
        yield {"ts": item["ts"], "twice": 2 * item["day"]}

    @sl.source
    def source() -> Any:
        return events, doubled

    pipeline.run(source(), execution_time=TODAY + DAY)
    assert len(feed.calls) == 3
    assert project(pipeline, "doubled", "twice") == [(0,), (2,), (4,)]
    # each batch's items went with that batch's package
    assert {r[LOAD_ID] for r in delta_rows(pipeline, "doubled")} == {
        r[LOAD_ID] for r in delta_rows(pipeline, "events")
    }
    assert len({r[LOAD_ID] for r in delta_rows(pipeline, "doubled")}) == 3

    # Nothing due: neither runs, and the run makes no package and no new state.
    version = state_version(pipeline)
    feed.calls.clear()
    pipeline.run(source(), execution_time=TODAY + DAY + HOUR)
    assert feed.calls == []
    assert state_version(pipeline) == version
    assert row_count(pipeline, "doubled") == 3


# -- end= --------------------------------------------------------------------------------------


def test_no_intervals_are_loaded_after_end(pipeline: sl.Pipeline) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 10 * 24))
    end = TWO_DAYS_AGO + 3 * DAY
    pipeline.run(feed.resource(cron="@daily", end=end), execution_time=TWO_DAYS_AGO + 10 * DAY)
    assert feed.calls == [(TWO_DAYS_AGO, end)]
    assert max(ts for (ts,) in project(pipeline, "events", "ts")) == naive(end - HOUR)
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, end)]

    feed.calls.clear()
    pipeline.run(feed.resource(cron="@daily", end=end), execution_time=TWO_DAYS_AGO + 20 * DAY)
    assert feed.calls == []
    assert row_count(pipeline, "events") == 72


def test_an_end_inside_an_interval_extends_to_that_intervals_end(pipeline: sl.Pipeline) -> None:
    """SQLMesh loads the interval an end cuts, whole (before, sparkload dropped it)."""
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 10 * 24))
    end = TWO_DAYS_AGO + 2 * DAY + 6 * HOUR
    pipeline.run(feed.resource(cron="@daily", end=end), execution_time=TWO_DAYS_AGO + 10 * DAY)
    assert feed.calls == [(TWO_DAYS_AGO, TWO_DAYS_AGO + 3 * DAY)]
    assert row_count(pipeline, "events") == 72


def test_a_date_end_is_the_whole_day(pipeline: sl.Pipeline) -> None:
    feed = Feed(hourly_rows(TWO_DAYS_AGO, 10 * 24))
    end = (TWO_DAYS_AGO + DAY).date().isoformat()
    pipeline.run(feed.resource(cron="@hourly", end=end), execution_time=TWO_DAYS_AGO + 10 * DAY)
    assert feed.calls == [(TWO_DAYS_AGO, TWO_DAYS_AGO + 2 * DAY)]
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, TWO_DAYS_AGO + 2 * DAY)]


def test_a_date_end_before_a_datetime_start_is_refused() -> None:
    with pytest.raises(
        ResourceError, match=r"end '2024-01-05' lies before start '2024-01-05 10:00'.*midnight"
    ):
        sl.sources.intervals("ts", start="2024-01-05 10:00", cron="@hourly", end="2024-01-05")


# -- the strategy needs the argument -------------------------------------------------------------


def test_the_time_range_strategy_without_intervals_fails_clearly(pipeline: sl.Pipeline) -> None:
    @sl.resource(name="plain", write_disposition={"disposition": "merge", "strategy": "time-range"})
    def plain() -> Iterator[Any]:
        yield {"ts": TODAY, "n": 1}

    with pytest.raises(PipelineStepFailed, match="intervals argument") as failed:
        pipeline.run(plain)
    assert failed.value.step == "extract"  # refused before anything was extracted
    assert "sl.sources.intervals" in str(failed.value) and "'plain'" in str(failed.value)
    assert not deltalake.DeltaTable.is_deltatable(f"{pipeline.dataset_uri}/plain")
    assert not pipeline.has_pending_data  # nothing waits to be retried


@pytest.mark.parametrize(
    "execution_time",
    [
        pendulum.datetime(2024, 10, 27),
        pendulum.datetime(2024, 10, 27, 2, tz="Europe/Berlin"),  # 00:00 UTC
        TODAY,
        TODAY.replace(tzinfo=None),  # naive: UTC
        "2024-10-27T00:00:00Z",
        "2024-10-27",
    ],
    ids=["pendulum", "pendulum-berlin", "aware", "naive", "iso-text", "iso-date"],
)
def test_execution_time_takes_every_form_a_user_passes(make_pipeline: Any, execution_time: Any) -> None:
    """pendulum's DateTime (what ``pendulum.datetime`` and Airflow hand out), stdlib aware and
    naive datetimes and ISO text all mean the same moment: the same two days load."""
    pipeline = make_pipeline()
    feed = Feed(daily_rows(TWO_DAYS_AGO, 3))
    pipeline.run(feed.resource(cron="@daily"), execution_time=execution_time)
    assert feed.calls == [(TWO_DAYS_AGO, TODAY)]
    assert all(type(moment) is datetime.datetime for call in feed.calls for moment in call)
    assert ledger(pipeline) == [span(TWO_DAYS_AGO, TODAY)]
    assert row_count(pipeline, "events") == 4


# -- a run over a given range (SQLMesh's ``run --start --end``) ---------------------------------


def test_a_run_over_a_range_loads_only_the_missing_intervals_inside_it(pipeline: sl.Pipeline) -> None:
    """As ``sqlmesh run --start --end``: the missing intervals inside [start, end] (a date end
    is its whole day, a start inside an interval takes that interval), recorded; the rest
    are still missing for the next run, loaded ones are not loaded again."""
    feed = Feed()
    start = TODAY - 6 * DAY
    day_two = (start + 2 * DAY).date().isoformat()
    pipeline.run(feed.resource(start=start), start=start + 2 * DAY, end=day_two, execution_time=NOON)
    assert feed.calls == [(start + 2 * DAY, start + 3 * DAY)]
    feed.calls.clear()
    pipeline.run(
        feed.resource(start=start),
        start=start + DAY + 5 * HOUR,
        end=(start + 3 * DAY).date().isoformat(),
        execution_time=NOON,
    )
    assert feed.calls == [(start + DAY, start + 2 * DAY), (start + 3 * DAY, start + 4 * DAY)]
    feed.calls.clear()
    pipeline.run(feed.resource(start=start), execution_time=NOON)
    assert feed.calls == [(start, start + DAY), (start + 4 * DAY, TODAY)]


def test_a_run_over_a_range_applies_lookback_within_it(pipeline: sl.Pipeline) -> None:
    """SQLMesh counts the lookback of a ranged run over the range's own intervals."""
    feed = Feed()
    start = TODAY - 6 * DAY
    pipeline.run(feed.resource(start=start, lookback=1), execution_time=NOON - 2 * DAY)
    assert feed.calls == [(start, start + 4 * DAY)]
    feed.calls.clear()
    pipeline.run(
        feed.resource(start=start, lookback=1), start=start, end=start + 5 * DAY, execution_time=NOON
    )
    assert feed.calls == [(start + 3 * DAY, start + 5 * DAY)]


def test_a_run_range_ending_before_its_start_is_refused(pipeline: sl.Pipeline) -> None:
    """SQLMesh refuses ``run --start "2024-10-21 10:00" --end 2024-10-21``: a date end is
    compared as its midnight there."""
    feed = Feed()
    with pytest.raises(PipelineStepFailed, match="end '2024-10-21' lies before start .*midnight"):
        pipeline.run(feed.resource(), start="2024-10-21 10:00", end="2024-10-21", execution_time=NOON)
    assert feed.calls == []
