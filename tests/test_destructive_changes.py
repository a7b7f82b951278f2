"""on_destructive_change (SQLMesh's rules, 001_… "Destructive changes"): a load that would
change a column's type or a table's keys stops before any commit by default; ``warn`` and
``allow`` proceed with the variant-column rule and say so; additive changes always
proceed."""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Iterator
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from conftest import delta_rows, spark_rows

import sparkload as sl
from sparkload.exceptions import DestructiveChangeError, PipelineStepFailed, ResourceError


def version(pipeline: sl.Pipeline, table: str) -> int:
    return deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").version()


def columns(pipeline: sl.Pipeline, table: str) -> list[str]:
    return [f.name for f in deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema().fields]


@pytest.mark.jvm
def test_a_type_change_stops_the_load_before_any_commit_naming_table_column_and_types(
    pipeline: sl.Pipeline,
) -> None:
    pipeline.run([{"id": 1, "v": 10, "tags": ["a"]}], table_name="items")
    pipeline.run([{"k": 1}], table_name="other")
    before = {t: (version(pipeline, t), delta_rows(pipeline, t)) for t in ("items", "items__tags", "other")}

    @sl.source
    def both() -> Any:
        return [
            sl.resource([{"k": 2}], name="other"),
            sl.resource([{"id": 2, "v": "ten", "tags": ["b"]}], name="items"),
        ]

    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(both())
    assert isinstance(failed.value.__cause__, DestructiveChangeError)
    message = str(failed.value)
    assert "table 'items': column 'v' changes type from bigint to text" in message
    assert "nothing was written" in message
    # Neither the changed table nor the other table of the same load was touched.
    assert {t: (version(pipeline, t), delta_rows(pipeline, t)) for t in before} == before


def test_warn_proceeds_with_a_variant_column_and_says_so(make_pipeline: Any, caplog: Any) -> None:
    pipeline = make_pipeline(on_destructive_change="warn")
    pipeline.run([{"id": 1, "v": 10}], table_name="items")
    with caplog.at_level(logging.WARNING):
        info = pipeline.run([{"id": 2, "v": "ten"}], table_name="items")
    assert any("column 'v' changes type from bigint to text" in note for note in info.notes)
    assert any("destructive change allowed" in r.getMessage() for r in caplog.records)
    rows = sorted(delta_rows(pipeline, "items"), key=lambda r: r["id"])
    assert [(r["id"], r["v"], r["v__v_text"]) for r in rows] == [(1, 10, None), (2, None, "ten")]


def test_allow_on_the_resource_overrides_the_pipelines_error(pipeline: sl.Pipeline, caplog: Any) -> None:
    pipeline.run([{"id": 1, "v": 10}], table_name="items")
    with caplog.at_level(logging.WARNING):
        info = pipeline.run(sl.resource([{"id": 2, "v": "ten"}], name="items", on_destructive_change="allow"))
    assert any("allowed by on_destructive_change='allow'" in note for note in info.notes)
    assert not any("destructive" in r.getMessage() for r in caplog.records)  # allow is silent
    assert "v__v_text" in columns(pipeline, "items")


def test_additive_changes_always_proceed(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "amount": 1.5}], table_name="items")
    # a new column, and ints widening into the double column
    info = pipeline.run([{"id": 2, "amount": 3, "note": "new"}], table_name="items")
    assert info.notes == []
    assert "amount__v_bigint" not in columns(pipeline, "items")
    rows = sorted(delta_rows(pipeline, "items"), key=lambda r: r["id"])
    assert [(r["id"], r["amount"], r["note"]) for r in rows] == [(1, 1.5, None), (2, 3.0, "new")]


