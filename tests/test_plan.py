"""Plans (SQLMesh 002_… "plan"): ``pipeline.plan(...)`` computes what ``run()`` would do and
writes nothing; ``plan.apply()`` writes exactly that, and nothing when nothing is missing;
a plan the destination moved past is refused."""

# ruff: noqa: B008  (incrementals and intervals are declared as defaults, as in dlt)

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from typing import Any

import deltalake
import pytest
from conftest import delta_rows

import sparkload as sl
from sparkload.exceptions import DestructiveChangeError, PipelineStepFailed, PlanOutdatedError

UTC = datetime.timezone.utc
START = datetime.datetime(2024, 9, 20, tzinfo=UTC)
NOW = datetime.datetime(2024, 9, 27, tzinfo=UTC)
LOAD_ID = "_sparkload_load_id"


def day(n: int) -> datetime.datetime:
    return START + datetime.timedelta(days=n)


def daily_source(calls: list[Any], per_day: int = 2) -> Any:
    @sl.resource(name="daily")
    def daily(
        window: Any = sl.sources.intervals("ts", start=START, cron="@daily", batch_size=3),
    ) -> Iterator[Any]:
        calls.append((window.start, window.end))
        moment = window.start
        while moment < window.end:
            yield from ({"ts": moment + datetime.timedelta(hours=h), "v": h} for h in range(per_day))
            moment += datetime.timedelta(days=1)

    @sl.resource(name="users", primary_key="id", write_disposition="merge")
    def users(updated: Any = sl.sources.incremental("updated", initial_value=0)) -> Iterator[Any]:
        yield {"id": 1, "updated": 5, "name": "ada"}

    @sl.source
    def api() -> Any:
        return daily, users

    return api()


def snapshot(dataset: str) -> dict[str, Any]:
    """Every file under the dataset with its size: what "writes nothing" is checked against."""
    found = {}
    for root, _dirs, files in os.walk(dataset):
        for name in files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, dataset)] = os.path.getsize(path)
    return found


def test_a_plan_lists_added_tables_missing_intervals_and_cursor_starts_and_writes_nothing(
    pipeline: sl.Pipeline,
) -> None:
    os.makedirs(pipeline.dataset_uri, exist_ok=True)
    before = snapshot(pipeline.dataset_uri)
    calls: list[Any] = []
    plan = pipeline.plan(daily_source(calls), execution_time=NOW)

    assert calls == []  # no resource ran
    assert snapshot(pipeline.dataset_uri) == before
    assert {(t.table, t.status, t.disposition) for t in plan.tables} == {
        ("daily", "added", "merge/time-range"),
        ("users", "added", "merge/delete-insert"),
    }
    (daily,) = plan.intervals
    assert (daily.resource, daily.missing, daily.batches) == ("daily", [("2024-09-20", "2024-09-26")], 3)
    assert plan.incrementals == {"users.updated": 0}
    text = str(plan)
    assert "├── Added:" in text or "└── Added:" in text
    assert "daily: 2024-09-20 - 2024-09-26 (3 batches)" in text
    assert plan.to_dict()["intervals"][0]["missing"] == [("2024-09-20", "2024-09-26")]


def test_apply_writes_exactly_the_plan_then_a_new_plan_is_empty_and_applies_nothing(
    pipeline: sl.Pipeline,
) -> None:
    calls: list[Any] = []
    plan = pipeline.plan(daily_source(calls), execution_time=NOW)
    plan.apply()
    assert calls == [(day(0), day(3)), (day(3), day(6)), (day(6), day(7))]
    assert len(delta_rows(pipeline, "daily")) == 7 * 2
    ledger = pipeline.state["sources"]["api"]["resources"]["daily"]["intervals"]
    assert ledger == [[START.isoformat(), NOW.isoformat()]]

    calls.clear()
    again = pipeline.plan(daily_source(calls), execution_time=NOW)
    assert [i.missing for i in again.intervals] == [[]]
    assert {(t.table, t.status) for t in again.tables} == {("daily", "unchanged"), ("users", "unchanged")}
    assert again.incrementals == {"users.updated": 5}
    versions = {t: deltalake.DeltaTable(f"{pipeline.dataset_uri}/{t}").version() for t in ("daily", "users")}
    state_version = pipeline.state["_state_version"]
    only_intervals = pipeline.plan(daily_source(calls).with_resources("daily"), execution_time=NOW)
    assert not only_intervals.has_changes
    assert "No changes" in str(only_intervals)
    before = snapshot(pipeline.dataset_uri)
    only_intervals.apply()
    assert calls == []
    assert {t: deltalake.DeltaTable(f"{pipeline.dataset_uri}/{t}").version() for t in versions} == versions
    # no file of any table, the state table included, was added or changed
    assert snapshot(pipeline.dataset_uri) == before
    assert pipeline.state["_state_version"] == state_version


