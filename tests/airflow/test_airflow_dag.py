"""The Airflow path against a real Apache Airflow (``nox -s airflow``): the example DAG's
catchup runs, run one after another by Airflow's own test runner (``dag.test``), each load
exactly their data interval, the data-interval rules hold for a manual run and for an
interval that has not ended yet, and a ``rest_api`` endpoint sends each run's interval to
its API."""

from __future__ import annotations

import collections
import datetime
import importlib
from pathlib import Path
from typing import Any

import deltalake
import pendulum
import pytest
from airflow.timetables.base import DataInterval, TimeRestriction
from airflow.utils.state import DagRunState
from http_api import FakeAPI

import sparkload as sl

UTC = datetime.timezone.utc
JAN_1 = datetime.datetime(2024, 1, 1, tzinfo=UTC)


@pytest.fixture
def lake(dags_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the DAGs' tasks write: a new lake and an empty working directory per test."""
    monkeypatch.setenv("SPARKLOAD_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("SPARKLOAD_PIPELINES_DIR", str(tmp_path / "pipelines"))
    return tmp_path / "lake"


def dag_of(module: str, name: str = "dag") -> Any:
    return getattr(importlib.import_module(module), name)


def catchup_intervals(dag: Any) -> list[DataInterval]:
    """The data intervals the scheduler's catchup creates runs for, from the DAG's timetable."""
    restriction = TimeRestriction(earliest=dag.start_date, latest=dag.end_date, catchup=True)
    intervals: list[DataInterval] = []
    while True:
        info = dag.timetable.next_dagrun_info(
            last_automated_data_interval=intervals[-1] if intervals else None, restriction=restriction
        )
        if info is None:
            return intervals
        intervals.append(info.data_interval)


def run_interval(dag: Any, interval: DataInterval) -> None:
    """The run of ``dag`` for ``interval``, as the scheduler makes it at the interval's end."""
    run = dag.test(logical_date=interval.end)
    assert run.data_interval_start == interval.start and run.data_interval_end == interval.end
    assert run.state == DagRunState.SUCCESS


def rows(table: Path) -> list[dict[str, Any]]:
    return deltalake.DeltaTable(str(table)).to_pyarrow_table().to_pylist()


def test_catchup_over_three_days_loads_each_day_exactly_once(lake: Path) -> None:
    dag = dag_of("airflow_dag")
    intervals = catchup_intervals(dag)
    assert [(i.start.day, i.end.day) for i in intervals] == [(1, 2), (2, 3), (3, 4)]

    for interval in intervals:
        run_interval(dag, interval)

    events = rows(lake / "shop" / "events")
    # An event every 6 hours: Jan 1 00:00 … Jan 3 18:00, each once; the event at Jan 4
    # 00:00, which the stand-in API returns for the last day, belongs to the next interval.
    assert sorted(e["id"] for e in events) == list(range(12))
    by_load = collections.defaultdict(list)
    for event in events:
        by_load[event["_sparkload_load_id"]].append(event["created_at"])
    days = sorted(sorted({c.date() for c in created}) for created in by_load.values())
    assert days == [[datetime.date(2024, 1, day)] for day in (1, 2, 3)]
    assert all(len(created) == 4 for created in by_load.values())

    # The runs used their intervals, not the stored cursor, and stored none.
    pipeline = sl.pipeline(
        "airflow_events",
        destination=sl.destinations.delta(lake),
        dataset_name="shop",
        pipelines_dir=lake.parent / "pipelines",
    )
    resource_state = pipeline.state.get("sources", {}).get("airflow_dag", {}).get("resources", {})
    assert "incremental" not in resource_state.get("events", {})

    # Clearing a day and running it again merges the same rows: still each event once.
    run_interval(dag, intervals[1])
    assert sorted(e["id"] for e in rows(lake / "shop" / "events")) == list(range(12))


def test_outside_airflow_the_same_resource_uses_the_stored_cursor(lake: Path) -> None:
    example = importlib.import_module("airflow_dag")
    example.load_events()  # not in an Airflow task: from initial_value (Jan 1, 2024) to now
    loaded = rows(lake / "shop" / "events")
    now = datetime.datetime.now(UTC)
    assert len(loaded) == len({e["id"] for e in loaded}) == (now - JAN_1) // datetime.timedelta(hours=6) + 1

    example.load_events()  # the second run starts at the stored cursor: nothing new, nothing twice
    assert len(rows(lake / "shop" / "events")) == len(loaded)


def test_a_manual_run_loads_from_its_logical_date_until_now(lake: Path) -> None:
    """Its data interval is empty (start == end == logical date): the end becomes now."""
    logical = pendulum.now("UTC").subtract(days=1)
    before = datetime.datetime.now(UTC)
    run = dag_of("sparkload_rule_dags", "manual").test(logical_date=logical)
    after = datetime.datetime.now(UTC)
    assert run.data_interval_start == run.data_interval_end == logical
    assert run.state == DagRunState.SUCCESS

    [recorded] = rows(lake / "rules" / "ranges")
    assert recorded["start"] == logical
    assert before <= recorded["end"] <= after
    # An int cursor (``incremental[int]``) gets the same range as Unix timestamps.
    assert recorded["epoch_start"] == int(logical.timestamp())
    assert int(before.timestamp()) <= recorded["epoch_end"] <= int(after.timestamp())


def test_an_interval_ending_in_the_future_ends_now(lake: Path) -> None:
    ends = pendulum.now("UTC").add(hours=12)
    before = datetime.datetime.now(UTC)
    run = dag_of("sparkload_rule_dags", "daily").test(logical_date=ends)
    after = datetime.datetime.now(UTC)
    assert (run.data_interval_start, run.data_interval_end) == (ends.subtract(days=1), ends)
    assert run.state == DagRunState.SUCCESS

    [recorded] = rows(lake / "rules" / "ranges")
    assert recorded["start"] == ends.subtract(days=1)
    assert before <= recorded["end"] <= after


def test_a_rest_api_endpoint_asks_its_api_for_each_runs_data_interval(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint incremental with ``allow_external_schedulers=True`` takes its range from the
    run's data interval: the request carries the interval's start and end as the endpoint's
    ``start_param`` and ``end_param``, and only the rows in it load. A day run after a later
    one shows the stored cursor played no part (it would have started the second run at the
    first run's last row)."""
    every_6_hours = [
        {"id": n, "updated_at": (JAN_1 + n * datetime.timedelta(hours=6)).isoformat().replace("+00:00", "Z")}
        for n in range(12)
    ]
    day = datetime.timedelta(days=1)
    jan_2, jan_3 = pendulum.datetime(2024, 1, 2, tz="UTC"), pendulum.datetime(2024, 1, 3, tz="UTC")
    with FakeAPI() as api:
        # The API ignores since/until and returns every issue: the incremental must clip too.
        api.route("/issues", lambda request: (200, {}, every_6_hours))
        monkeypatch.setenv("SPARKLOAD_REST_API_URL", api.url)
        dag = dag_of("sparkload_rest_api_dag")
        run_interval(dag, DataInterval(start=jan_2, end=jan_3))
        run_interval(dag, DataInterval(start=jan_2 - day, end=jan_2))

    asked = [(r.query.get("since"), r.query.get("until")) for r in api.asked("/issues")]
    assert asked == [
        ("2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z"),
        ("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"),
    ]
    # Jan 2 (issues 4-7), then Jan 1 (0-3); the issue at a day's end belongs to the next day.
    assert sorted(i["id"] for i in rows(lake / "github" / "issues")) == list(range(8))
    pipeline = sl.pipeline(
        "airflow_rest_api",
        destination=sl.destinations.delta(lake),
        dataset_name="github",
        pipelines_dir=lake.parent / "pipelines",
    )
    # Each run's range was its interval: no cursor was stored.
    assert "incremental" not in pipeline.state["sources"]["github"]["resources"]["issues"]