def test_an_existing_variant_column_is_no_new_change(make_pipeline: Any) -> None:
    """Once a change was accepted, later loads of the same kind proceed under ``error``."""
    make_pipeline("variants", on_destructive_change="allow").run(
        [{"id": 1, "v": 1}, {"id": 2, "v": "x"}], table_name="t"
    )
    strict = make_pipeline("variants")
    strict.run([{"id": 3, "v": "y"}], table_name="t")
    assert sorted(r["v__v_text"] or "" for r in delta_rows(strict, "t")) == ["", "x", "y"]


def test_a_replace_rebuilds_its_table_so_a_type_change_is_not_destructive(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": 10}], table_name="items", write_disposition="replace")
    pipeline.run([{"id": 1, "v": "ten"}], table_name="items", write_disposition="replace")
    assert [(r["id"], r["v"]) for r in delta_rows(pipeline, "items")] == [(1, "ten")]


@pytest.mark.parametrize("hint", ["primary_key", "merge_key"])
def test_changing_a_merge_tables_key_is_destructive(make_pipeline: Any, hint: str) -> None:
    pipeline = make_pipeline()
    rows = [{"id": 1, "region": "eu", "v": 1}]
    pipeline.run(rows, table_name="items", write_disposition="merge", **{hint: "id"})
    before = version(pipeline, "items")
    with pytest.raises(
        PipelineStepFailed,
        match=rf"table 'items': {hint.replace('_', ' ')} changes from \['id'\] to \['id', 'region'\]",
    ):
        pipeline.run(rows, table_name="items", write_disposition="merge", **{hint: ["id", "region"]})
    assert version(pipeline, "items") == before
    pipeline.drop_pending_packages()

    allowed = make_pipeline(pipeline.pipeline_name, on_destructive_change="allow")
    info = allowed.run(rows, table_name="items", write_disposition="merge", **{hint: ["id", "region"]})
    assert any("changes from ['id'] to ['id', 'region']" in note for note in info.notes)
    # the new keys are the recorded ones now: the same keys again are no change
    again = make_pipeline(pipeline.pipeline_name)
    assert (
        again.run(rows, table_name="items", write_disposition="merge", **{hint: ["id", "region"]}).notes == []
    )


def test_a_refused_package_loads_once_the_pipeline_allows_the_change(make_pipeline: Any) -> None:
    strict = make_pipeline("refused")
    strict.run([{"id": 1, "v": 10}], table_name="items")
    with pytest.raises(PipelineStepFailed):
        strict.run([{"id": 2, "v": "ten"}], table_name="items")
    assert strict.has_pending_data
    make_pipeline("refused", on_destructive_change="warn").run()
    assert sorted(r["id"] for r in delta_rows(strict, "items")) == [1, 2]


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ResourceError, match="on_destructive_change must be one of"):
        sl.resource([{"a": 1}], name="r", on_destructive_change="sometimes")


# -- the order of the settings, the load-time check, interval batches, other writers' types ----


def test_error_on_the_resource_overrides_the_pipelines_warn(make_pipeline: Any) -> None:
    """001_…: the model's own setting first, then the default, then SQLMesh's error."""
    pipeline = make_pipeline(on_destructive_change="warn")
    pipeline.run([{"id": 1, "v": 10}], table_name="items")
    before = (version(pipeline, "items"), delta_rows(pipeline, "items"))
    with pytest.raises(
        PipelineStepFailed, match="table 'items': column 'v' changes type from bigint to text"
    ):
        pipeline.run(sl.resource([{"id": 2, "v": "ten"}], name="items", on_destructive_change="error"))
    assert (version(pipeline, "items"), delta_rows(pipeline, "items")) == before


def test_the_load_time_check_reads_the_real_delta_schema(make_pipeline: Any) -> None:
    """001_…: "the check is performed again at run time based on the physical tables": a
    pipeline that never loaded the table (no schema or state of it) is still refused."""
    first = make_pipeline("first", dataset_name="shared")
    first.run([{"id": 1, "v": 10}], table_name="items")
    before = (version(first, "items"), delta_rows(first, "items"))
    other = make_pipeline("other", dataset_name="shared")
    assert other.dataset_uri == first.dataset_uri
    with pytest.raises(PipelineStepFailed) as failed:
        other.run([{"id": 2, "v": "ten"}], table_name="items")
    assert isinstance(failed.value.__cause__, DestructiveChangeError)
    assert "table 'items': column 'v' changes type from bigint to text" in str(failed.value)
    assert (version(first, "items"), delta_rows(first, "items")) == before