def test_apply_refuses_when_the_destination_moved_on(pipeline: sl.Pipeline) -> None:
    calls: list[Any] = []
    pipeline.run(daily_source(calls), execution_time=day(3))
    plan = pipeline.plan(daily_source(calls), execution_time=NOW)
    pipeline.run(daily_source(calls), execution_time=day(5))  # another run in between
    with pytest.raises(PlanOutdatedError, match="the destination changed since this plan was made"):
        plan.apply()


def test_a_plan_shows_schema_changes_from_column_hints_and_which_are_destructive(
    pipeline: sl.Pipeline,
) -> None:
    pipeline.run(
        [{"id": 1, "amount": 2, "code": 7}], table_name="items", primary_key="id", write_disposition="merge"
    )
    resource = sl.resource(
        [{"id": 1}],
        name="items",
        primary_key="id",
        write_disposition="merge",
        columns={
            "amount": {"data_type": "double"},
            "code": {"data_type": "text"},
            "note": {"data_type": "text"},
        },
    )
    plan = pipeline.plan(resource)
    (items,) = plan.tables
    assert items.status == "changed"
    assert items.added_columns == {"note": "string"}
    changes = {c.column: (c.old, c.new, c.destructive) for c in items.type_changes}
    # the new type named as in the hint and in the load's refusal ("... from bigint to text")
    assert changes == {"amount": ("bigint", "double", True), "code": ("bigint", "text", True)}


def test_a_plan_with_extract_knows_the_schema_from_the_data_and_apply_loads_without_extracting(
    pipeline: sl.Pipeline,
) -> None:
    pipeline.run([{"id": 1, "v": 10}], table_name="items", primary_key="id", write_disposition="merge")
    extracted = []

    @sl.resource(name="items", primary_key="id", write_disposition="merge", on_destructive_change="warn")
    def items() -> Iterator[Any]:
        extracted.append(1)
        yield {"id": 2, "v": "ten", "extra": True}

    plan = pipeline.plan(items, extract=True)
    assert extracted == [1]
    (table,) = plan.tables
    assert table.added_columns == {"extra": "boolean"}
    assert [(c.column, c.old, c.new, c.destructive) for c in table.type_changes] == [
        ("v", "bigint", "text", True)
    ]
    assert len(plan.extracted) == 1
    assert len(delta_rows(pipeline, "items")) == 1  # nothing loaded yet

    plan.apply()
    assert extracted == [1]  # loaded the planned package, not extracted again
    assert sorted(r["id"] for r in delta_rows(pipeline, "items")) == [1, 2]


def test_a_restatement_plan_lists_restated_ranges_and_ignored_resources(pipeline: sl.Pipeline) -> None:
    calls: list[Any] = []
    pipeline.run(daily_source(calls), execution_time=NOW)
    before = snapshot(pipeline.dataset_uri)
    calls.clear()
    plan = pipeline.plan(
        daily_source(calls), restate=["daily", "users"], start=day(3), end=day(5), execution_time=NOW
    )
    assert calls == [] and snapshot(pipeline.dataset_uri) == before  # a plan writes nothing
    (daily,) = plan.intervals
    assert daily.restated == ("2024-09-23", "2024-09-24")
    assert daily.missing == [("2024-09-23", "2024-09-24")]
    assert plan.ignored == {"users": None}
    text = str(plan)
    assert "Restated:" in text and "Ignored resources (expected start):" in text


