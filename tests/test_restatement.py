"""Restatement (SQLMesh 002_… "Restatement plans", "Model kind limitations"):
``run(..., restate=[...], start=, end=)`` reprocesses a time range of the chosen resources
and of the transformers reading from them; non-idempotent kinds are fully refreshed when
the restated start is at or before their own start, and ignored otherwise."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import delta_rows

import sparkload as sl
from sparkload.exceptions import PipelineStepFailed

UTC = datetime.timezone.utc
START = datetime.datetime(2024, 9, 20, tzinfo=UTC)
NOW = datetime.datetime(2024, 9, 27, tzinfo=UTC)


def day(n: int) -> datetime.datetime:
    return START + datetime.timedelta(days=n)


class Feed:
    """A source system: a value per day, that can be corrected afterwards."""

    def __init__(self) -> None:
        self.values = {n: 1 for n in range(7)}
        self.windows: list[tuple[datetime.datetime, datetime.datetime]] = []

    def daily(self, **resource_args: Any) -> sl.Resource:
        @sl.resource(name="daily", **resource_args)
        def daily(
            window: Any = sl.sources.intervals("ts", start=START, cron="@daily"),  # noqa: B008
        ) -> Iterator[dict[str, Any]]:
            self.windows.append((window.start, window.end))
            for n, value in self.values.items():
                if window.start <= day(n) < window.end:
                    yield {"ts": day(n), "value": value, "tags": [f"t{value}"]}

        return daily


def values(pipeline: sl.Pipeline, table: str = "daily") -> dict[int, int]:
    return {(r["ts"].replace(tzinfo=UTC) - START).days: r["value"] for r in delta_rows(pipeline, table)}


def test_restating_a_range_reloads_exactly_those_intervals(pipeline: sl.Pipeline) -> None:
    feed = Feed()
    pipeline.run(feed.daily(), execution_time=NOW)
    assert values(pipeline) == {n: 1 for n in range(7)}
    feed.values[3] = 30  # the source corrected day 3
    feed.values[4] = 40
    feed.windows.clear()

    pipeline.run(feed.daily(), restate=["daily"], start=day(3), end=day(4), execution_time=NOW)

    assert feed.windows == [(day(3), day(4))]
    assert values(pipeline) == {0: 1, 1: 1, 2: 1, 3: 30, 4: 1, 5: 1, 6: 1}
    assert sorted(r["value"] for r in delta_rows(pipeline, "daily__tags")) == ["t1"] * 6 + ["t30"]
    ledger = pipeline.state["sources"][pipeline.pipeline_name]["resources"]["daily"]["intervals"]
    assert ledger == [[START.isoformat(), NOW.isoformat()]]
    # a normal run afterwards has nothing to do
    feed.windows.clear()
    pipeline.run(feed.daily(), execution_time=NOW)
    assert feed.windows == []


def test_restating_without_start_reloads_from_the_resources_start(pipeline: sl.Pipeline) -> None:
    feed = Feed()
    pipeline.run(feed.daily(), execution_time=NOW)
    feed.values = {n: n for n in range(7)}
    feed.windows.clear()
    pipeline.run(feed.daily(), restate=["dai*"], execution_time=NOW)
    assert feed.windows == [(START, NOW)]
    assert values(pipeline) == {n: n for n in range(7)}


def _merged_users(rows: list[dict[str, Any]], initial: datetime.datetime) -> sl.Resource:
    @sl.resource(name="users", primary_key="id", write_disposition="merge", tags=("crm",))
    def users(
        updated: Any = sl.sources.incremental("updated", initial_value=initial),  # noqa: B008
    ) -> Iterator[dict[str, Any]]:
        yield from rows

    return users


def test_a_non_idempotent_resource_is_fully_refreshed_when_the_start_reaches_its_own_start(
    pipeline: sl.Pipeline,
) -> None:
    initial = day(3)
    pipeline.run(_merged_users([{"id": 1, "updated": day(4)}, {"id": 2, "updated": day(5)}], initial))
    # user 2 was deleted upstream; a merge never removes it, a full refresh does
    refreshed = _merged_users([{"id": 1, "updated": day(4)}], initial)
    info = pipeline.run(refreshed, restate=["tag:crm"], start=day(3))
    assert sorted(r["id"] for r in delta_rows(pipeline, "users")) == [1]
    assert info.notes == []


def test_a_non_idempotent_resource_is_ignored_when_the_start_is_after_its_own_start(
    pipeline: sl.Pipeline,
) -> None:
    """002_…'s start_end_model: start 2024-09-23, plan --start 2024-09-24 → ignored."""
    initial = day(3)
    pipeline.run(_merged_users([{"id": 1, "updated": day(4)}], initial))
    calls = []

    @sl.resource(name="users", primary_key="id", write_disposition="merge")
    def users(updated: Any = sl.sources.incremental("updated", initial_value=initial)) -> Iterator[Any]:  # noqa: B008
        calls.append(1)
        yield {"id": 9, "updated": day(6)}

    info = pipeline.run(users, restate=["users"], start=day(4))
    assert calls == []  # not run at all
    assert sorted(r["id"] for r in delta_rows(pipeline, "users")) == [1]
    assert any(
        "resource 'users' ignored by the restatement" in note
        and f"expected start: {initial.isoformat()}" in note
        for note in info.notes
    )


def test_a_transformer_reading_a_restated_resource_is_restated_too(pipeline: sl.Pipeline) -> None:
    feed = Feed()
    daily = feed.daily()

    @sl.transformer(data_from=daily, write_disposition="append")
    def doubled(item: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield {"ts": item["ts"], "double": item["value"] * 2}

    @sl.source
    def both() -> Any:
        return daily, doubled

    pipeline.run(both(), execution_time=NOW)
    assert len(delta_rows(pipeline, "doubled")) == 7
    feed.values[3] = 30
    # doubled appends: it cannot reload one day, so a limited restatement leaves it out
    info = pipeline.run(both(), restate=["daily"], start=day(3), end=day(4), execution_time=NOW)
    assert any("'doubled' ignored by the restatement" in note for note in info.notes)
    assert len(delta_rows(pipeline, "doubled")) == 7  # no day loaded twice
    assert values(pipeline)[3] == 30


def test_scd2_refuses_restatement_unless_it_allows_it(pipeline: sl.Pipeline) -> None:
    def dim(**args: Any) -> sl.Resource:
        return sl.resource(
            [{"id": 1, "v": "a"}],
            name="dim",
            write_disposition={"disposition": "merge", "strategy": "scd2"},
            **args,
        )

    pipeline.run(dim())
    with pytest.raises(PipelineStepFailed, match="'dim' cannot be restated .*default for scd2"):
        pipeline.run(dim(), restate=["dim"])
    pipeline.run(dim(disable_restatement=False), restate=["dim"])
    assert len(delta_rows(pipeline, "dim")) == 1


def test_disable_restatement_and_unmatched_selectors_are_refused(pipeline: sl.Pipeline) -> None:
    feed = Feed()
    with pytest.raises(PipelineStepFailed, match="'daily' cannot be restated"):
        pipeline.run(feed.daily(disable_restatement=True), restate=["daily"], execution_time=NOW)
    with pytest.raises(PipelineStepFailed, match="selects no resource"):
        pipeline.run(feed.daily(), restate=["nothing*"], execution_time=NOW)
    with pytest.raises(PipelineStepFailed, match="start= and end= go with restate="):
        pipeline.run(feed.daily(), start=day(1), execution_time=NOW)
