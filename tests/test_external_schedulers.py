"""allow_external_schedulers outside Airflow, and the rules that turn a scheduler's data
interval into an incremental's range. The Airflow path itself runs against a real Apache
Airflow in tests/airflow (``nox -s airflow``)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

import sparkload as sl
from sparkload.exceptions import ResourceError
from sparkload.extract.incremental import external_bound, scheduler_interval

UTC = datetime.timezone.utc
NOW = datetime.datetime(2024, 3, 10, 15, 30, tzinfo=UTC)
DAY = datetime.timedelta(days=1)


def test_a_past_interval_is_the_range() -> None:
    start = datetime.datetime(2024, 3, 1, tzinfo=UTC)
    assert scheduler_interval(start, start + DAY, NOW) == (start, start + DAY)


def test_an_interval_ending_in_the_future_ends_now() -> None:
    start = datetime.datetime(2024, 3, 10, tzinfo=UTC)
    assert scheduler_interval(start, start + DAY, NOW) == (start, NOW)


def test_an_interval_without_end_ends_now() -> None:
    start = datetime.datetime(2024, 3, 1, tzinfo=UTC)
    assert scheduler_interval(start, None, NOW) == (start, NOW)


def test_a_manual_run_loads_from_its_logical_date_until_now() -> None:
    logical = datetime.datetime(2024, 3, 5, 6, tzinfo=UTC)
    assert scheduler_interval(logical, logical, NOW) == (logical, NOW)


def test_a_run_without_start_loads_nothing() -> None:
    assert scheduler_interval(None, None, NOW) == (NOW, NOW)


def test_an_interval_starting_in_the_future_is_empty() -> None:
    start = NOW + DAY
    assert scheduler_interval(start, start + DAY, NOW) == (start, start)


def test_bounds_are_utc_whatever_zone_the_scheduler_uses() -> None:
    berlin = datetime.timezone(datetime.timedelta(hours=1))
    start = datetime.datetime(2024, 3, 1, 1, tzinfo=berlin)
    first, last = scheduler_interval(start, start + DAY, NOW)
    assert (first, last) == (
        datetime.datetime(2024, 3, 1, tzinfo=UTC),
        datetime.datetime(2024, 3, 2, tzinfo=UTC),
    )
    assert first.utcoffset() == datetime.timedelta(0)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (None, datetime.datetime(2024, 3, 1, 6, 30, tzinfo=UTC)),
        (datetime.datetime, datetime.datetime(2024, 3, 1, 6, 30, tzinfo=UTC)),
        (str, "2024-03-01T06:30:00Z"),
        (int, 1709274600),
        (float, 1709274600.0),
        (datetime.date, datetime.date(2024, 3, 1)),
    ],
)
def test_bounds_take_the_cursor_type(kind: type | None, expected: Any) -> None:
    bound = external_bound(datetime.datetime(2024, 3, 1, 6, 30, tzinfo=UTC), kind)
    assert bound == expected and type(bound) is type(expected)


def test_a_bound_that_cannot_be_converted_is_refused() -> None:
    with pytest.raises(ResourceError, match="bytes"):
        external_bound(NOW, bytes)
    with pytest.raises(ResourceError, match="boolean"):
        external_bound(NOW, bool)


def test_incremental_of_a_type_remembers_it() -> None:
    typed = sl.sources.incremental[int]("updated_at", allow_external_schedulers=True)
    assert isinstance(typed, sl.sources.incremental)
    assert typed.cursor_type is int
    assert sl.sources.incremental[int] is sl.sources.incremental[int]  # one class per type
    assert sl.sources.incremental("updated_at").cursor_type is None


def test_the_annotation_gives_the_cursor_type(pipeline: sl.Pipeline) -> None:
    """``x: incremental[int] = incremental(...)`` is typed as ``incremental[int](...)`` is."""
    seen: list[Any] = []

    @sl.resource
    def tickets(
        updated_at: sl.sources.incremental[int] = sl.sources.incremental("updated_at"),  # noqa: B008
    ) -> Iterator[dict[str, Any]]:
        seen.append(updated_at.cursor_type)
        yield {"id": 1, "updated_at": 5}

    pipeline.run(tickets)
    assert seen == [int]


def test_outside_airflow_the_range_comes_from_the_state(pipeline: sl.Pipeline) -> None:
    """With no scheduler around, an opted-in incremental keeps its cursor in the state."""
    rows = [{"id": 1, "at": "2024-01-01T00:00:00Z"}, {"id": 2, "at": "2024-01-02T00:00:00Z"}]

    @sl.resource(primary_key="id")
    def events(
        at: Any = sl.sources.incremental[str]("at", allow_external_schedulers=True),  # noqa: B008
    ) -> Iterator[dict[str, Any]]:
        yield from rows

    pipeline.run(events)
    rows.append({"id": 3, "at": "2024-01-03T00:00:00Z"})
    info = pipeline.run(events)
    assert info.row_counts == {"events": 1}
    state = pipeline.state["sources"]
    [source] = state.values()
    assert source["resources"]["events"]["incremental"]["at"]["last_value"] == "2024-01-03T00:00:00Z"
