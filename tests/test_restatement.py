"""Restatement (SQLMesh 002_… "Restatement plans", "Model kind limitations"):
``run(..., restate=[...], start=, end=)`` reprocesses a time range of the chosen resources
and of the transformers reading from them; non-idempotent kinds are fully refreshed when
the restated start is at or before their own start, and ignored otherwise."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterator
from typing import Any

import deltalake
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


def _daily_with_doubled(feed: Feed) -> Any:
    """A source of the feed's daily resource and an appending transformer reading it."""
    daily = feed.daily()

    @sl.transformer(data_from=daily, write_disposition="append")
    def doubled(item: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield {"ts": item["ts"], "double": item["value"] * 2}

    @sl.source
    def both() -> Any:
        return daily, doubled

    return both


@pytest.mark.cluster
@pytest.mark.jvm
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


@pytest.mark.cluster
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
    both = _daily_with_doubled(feed)
    pipeline.run(both(), execution_time=NOW)
    assert len(delta_rows(pipeline, "doubled")) == 7
    feed.values[3] = 30
    # doubled appends: it cannot reload one day, so a limited restatement leaves it out
    info = pipeline.run(both(), restate=["daily"], start=day(3), end=day(4), execution_time=NOW)
    assert any("'doubled' ignored by the restatement" in note for note in info.notes)
    assert len(delta_rows(pipeline, "doubled")) == 7  # no day loaded twice
    assert values(pipeline)[3] == 30


def test_scd2_is_skipped_by_a_restatement_unless_it_allows_it(
    pipeline: sl.Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLMesh's SCD_TYPE_2 kinds default to disable_restatement: a full refresh would lose
    the captured history, so the restatement skips them with a warning."""

    def dim(**args: Any) -> sl.Resource:
        return sl.resource(
            [{"id": 1, "v": "a"}],
            name="dim",
            write_disposition={"disposition": "merge", "strategy": "scd2"},
            **args,
        )

    pipeline.run(dim())
    version = deltalake.DeltaTable(f"{pipeline.dataset_uri}/dim").version()
    with caplog.at_level(logging.WARNING, logger="sparkload"):
        info = pipeline.run(dim(), restate=["dim"])
    assert deltalake.DeltaTable(f"{pipeline.dataset_uri}/dim").version() == version
    assert any("'dim' not restated" in note and "default for scd2" in note for note in info.notes)
    assert "'dim' not restated" in caplog.text
    pipeline.run(dim(disable_restatement=False), restate=["dim"])
    assert len(delta_rows(pipeline, "dim")) == 1


def test_a_resource_with_restatement_disabled_is_skipped_with_a_warning_naming_it(
    pipeline: sl.Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLMesh skips such a model in a restating plan (a warning, no backfill of it, nor of
    what reads from it); the other restated resources are restated."""
    feed = Feed()
    pipeline.run(feed.daily(disable_restatement=True), execution_time=day(5))
    feed.windows.clear()
    other = Feed()
    other_daily = other.daily().with_name("other_daily")

    @sl.source
    def project() -> Any:
        return feed.daily(disable_restatement=True), other_daily

    with caplog.at_level(logging.WARNING, logger="sparkload"):
        info = pipeline.run(project(), restate=["*"], start=day(1), end=day(2), execution_time=NOW)
    assert feed.windows == []  # neither restated nor its new days loaded
    assert other.windows == [(day(1), day(2))]
    assert any("resource 'daily' not restated" in note for note in info.notes)
    assert "resource 'daily' not restated and not run: restatement is disabled" in caplog.text


def test_unmatched_selectors_are_refused(pipeline: sl.Pipeline) -> None:
    feed = Feed()
    with pytest.raises(PipelineStepFailed, match="selects no resource"):
        pipeline.run(feed.daily(), restate=["nothing*"], execution_time=NOW)


# -- more of 002_…: the guide's example, the other non-idempotent kinds, downstream models ------


def _start_end_model(calls: list[str], initial: datetime.datetime) -> sl.Resource:
    """002_…'s INCREMENTAL_BY_UNIQUE_KEY ``start_end_model``, start 2024-09-23."""

    @sl.resource(name="start_end_model", primary_key="item_id", write_disposition="merge")
    def start_end_model(
        updated: Any = sl.sources.incremental("updated", initial_value=initial),  # noqa: B008
    ) -> Iterator[dict[str, Any]]:
        calls.append("start_end_model")
        yield {"item_id": 1, "updated": day(4), "num_orders": 5}

    return start_end_model


def test_the_plans_guide_example_ignores_the_unique_key_model_and_backfills_the_others(
    pipeline: sl.Pipeline,
) -> None:
    """002_… "Model kind limitations": default start 2024-09-20, start_end_model starts
    2024-09-23; ``--start 2024-09-24`` ignores it (expected start 2024-09-23) and backfills
    the incremental model 2024-09-24 - 2024-09-26; a start of 2024-09-23 includes it."""
    feed = Feed()
    calls: list[str] = []

    @sl.source
    def project() -> Any:
        return feed.daily(), _start_end_model(calls, day(3))

    pipeline.run(project(), execution_time=NOW)
    assert calls == ["start_end_model"]
    calls.clear()
    feed.windows.clear()
    feed.values = {n: 2 for n in range(7)}

    plan = pipeline.plan(project(), restate=["*"], start="2024-09-24", execution_time=NOW)
    assert plan.ignored == {"start_end_model": "2024-09-23T00:00:00+00:00"}
    assert [(i.resource, i.missing) for i in plan.intervals] == [("daily", [("2024-09-24", "2024-09-26")])]
    assert "start_end_model (2024-09-23" in str(plan)
    info = plan.apply()
    assert calls == []  # ignored: not run
    assert feed.windows == [(day(4), NOW)]
    assert values(pipeline) == {0: 1, 1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 2}
    assert any("'start_end_model' ignored" in note and "2024-09-23" in note for note in info.notes)

    feed.windows.clear()
    plan = pipeline.plan(project(), restate=["*"], start="2024-09-23", execution_time=NOW)
    assert plan.ignored == {}
    assert [(i.resource, i.missing) for i in plan.intervals] == [("daily", [("2024-09-23", "2024-09-26")])]
    plan.apply()
    assert calls == ["start_end_model"]  # fully refreshed
    assert feed.windows == [(day(3), NOW)]
    assert [(r["item_id"], r["num_orders"]) for r in delta_rows(pipeline, "start_end_model")] == [(1, 5)]


def _appended_events(rows: list[dict[str, Any]], calls: list[int]) -> sl.Resource:
    @sl.resource(name="events", write_disposition="append")
    def events(
        updated: Any = sl.sources.incremental("updated", initial_value=day(3)),  # noqa: B008
    ) -> Iterator[dict[str, Any]]:
        calls.append(1)
        yield from rows

    return events


@pytest.mark.cluster
@pytest.mark.parametrize("start", [day(2), day(3)], ids=["before its start", "at its start"])
def test_an_append_resource_is_fully_refreshed_when_the_start_is_at_or_before_its_own(
    pipeline: sl.Pipeline, start: datetime.datetime
) -> None:
    calls: list[int] = []
    rows = [{"id": 1, "updated": day(4)}, {"id": 2, "updated": day(5)}]
    pipeline.run(_appended_events(rows, calls))
    # event 2 was withdrawn upstream; appending again would duplicate event 1
    info = pipeline.run(_appended_events(rows[:1], calls), restate=["events"], start=start)
    assert calls == [1, 1]
    assert [r["id"] for r in delta_rows(pipeline, "events")] == [1]
    assert info.notes == []


def test_an_append_resource_is_ignored_when_the_start_is_after_its_own(pipeline: sl.Pipeline) -> None:
    calls: list[int] = []
    pipeline.run(_appended_events([{"id": 1, "updated": day(4)}], calls))
    version = deltalake.DeltaTable(f"{pipeline.dataset_uri}/events").version()
    info = pipeline.run(
        _appended_events([{"id": 1, "updated": day(4)}], calls), restate=["events"], start=day(4)
    )
    assert calls == [1]
    assert deltalake.DeltaTable(f"{pipeline.dataset_uri}/events").version() == version
    assert any(
        "'events' ignored by the restatement" in note and f"expected start: {day(3).isoformat()}" in note
        for note in info.notes
    )


def test_a_transformer_of_a_resource_restated_from_all_of_time_is_refreshed_with_it(
    pipeline: sl.Pipeline,
) -> None:
    """Downstream models are restated too (002_… "Restatement plans"): a restatement
    without start= reaches the appending transformer's start, so it is rebuilt from the
    restated items, each day once with the corrected value."""
    feed = Feed()
    both = _daily_with_doubled(feed)
    pipeline.run(both(), execution_time=NOW)
    feed.values[3] = 30
    feed.windows.clear()
    info = pipeline.run(both(), restate=["daily"], execution_time=NOW)
    assert feed.windows == [(START, NOW)]
    assert info.notes == []
    rows = delta_rows(pipeline, "doubled")
    assert sorted(((r["ts"].replace(tzinfo=UTC) - START).days, r["double"]) for r in rows) == [
        (0, 2), (1, 2), (2, 2), (3, 60), (4, 2), (5, 2), (6, 2)
    ]  # fmt: skip


def test_a_restated_range_off_the_interval_bounds_reloads_every_interval_it_touches(
    pipeline: sl.Pipeline,
) -> None:
    feed = Feed()
    pipeline.run(feed.daily(), execution_time=NOW)
    feed.values = {n: 5 for n in range(7)}
    feed.windows.clear()
    hour = datetime.timedelta(hours=1)
    pipeline.run(
        feed.daily(), restate=["daily"], start=day(3) + 6 * hour, end=day(4) + hour, execution_time=NOW
    )
    assert feed.windows == [(day(3), day(5))]
    assert values(pipeline) == {0: 1, 1: 1, 2: 1, 3: 5, 4: 5, 5: 1, 6: 1}
    ledger = pipeline.state["sources"][pipeline.pipeline_name]["resources"]["daily"]["intervals"]
    assert ledger == [[START.isoformat(), NOW.isoformat()]]


@pytest.mark.cluster
def test_a_skipped_restatement_writes_nothing(pipeline: sl.Pipeline) -> None:
    feed = Feed()
    pipeline.run(feed.daily(disable_restatement=True), execution_time=NOW)
    before = (
        deltalake.DeltaTable(f"{pipeline.dataset_uri}/daily").version(),
        pipeline.state["_state_version"],
    )
    feed.windows.clear()
    pipeline.run(feed.daily(disable_restatement=True), restate=["daily"], start=day(3), execution_time=NOW)
    assert feed.windows == []
    after = (
        deltalake.DeltaTable(f"{pipeline.dataset_uri}/daily").version(),
        pipeline.state["_state_version"],
    )
    assert after == before
    assert not pipeline.has_pending_data


@pytest.mark.cluster
def test_an_allowed_scd2_restatement_clears_the_history_and_the_table_stays_scd2(
    pipeline: sl.Pipeline,
) -> None:
    """000_… SCD Type 2, "clear the history and start fresh": with disable_restatement
    false a restatement drops the captured history; later loads keep versioning."""

    def dim(rows: list[dict[str, Any]], **args: Any) -> sl.Resource:
        return sl.resource(
            rows, name="dim", write_disposition={"disposition": "merge", "strategy": "scd2"}, **args
        )

    pipeline.run(dim([{"id": 1, "v": "a"}]))
    pipeline.run(dim([{"id": 1, "v": "b"}]))
    assert sorted(r["v"] for r in delta_rows(pipeline, "dim")) == ["a", "b"]  # a retired, b current
    version = deltalake.DeltaTable(f"{pipeline.dataset_uri}/dim").version()
    pipeline.run(dim([{"id": 1, "v": "b"}]), restate=["dim"])  # skipped: scd2's default
    assert deltalake.DeltaTable(f"{pipeline.dataset_uri}/dim").version() == version

    pipeline.run(dim([{"id": 1, "v": "b"}], disable_restatement=False), restate=["dim"])
    (fresh,) = delta_rows(pipeline, "dim")
    assert (fresh["id"], fresh["v"], fresh["_sparkload_valid_to"]) == (1, "b", None)
    assert fresh["_sparkload_valid_from"] is not None

    pipeline.run(dim([{"id": 1, "v": "c"}]))
    rows = sorted(delta_rows(pipeline, "dim"), key=lambda r: r["v"])
    assert [(r["v"], r["_sparkload_valid_to"] is None) for r in rows] == [("b", False), ("c", True)]


@pytest.mark.cluster
def test_a_full_refresh_keeps_the_merge_and_empties_nested_tables_in_one_commit_each(
    pipeline: sl.Pipeline,
) -> None:
    """A refreshed merge table is rebuilt from this load alone, deduplicated by its key as
    a merge is; nested tables this load does not fill are emptied; one commit per table."""

    def users(rows: list[dict[str, Any]]) -> sl.Resource:
        @sl.resource(name="users", primary_key="id", write_disposition="merge")
        def users(updated: Any = sl.sources.incremental("updated", initial_value=day(0))) -> Iterator[Any]:  # noqa: B008
            yield from rows

        return users

    pipeline.run(users([{"id": 1, "updated": day(1), "tags": ["a"]}, {"id": 2, "updated": day(2)}]))
    before = {
        t: deltalake.DeltaTable(f"{pipeline.dataset_uri}/{t}").version() for t in ("users", "users__tags")
    }

    # id 2 is gone upstream, id 1 comes twice (the later one wins), and no row has tags now
    rows = [{"id": 1, "updated": day(1), "name": "old"}, {"id": 1, "updated": day(3), "name": "new"}]
    pipeline.run(
        users(rows).apply_hints(columns={"updated": {"dedup_sort": "desc"}}), restate=["users"], start=day(0)
    )

    assert [(r["id"], r["name"]) for r in delta_rows(pipeline, "users")] == [(1, "new")]
    assert delta_rows(pipeline, "users__tags") == []
    assert pipeline.table("users__tags").count() == 0
    after = {
        t: deltalake.DeltaTable(f"{pipeline.dataset_uri}/{t}").version() for t in ("users", "users__tags")
    }
    assert after == {t: v + 1 for t, v in before.items()}
    # the cursor started over and then moved to the newest row of the refresh
    assert pipeline.plan(users(rows)).incrementals == {"users.updated": day(3)}


@pytest.mark.cluster
@pytest.mark.parametrize("deletes_in_refresh", [False, True], ids=["no-deletes", "with-deletes"])
def test_a_full_refresh_forgets_the_tombstones_of_deleted_keys(
    pipeline: sl.Pipeline, deletes_in_refresh: bool
) -> None:
    """sequence_by keeps the newest deleted version of a key (a tombstone) so that an older
    insert stays out; a refresh starts the table over, tombstones included."""
    hints: dict[str, Any] = {
        "name": "items",
        "primary_key": "id",
        "write_disposition": {"disposition": "merge", "sequence_by": "lsn"},
        "columns": {"deleted": {"hard_delete": True}},
    }
    pipeline.run(sl.resource([{"id": 1, "lsn": 1, "v": "a", "deleted": False}], **hints))
    pipeline.run(sl.resource([{"id": 1, "lsn": 9, "deleted": True}], **hints))

    refreshed = [{"id": 2, "lsn": 1, "v": "b", "deleted": False}]
    if deletes_in_refresh:
        refreshed.append({"id": 3, "lsn": 1, "deleted": True})
    pipeline.run(sl.resource(refreshed, **hints), restate=["items"])
    # an insert of key 1 older than the forgotten delete now loads
    pipeline.run(sl.resource([{"id": 1, "lsn": 2, "v": "again", "deleted": False}], **hints))

    assert sorted((r["id"], r["v"]) for r in delta_rows(pipeline, "items")) == [(1, "again"), (2, "b")]


# -- restatement as SQLMesh's restating plan does it ---------------------------------------------


def test_a_date_end_of_a_restatement_takes_its_whole_day(pipeline: sl.Pipeline) -> None:
    """SQLMesh reads ``--end 2024-09-24`` as inclusive: day 4 is reloaded with day 3."""
    feed = Feed()
    pipeline.run(feed.daily(), execution_time=NOW)
    feed.values = {n: 7 for n in range(7)}
    feed.windows.clear()
    pipeline.run(feed.daily(), restate=["daily"], start="2024-09-23", end="2024-09-24", execution_time=NOW)
    assert feed.windows == [(day(3), day(5))]
    assert values(pipeline) == {0: 1, 1: 1, 2: 1, 3: 7, 4: 7, 5: 1, 6: 1}


def test_lookback_does_not_widen_a_restated_range(pipeline: sl.Pipeline) -> None:
    feed = Feed()
    pipeline.run(feed.daily(), execution_time=NOW)

    @sl.resource(name="daily")
    def looking_back(
        window: Any = sl.sources.intervals("ts", start=START, cron="@daily", lookback=2),  # noqa: B008
    ) -> Iterator[dict[str, Any]]:
        feed.windows.append((window.start, window.end))
        yield {"ts": window.start, "value": 5}

    feed.windows.clear()
    pipeline.run(looking_back, restate=["daily"], start=day(3), end=day(4), execution_time=NOW)
    assert feed.windows == [(day(3), day(4))]


def test_a_restating_run_loads_no_new_intervals_and_runs_no_other_resource(pipeline: sl.Pipeline) -> None:
    """A restating plan backfills the restated models only: the days that became due since
    the last run, and the resources not restated, wait for the next plain run."""
    feed = Feed()
    others: list[int] = []

    @sl.resource(name="other", write_disposition="append")
    def other() -> Iterator[dict[str, Any]]:
        others.append(1)
        yield {"id": 1}

    @sl.source
    def project() -> Any:
        return feed.daily(), other

    pipeline.run(project(), execution_time=day(5))
    assert feed.windows == [(START, day(5))] and others == [1]
    feed.windows.clear()
    pipeline.run(project(), restate=["daily"], start=day(1), end=day(2), execution_time=NOW)
    assert feed.windows == [(day(1), day(2))]
    assert others == [1]
    feed.windows.clear()
    pipeline.run(project(), execution_time=NOW)
    assert feed.windows == [(day(5), NOW)]
    assert others == [1, 1]
