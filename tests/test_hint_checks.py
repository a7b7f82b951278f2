"""Hint combinations that cannot mean anything are refused before the resource runs, or (a
table named per item) before its package is recorded: nothing is written, no package is
left behind for later runs to retry, and the next run with good hints loads normally."""

from __future__ import annotations

import datetime
from typing import Any

import pendulum
import pytest
from conftest import delta_rows

import sparkload as sl
from sparkload.exceptions import HintCombinationError, PipelineStepFailed, SparkloadError

UPSERT = {"disposition": "merge", "strategy": "upsert"}


def _resource(calls: list[str], **hints: Any) -> Any:
    @sl.resource(name="users", **hints)
    def users() -> Any:
        calls.append("ran")
        yield [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]

    return users


@pytest.mark.parametrize(
    ("hints", "problem"),
    [
        ({"write_disposition": UPSERT}, "merge strategy 'upsert' needs a primary_key"),
        (
            {"write_disposition": {"disposition": "merge", "strategy": "insert-only"}, "primary_key": "id",
             "merge_key": "name"},
            "matches rows by primary_key only",
        ),
        (
            {"write_disposition": {"disposition": "merge", "strategy": "scd2", "updated_at_name": "ts"}},
            "SCD Type 2 by time or by column identifies records by primary_key",
        ),
        (
            {"write_disposition": {"disposition": "merge", "strategy": "insert-only"}, "primary_key": "id",
             "columns": {"name": {"sequence_by": True}}},
            "sequence_by applies to the delete-insert and upsert strategies",
        ),
        (
            {"write_disposition": UPSERT, "primary_key": "id",
             "columns": {"id": {"dedup_sort": "sideways"}}},
            "dedup_sort must be 'asc' or 'desc'",
        ),
        (
            {"write_disposition": UPSERT, "primary_key": "id",
             "columns": {"id": {"hard_delete": True}, "name": {"hard_delete": True}}},
            "only one column may carry the hard_delete hint",
        ),
        (
            {"write_disposition": UPSERT, "primary_key": "id",
             "columns": {"id": {"dedup_sort": "asc"}, "name": {"dedup_sort": "desc"}}},
            "only one column may carry the dedup_sort hint",
        ),
    ],
)  # fmt: skip
def test_a_bad_combination_fails_before_the_resource_runs_and_leaves_nothing(
    pipeline: sl.Pipeline, hints: dict[str, Any], problem: str
) -> None:
    calls: list[str] = []
    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(_resource(calls, **hints))

    assert failure.value.step == "extract"
    cause = failure.value.__cause__
    assert isinstance(cause, HintCombinationError)
    assert (cause.resource, cause.table) == ("users", "users")
    assert problem in str(failure.value)
    assert "resource 'users'" in str(failure.value)
    assert calls == []  # refused before the generator was asked for anything
    assert not pipeline.has_pending_data
    assert "users" not in pipeline.destination_dataset.table_names()


def test_the_run_after_a_refused_one_loads_normally(pipeline: sl.Pipeline) -> None:
    calls: list[str] = []
    with pytest.raises(PipelineStepFailed):
        pipeline.run(_resource(calls, write_disposition=UPSERT))

    pipeline.run(_resource(calls, write_disposition=UPSERT, primary_key="id"))

    assert calls == ["ran"]
    assert sorted(row["name"] for row in delta_rows(pipeline, "users")) == ["a", "b"]


def test_a_table_named_per_item_is_checked_before_its_package_is_recorded(pipeline: sl.Pipeline) -> None:
    @sl.resource(table_name=lambda item: item["kind"], write_disposition=UPSERT)
    def events() -> Any:
        yield [{"kind": "clicks", "id": 1}]

    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(events())

    assert "table 'clicks'" in str(failure.value)
    assert isinstance(failure.value.__cause__, HintCombinationError)
    assert failure.value.__cause__.table == "clicks"
    assert "needs a primary_key" in str(failure.value)
    assert not pipeline.has_pending_data
    assert "clicks" not in pipeline.destination_dataset.table_names()


def test_plan_refuses_the_same_combination(pipeline: sl.Pipeline) -> None:
    calls: list[str] = []
    with pytest.raises(SparkloadError) as failure:
        pipeline.plan(_resource(calls, write_disposition=UPSERT))

    assert "needs a primary_key" in str(failure.value)
    assert calls == []


def test_a_good_active_record_timestamp_in_every_form_is_accepted(make_pipeline: Any) -> None:
    """The check reads the same forms the load does: pendulum, aware, naive and ISO text."""
    forms = [
        pendulum.datetime(9999, 12, 31),
        datetime.datetime(9999, 12, 31, tzinfo=datetime.timezone.utc),
        datetime.datetime(9999, 12, 31),
        "9999-12-31T00:00:00",
    ]
    for form in forms:
        pipeline = make_pipeline()
        wd = {"disposition": "merge", "strategy": "scd2", "active_record_timestamp": form}
        pipeline.run(_resource([], write_disposition=wd, table_name="dim"))
        valid_to = {row["_sparkload_valid_to"] for row in delta_rows(pipeline, "dim")}
        assert valid_to == {datetime.datetime(9999, 12, 31, tzinfo=datetime.timezone.utc)}, form