def _daily(start: datetime.datetime, **row: Any) -> sl.Resource:
    """An interval resource yielding ``row`` once per day of its window."""
    hints = (
        {"on_destructive_change": row.pop("on_destructive_change")} if "on_destructive_change" in row else {}
    )

    @sl.resource(name="daily", **hints)
    def daily(window: Any = sl.sources.intervals("ts", start=start)) -> Iterator[Any]:  # noqa: B008
        moment = window.start
        while moment < window.end:
            yield {"ts": moment, **row}
            moment += datetime.timedelta(days=1)

    return daily


SEPT_20 = datetime.datetime(2024, 9, 20, tzinfo=datetime.timezone.utc)
DAY = datetime.timedelta(days=1)


def _ledger(pipeline: sl.Pipeline) -> Any:
    """The intervals committed (``pipeline.state`` is a waiting package's, as in dlt)."""
    return pipeline.committed_state["sources"][pipeline.pipeline_name]["resources"]["daily"]["intervals"]


def test_a_refused_interval_batch_records_no_interval(pipeline: sl.Pipeline) -> None:
    """A time-range batch with a destructive change commits neither its rows nor its
    ledger entry: the next run loads the same windows."""
    pipeline.run(_daily(SEPT_20, v=1), execution_time=SEPT_20 + 3 * DAY)
    ledger = _ledger(pipeline)
    before = (version(pipeline, "daily"), delta_rows(pipeline, "daily"))
    with pytest.raises(PipelineStepFailed, match="column 'v' changes type from bigint to text"):
        pipeline.run(_daily(SEPT_20, v="x"), execution_time=SEPT_20 + 5 * DAY)
    assert (version(pipeline, "daily"), delta_rows(pipeline, "daily")) == before
    assert _ledger(pipeline) == ledger
    pipeline.drop_pending_packages()

    pipeline.run(_daily(SEPT_20, v=2), execution_time=SEPT_20 + 5 * DAY)
    rows = sorted(delta_rows(pipeline, "daily"), key=lambda r: r["ts"])
    assert [r["v"] for r in rows] == [1, 1, 1, 2, 2]
    assert _ledger(pipeline) == [[SEPT_20.isoformat(), (SEPT_20 + 5 * DAY).isoformat()]]