def test_apply_after_a_partial_backfill_writes_exactly_the_windows_the_plan_lists(
    pipeline: sl.Pipeline,
) -> None:
    calls: list[Any] = []
    pipeline.run(daily_source(calls).with_resources("daily"), execution_time=day(3))
    first = {r["ts"]: r[LOAD_ID] for r in delta_rows(pipeline, "daily")}
    commits_before = len(deltalake.DeltaTable(f"{pipeline.dataset_uri}/daily").history())
    calls.clear()

    plan = pipeline.plan(daily_source(calls).with_resources("daily"), execution_time=NOW)
    (daily,) = plan.intervals
    assert (daily.missing, daily.batches) == ([("2024-09-23", "2024-09-26")], 2)
    listed = {
        datetime.date.fromisoformat(low) + datetime.timedelta(days=d)
        for low, high in daily.missing
        for d in range((datetime.date.fromisoformat(high) - datetime.date.fromisoformat(low)).days + 1)
    }
    plan.apply()

    assert calls == [(day(3), day(6)), (day(6), day(7))]
    rows = delta_rows(pipeline, "daily")
    written = {r["ts"].date() for r in rows if r[LOAD_ID] not in set(first.values())}
    assert written == listed  # the new rows are exactly the listed days
    assert {ts: load for ts, load in ((r["ts"], r[LOAD_ID]) for r in rows) if ts in first} == first
    assert len(rows) == 7 * 2
    history = deltalake.DeltaTable(f"{pipeline.dataset_uri}/daily").history()
    assert len(history) - commits_before == daily.batches  # one commit per listed batch
    ledger = pipeline.state["sources"]["api"]["resources"]["daily"]["intervals"]
    assert ledger == [[START.isoformat(), NOW.isoformat()]]


def test_apply_refuses_when_another_writer_committed_to_a_planned_table(pipeline: sl.Pipeline) -> None:
    calls: list[Any] = []
    pipeline.run(daily_source(calls).with_resources("daily"), execution_time=day(3))
    plan = pipeline.plan(daily_source(calls).with_resources("daily"), execution_time=NOW)
    table = deltalake.DeltaTable(f"{pipeline.dataset_uri}/daily")
    table.delete("v = 1")  # someone else's commit, not through this pipeline
    calls.clear()
    after_their_commit = snapshot(pipeline.dataset_uri)
    with pytest.raises(PlanOutdatedError, match="the destination changed since this plan was made"):
        plan.apply()
    assert calls == []
    assert snapshot(pipeline.dataset_uri) == after_their_commit


@pytest.mark.parametrize("how", ["restated", "replace"])
def test_a_plan_lists_the_cursor_start_the_run_then_uses(pipeline: sl.Pipeline, how: str) -> None:
    """A fully refreshed resource (a restatement reaching its start, or a replace) starts
    its cursor over from the initial value; the plan must say so, not the stored value."""
    seen: list[Any] = []

    def users(disposition: str) -> sl.Resource:
        @sl.resource(name="users", primary_key="id", write_disposition=disposition)
        def users(updated: Any = sl.sources.incremental("updated", initial_value=day(3))) -> Iterator[Any]:
            seen.append(updated.start_value)
            yield from ({"id": n, "updated": day(n)} for n in (4, 5))

        return users

    disposition = "merge" if how == "restated" else "replace"
    pipeline.run(users(disposition))
    restate = {"restate": ["users"], "start": day(3)} if how == "restated" else {}
    plan = pipeline.plan(users(disposition), **restate)
    plan.apply()
    assert seen[-1] == day(3)  # the run started over
    assert plan.incrementals == {"users.updated": seen[-1]}