@pytest.mark.parametrize(
    ("later", "expected"),
    [
        ({"v": 2, "note": "new"}, {"v": 2, "note": "new"}),  # additive: proceeds under error
        ({"v": "x", "on_destructive_change": "allow"}, {"v": None, "v__v_text": "x"}),
    ],
    ids=["new column", "allowed type change"],
)
def test_additive_and_allowed_changes_proceed_on_a_time_range_table(
    pipeline: sl.Pipeline, later: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Intervals load by time-range replacement by default; their tables take new columns
    (and allowed variant columns) as appended and merged tables do."""
    pipeline.run(_daily(SEPT_20, v=1), execution_time=SEPT_20 + 3 * DAY)
    pipeline.run(_daily(SEPT_20, **later), execution_time=SEPT_20 + 5 * DAY)
    rows = sorted(delta_rows(pipeline, "daily"), key=lambda r: r["ts"])
    assert len(rows) == 5
    assert all(r["v"] == 1 and all(r[c] is None for c in expected if c != "v") for r in rows[:3])
    assert all({c: r[c] for c in expected} == expected for r in rows[3:])
    assert _ledger(pipeline) == [[SEPT_20.isoformat(), (SEPT_20 + 5 * DAY).isoformat()]]


@pytest.mark.parametrize(
    ("arrow_type", "values", "fitting", "variant"),
    [
        (pa.int32(), [2**40, -(2**40), 7], [7], "n__v_bigint"),
        (pa.float32(), [1e300, 0.1, 0.5], [0.5], "n__v_double"),
    ],
    ids=["int to bigint", "float to double"],
)
def test_widening_a_column_another_writer_made_narrow_proceeds_and_loses_nothing(
    pipeline: sl.Pipeline, arrow_type: pa.DataType, values: list[Any], fitting: list[Any], variant: str
) -> None:
    """The issue: "Additive changes (new columns, widening such as int→bigint or
    float→double) always proceed". sparkload makes only bigint and double columns; an int
    or float column comes from another writer, and values that need the wider type must
    arrive unchanged (not fail the load, not be narrowed: the engine would store 1e300 as
    inf and 0.1 as 0.10000000149 in a float column).

    Delta cannot widen a column in place, so the values the column holds exactly stay in it
    and the wider ones go to its variant column, sparkload's rule for a value that does not
    fit its column. The plan shows the widening, and nothing stops it."""
    uri = f"{pipeline.dataset_uri}/items"
    os.makedirs(pipeline.dataset_uri, exist_ok=True)
    deltalake.write_deltalake(
        uri, pa.table({"id": pa.array([1], pa.int64()), "n": pa.array([1], arrow_type)})
    )
    data = [{"id": i, "n": value} for i, value in enumerate(values, start=2)]
    plan = pipeline.plan(sl.resource(data, name="items"), extract=True)
    (items,) = plan.tables
    assert items.status == "changed"
    assert [(c.column, c.new, c.destructive) for c in items.type_changes] == [
        ("n", variant.rsplit("_", 1)[1], False)
    ]
    assert "(destructive)" not in str(plan)

    info = plan.apply()
    assert info.notes == []  # additive: proceeds under the default on_destructive_change='error'
    schema = {f.name: f.type.type for f in deltalake.DeltaTable(uri).schema().fields}
    assert schema["n"] == str(arrow_type).replace("int32", "integer")  # never changed in place
    assert schema[variant] == {"n__v_bigint": "long", "n__v_double": "double"}[variant]
    for rows in (
        sorted(deltalake.DeltaTable(uri).to_pyarrow_table().to_pylist(), key=lambda r: r["id"]),
        spark_rows(pipeline, "items", order_by="id"),
    ):
        assert [r["id"] for r in rows] == [1, *range(2, len(values) + 2)]
        assert rows[0]["n"] == 1 and rows[0][variant] is None
        # Every value is in exactly one of the two columns, exactly as it was given.
        loaded = [r["n"] if r[variant] is None else r[variant] for r in rows[1:]]
        assert [r[variant] is not None and r["n"] is None for r in rows[1:]] == [
            v not in fitting for v in values
        ]
        assert loaded == values
        assert [type(v) for v in loaded] == [type(v) for v in values]


def test_no_table_is_partitioned_so_partitioning_never_changes(pipeline: sl.Pipeline) -> None:
    """The issue counts a partitioning change as destructive; sparkload documents that it
    writes no partitioned tables (docs/intervals.md), time-range tables included."""
    start = datetime.datetime(2024, 9, 20, tzinfo=datetime.timezone.utc)

    @sl.resource(name="daily")
    def daily(window: Any = sl.sources.intervals("ts", start=start)) -> Iterator[Any]:  # noqa: B008
        yield {"ts": window.start, "v": 1, "tags": ["a"]}

    pipeline.run(daily, execution_time=start + datetime.timedelta(days=3))
    pipeline.run([{"id": 1}], table_name="merged", primary_key="id", write_disposition="merge")
    for table in ("daily", "daily__tags", "merged"):
        metadata = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").metadata()
        assert metadata.partition_columns == [], table