def test_a_plan_flags_a_destructive_change_and_apply_stops_before_any_commit(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": 10}], table_name="items", primary_key="id", write_disposition="merge")
    before = (deltalake.DeltaTable(f"{pipeline.dataset_uri}/items").version(), delta_rows(pipeline, "items"))
    resource = sl.resource([{"id": 2, "v": "ten"}], name="items", primary_key="id", write_disposition="merge")
    plan = pipeline.plan(resource, extract=True)
    (items,) = plan.tables
    assert [(c.column, c.old, c.destructive) for c in items.type_changes] == [("v", "bigint", True)]
    assert "(destructive)" in str(plan)
    with pytest.raises(PipelineStepFailed) as failed:
        plan.apply()
    assert isinstance(failed.value.__cause__, DestructiveChangeError)
    assert "table 'items': column 'v' changes type from bigint to text" in str(failed.value)
    after = (deltalake.DeltaTable(f"{pipeline.dataset_uri}/items").version(), delta_rows(pipeline, "items"))
    assert after == before


def test_a_plan_shows_a_key_change_as_destructive(pipeline: sl.Pipeline) -> None:
    rows = [{"id": 1, "region": "eu"}]
    pipeline.run(rows, table_name="items", primary_key="id", write_disposition="merge")
    plan = pipeline.plan(
        sl.resource(rows, name="items", primary_key=["id", "region"], write_disposition="merge")
    )
    (items,) = plan.tables
    assert items.status == "changed"
    assert [(c.new, c.destructive) for c in items.type_changes] == [
        ("primary key changes from ['id'] to ['id', 'region']", True)
    ]
    assert "(destructive)" in str(plan)


def test_what_a_normalize_cut_short_left_is_no_pending_data(pipeline: sl.Pipeline) -> None:
    """Part of a normalized package beside the data, with no normalize.json and no extracted
    package behind it (a kill mid-normalize, then an emptied working directory), is not a
    package a run can finish: plan() works, and run() loads its own rows and removes it."""
    pipeline.run([{"id": 1}], table_name="items")
    leftover = pipeline.destination_dataset.staging_folder(pipeline.pipeline_name).child("1.000000")
    leftover.child("normalized").child("items").write("part-0.parquet", b"cut short")
    assert not pipeline.has_pending_data

    plan = pipeline.plan([{"id": 2}], table_name="items")
    assert "items" in str(plan)
    pipeline.run([{"id": 2}], table_name="items")
    assert sorted(row["id"] for row in delta_rows(pipeline, "items")) == [1, 2]
    assert not leftover.exists()


def test_a_run_after_an_extracting_plan_loads_its_own_data_not_the_preview(pipeline: sl.Pipeline) -> None:
    """plan(extract=True) keeps its package for plan.apply(); a run() given other data
    instead discards that preview (its state was never committed) and loads what it was
    given, even when the preview carried a type change the run would refuse."""
    pipeline.run([{"id": 1, "v": 10}], table_name="items", primary_key="id", write_disposition="merge")
    plan = pipeline.plan([{"id": 2, "v": "ten"}], table_name="items", extract=True)
    assert len(plan.extracted) == 1
    assert not pipeline.has_pending_data

    pipeline.run([{"id": 3, "v": 30}], table_name="items")
    assert sorted((r["id"], r["v"]) for r in delta_rows(pipeline, "items")) == [(1, 10), (3, 30)]
    assert list(pipeline.destination_dataset.staging_folder(pipeline.pipeline_name).subfolders()) == []
    with pytest.raises(PlanOutdatedError):
        plan.apply()

    # A second plan replaces the first one's package; its apply() loads it.
    pipeline.plan([{"id": 4, "v": 40}], table_name="items", extract=True)
    second = pipeline.plan([{"id": 5, "v": 50}], table_name="items", extract=True)
    second.apply()
    assert sorted(r["id"] for r in delta_rows(pipeline, "items")) == [1, 3, 5]


def test_a_plan_prints_sub_day_intervals_with_their_times(pipeline: sl.Pipeline) -> None:
    """SQLMesh's format_intervals: hours are shown to the second, their end inclusive (the
    plan printed them as dates, hiding which hours of the day were missing)."""

    @sl.resource(name="hourly")
    def hourly(window: Any = sl.sources.intervals("ts", start=START, cron="@hourly")) -> Iterator[Any]:
        yield {"ts": window.start}

    plan = pipeline.plan(hourly(), execution_time=START + datetime.timedelta(hours=12))
    (hours,) = plan.intervals
    assert hours.missing == [("2024-09-20 00:00:00", "2024-09-20 11:59:59")]
    assert "hourly: 2024-09-20 00:00:00 - 2024-09-20 11:59:59 (1 batch)" in str(plan)


def test_a_plan_lists_every_resource_a_run_loads_even_with_no_interval_missing(pipeline: sl.Pipeline) -> None:
    """An append or cursor resource loads its new rows on every run: its plan says so, and
    does not claim there is nothing to load; a plan of an up-to-date interval resource does."""
    calls: list[Any] = []
    pipeline.run(daily_source(calls), execution_time=NOW)

    @sl.resource(name="events", write_disposition="append")
    def events() -> Iterator[Any]:
        yield {"id": 1}

    @sl.resource(name="pages", write_disposition="replace")
    def pages() -> Iterator[Any]:
        yield {"id": 1}

    pipeline.run([events, pages])

    plan = pipeline.plan(daily_source(calls), execution_time=NOW)
    assert plan.loads == {"users": "all new rows (merge)"}
    assert plan.has_changes
    text = str(plan)
    assert "No changes" not in text
    assert "Resources without intervals to run:\n└── users: all new rows (merge)" in text
    assert plan.to_dict()["loads"] == {"users": "all new rows (merge)"}

    appended = pipeline.plan([events, pages])
    assert appended.loads == {"events": "all new rows (append)", "pages": "all rows (replace)"}
    assert "No changes" not in str(appended)
    appended.apply()
    assert len(delta_rows(pipeline, "events")) == 2

    up_to_date = pipeline.plan(daily_source(calls).with_resources("daily"), execution_time=NOW)
    assert up_to_date.loads == {} and not up_to_date.has_changes
