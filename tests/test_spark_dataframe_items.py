"""Spark DataFrames as items: staged by the engine into the load package (never collected),
normalized as dicts are, loaded with every write disposition, filtered by incremental
cursors in Spark. Tables are read back with delta-rs."""

# Incrementals are declared as argument defaults, as dlt declares them.
# ruff: noqa: B008

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.common.package import SPARK_DIR
from sparkload.engine.session import session_for
from sparkload.exceptions import PipelineStepFailed, ResourceError
from sparkload.extract.storage import TableFiles

# The engine sessions that run this file (noxfile.py says why); `connect` runs a
# DataFrame of the user's session on the server staged, merged and filtered, and the
# refusal of another server's; the JVM its own set (marked on those tests).
pytestmark = [pytest.mark.cluster]

UTC = datetime.timezone.utc
TS1 = datetime.datetime(2024, 1, 1, 12, 30, tzinfo=UTC)
TS2 = datetime.datetime(2024, 2, 1, 8, 0, tzinfo=UTC)

ROWS: list[dict[str, Any]] = [
    {
        "id": 1,
        "name": "ada",
        "small": 7,
        "ratio": 0.5,
        "active": True,
        "price": decimal.Decimal("12.50"),
        "blob": b"\x00\x01",
        "created": TS1,
        "day": datetime.date(2024, 1, 1),
        "customer": {"city": "London", "geo": {"lat": 51.5}},
        "tags": ["new", "vip"],
        "items": [{"sku": "s1", "qty": 1}, {"sku": "s2", "qty": 2}],
    },
    {
        "id": 2,
        "name": "2024-01-01T00:00:00",  # looks like a timestamp, is text
        "small": None,
        "ratio": 1.25,
        "active": False,
        "price": decimal.Decimal("3.00"),
        "blob": None,
        "created": TS2,
        "day": datetime.date(2024, 2, 1),
        "customer": {"city": "Paris", "geo": {"lat": 48.9}},
        "tags": [],
        "items": [{"sku": "s3", "qty": 5}],
    },
    {
        "id": 3,
        "name": None,
        "small": 1,
        "ratio": None,
        "active": None,
        "price": None,
        "blob": None,
        "created": None,
        "day": None,
        "customer": None,
        "tags": None,
        "items": [{"sku": None, "qty": None}],
    },
]

DDL = (
    "id bigint, name string, small int, ratio double, active boolean, price decimal(10,2), "
    "blob binary, created timestamp, day date, "
    "customer struct<city: string, geo: struct<lat: double>>, tags array<string>, "
    "items array<struct<sku: string, qty: int>>"
)


def frame(pipeline: sl.Pipeline, rows: list[dict[str, Any]], ddl: str) -> Any:
    return pipeline.spark.createDataFrame(rows, ddl)


def schema_of(pipeline: sl.Pipeline, table: str) -> dict[str, str]:
    fields = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema().fields
    return {f.name: str(f.type) for f in fields}


def comparable_rows(rows: list[dict[str, Any]], drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    kept = [{k: v for k, v in row.items() if k not in drop} for row in user_columns(rows)]
    return sorted(kept, key=repr)


@pytest.mark.connect
@pytest.mark.jvm
def test_dataframe_loads_the_same_tables_as_the_same_rows_as_dicts(pipeline: sl.Pipeline) -> None:
    pipeline.run(ROWS, table_name="from_dicts")
    pipeline.run(frame(pipeline, ROWS, DDL), table_name="from_df")
    for suffix in ("", "__tags", "__items"):
        dicts, df = "from_dicts" + suffix, "from_df" + suffix
        df_types, dict_types = schema_of(pipeline, df), schema_of(pipeline, dicts)
        if not suffix:
            # A DataFrame's decimal keeps its declared precision, as an Arrow decimal does;
            # Python decimals take the default decimal(38,9).
            assert df_types.pop("price") == 'PrimitiveType("decimal(10,2)")'
            assert dict_types.pop("price") == 'PrimitiveType("decimal(38,9)")'
        assert df_types == dict_types, suffix
        assert comparable_rows(delta_rows(pipeline, df)) == comparable_rows(delta_rows(pipeline, dicts))
    # Nested rows link to their parents and roots as the dict path links them.
    roots = {row["_sparkload_id"]: row["id"] for row in delta_rows(pipeline, "from_df")}
    items = delta_rows(pipeline, "from_df__items")
    assert sorted((roots[r["_sparkload_parent_id"]], r["_sparkload_list_idx"], r["sku"]) for r in items) == [
        (1, 0, "s1"),
        (1, 1, "s2"),
        (2, 0, "s3"),
        (3, 0, None),
    ]
    root = {r["id"]: r for r in delta_rows(pipeline, "from_df")}
    assert root[2]["name"] == "2024-01-01T00:00:00"
    assert root[1]["customer__geo__lat"] == 51.5
    assert root[1]["created"] == TS1
    assert root[1]["price"] == decimal.Decimal("12.50")
    assert root[1]["blob"] == b"\x00\x01"


def test_max_table_nesting_applies_to_dataframes_as_to_dicts(make_pipeline: Any) -> None:
    pipeline = make_pipeline()

    @sl.resource(max_table_nesting=0)
    def from_df() -> Iterator[Any]:
        yield frame(pipeline, ROWS, DDL)

    pipeline.run(from_df())
    assert "from_df__items" not in {
        p.name for p in Path(pipeline.dataset_uri).iterdir()
    }  # kept as an array column
    assert "items" in schema_of(pipeline, "from_df")
    assert "customer" in schema_of(pipeline, "from_df")


@pytest.mark.jvm
def test_resource_may_yield_dataframes_beside_dicts(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def mixed() -> Iterator[Any]:
        yield {"id": 0, "name": "zero"}
        yield pipeline.spark.range(1, 4).selectExpr("id", "concat('n', id) as name")
        yield pipeline.spark.range(4, 6).selectExpr("id", "concat('n', id) as name")

    info = pipeline.run(mixed())
    assert info is not None
    rows = delta_rows(pipeline, "mixed", order_by="id")
    assert [(r["id"], r["name"]) for r in rows] == [(0, "zero")] + [(i, f"n{i}") for i in range(1, 6)]


def test_append_and_replace_with_dataframes(pipeline: sl.Pipeline) -> None:
    def numbers(start: int, end: int) -> Any:
        return pipeline.spark.range(start, end).selectExpr("id", "id * 2 as double_id")

    pipeline.run(numbers(0, 3), table_name="appended")
    pipeline.run(numbers(3, 5), table_name="appended")
    assert sorted(r["id"] for r in delta_rows(pipeline, "appended")) == [0, 1, 2, 3, 4]

    pipeline.run(numbers(0, 3), table_name="replaced", write_disposition="replace")
    pipeline.run(numbers(10, 12), table_name="replaced", write_disposition="replace")
    assert sorted(r["double_id"] for r in delta_rows(pipeline, "replaced")) == [20, 22]


def test_insert_only_with_a_dataframe_adds_new_keys_alone(pipeline: sl.Pipeline) -> None:
    insert_only = {"disposition": "merge", "strategy": "insert-only"}
    ddl = "id bigint, v string"
    for rows in ([{"id": 1, "v": "a"}], [{"id": 1, "v": "A"}, {"id": 2, "v": "b"}]):
        pipeline.run(
            frame(pipeline, rows, ddl), table_name="io", write_disposition=insert_only, primary_key="id"
        )
    assert [(r["id"], r["v"]) for r in delta_rows(pipeline, "io", order_by="id")] == [(1, "a"), (2, "b")]


@pytest.mark.connect
def test_merge_upsert_with_a_dataframe_updates_and_inserts(pipeline: sl.Pipeline) -> None:
    upsert = {"disposition": "merge", "strategy": "upsert"}
    ddl = "id bigint, v string"
    pipeline.run(
        frame(pipeline, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], ddl),
        table_name="m",
        write_disposition=upsert,
        primary_key="id",
    )
    pipeline.run(
        frame(pipeline, [{"id": 2, "v": "B"}, {"id": 3, "v": "c"}], ddl),
        table_name="m",
        write_disposition=upsert,
        primary_key="id",
    )
    assert [(r["id"], r["v"]) for r in delta_rows(pipeline, "m", order_by="id")] == [
        (1, "a"),
        (2, "B"),
        (3, "c"),
    ]


@pytest.mark.jvm
def test_merge_delete_insert_with_a_dataframe_replaces_nested_rows(pipeline: sl.Pipeline) -> None:
    ddl = "id bigint, items array<struct<sku: string>>"
    first = [{"id": 1, "items": [{"sku": "a"}, {"sku": "b"}]}, {"id": 2, "items": [{"sku": "c"}]}]
    second = [{"id": 1, "items": [{"sku": "z"}]}]
    for rows in (first, second):
        pipeline.run(frame(pipeline, rows, ddl), table_name="dm", write_disposition="merge", primary_key="id")
    assert sorted(r["sku"] for r in delta_rows(pipeline, "dm__items")) == ["c", "z"]


def test_scd2_with_dataframes_closes_changed_versions(pipeline: sl.Pipeline) -> None:
    scd2 = {"disposition": "merge", "strategy": "scd2"}
    ddl = "id bigint, v string"
    pipeline.run(
        frame(pipeline, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], ddl),
        table_name="s",
        write_disposition=scd2,
        primary_key="id",
    )
    pipeline.run(
        frame(pipeline, [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}], ddl),
        table_name="s",
        write_disposition=scd2,
        primary_key="id",
    )
    rows = delta_rows(pipeline, "s")
    current = sorted((r["id"], r["v"]) for r in rows if r["_sparkload_valid_to"] is None)
    closed = sorted((r["id"], r["v"]) for r in rows if r["_sparkload_valid_to"] is not None)
    assert current == [(1, "a"), (2, "B")]
    assert closed == [(2, "b")]


@pytest.mark.connect
@pytest.mark.jvm
def test_incremental_cursor_filters_a_dataframe_in_spark_across_runs(pipeline: sl.Pipeline) -> None:
    source_rows = [{"id": i, "updated": datetime.datetime(2024, 1, i, tzinfo=UTC)} for i in range(1, 4)]

    @sl.resource(primary_key="id")
    def events(
        updated: Any = sl.sources.incremental(
            "updated", initial_value=datetime.datetime(2024, 1, 2, tzinfo=UTC)
        ),
    ) -> Iterator[Any]:
        yield frame(pipeline, source_rows, "id bigint, updated timestamp")

    pipeline.run(events())
    assert sorted(r["id"] for r in delta_rows(pipeline, "events")) == [2, 3]
    # Rows on the stored cursor (id 3) are not loaded again; only the new row is.
    source_rows.append({"id": 4, "updated": datetime.datetime(2024, 1, 4, tzinfo=UTC)})
    pipeline.run(events())
    assert sorted(r["id"] for r in delta_rows(pipeline, "events")) == [2, 3, 4]
    pipeline.run(events())
    assert sorted(r["id"] for r in delta_rows(pipeline, "events")) == [2, 3, 4]


def test_incremental_end_value_and_min_on_a_dataframe(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def backfill(
        n: Any = sl.sources.incremental("n", initial_value=2, end_value=5),
    ) -> Iterator[Any]:
        yield pipeline.spark.range(0, 10).withColumnRenamed("id", "n")

    pipeline.run(backfill())
    assert sorted(r["n"] for r in delta_rows(pipeline, "backfill")) == [2, 3, 4]

    @sl.resource
    def downward(n: Any = sl.sources.incremental("n", initial_value=6, last_value_func=min)) -> Iterator[Any]:
        yield pipeline.spark.range(0, 10).withColumnRenamed("id", "n")

    pipeline.run(downward())
    assert sorted(r["n"] for r in delta_rows(pipeline, "downward")) == [0, 1, 2, 3, 4, 5, 6]


@pytest.mark.jvm
def test_incremental_without_primary_key_dedups_boundary_rows_by_content(pipeline: sl.Pipeline) -> None:
    source_rows = [{"n": 1, "v": "a"}, {"n": 2, "v": "b"}]

    @sl.resource
    def content(n: Any = sl.sources.incremental("n", initial_value=0)) -> Iterator[Any]:
        yield frame(pipeline, source_rows, "n bigint, v string")

    pipeline.run(content())
    # A new row on the stored cursor (2) is new content: loaded; the old one is not.
    source_rows.append({"n": 2, "v": "c"})
    pipeline.run(content())
    assert sorted((r["n"], r["v"]) for r in delta_rows(pipeline, "content")) == [(1, "a"), (2, "b"), (2, "c")]
    cursor = next(
        source["resources"]["content"]["incremental"]["n"]
        for source in pipeline.state["sources"].values()
        if "content" in source.get("resources", {})
    )
    assert cursor["last_value"] == 2
    assert len(cursor["unique_hashes"]) == 2  # both rows on the cursor, for the next run


def test_incremental_on_a_dataframe_refuses_missing_cursor_values_when_asked(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def gappy(
        n: Any = sl.sources.incremental("n", initial_value=0, on_cursor_value_missing="raise"),
    ) -> Iterator[Any]:
        yield frame(pipeline, [{"n": 1}, {"n": None}], "n bigint")

    with pytest.raises(PipelineStepFailed, match=r"1 row\(s\) have no value in cursor column 'n'"):
        pipeline.run(gappy())


def test_incremental_lag_rereads_a_window_of_a_dataframe(pipeline: sl.Pipeline) -> None:
    top = [3]

    @sl.resource(primary_key="n", write_disposition="merge")
    def lagged(n: Any = sl.sources.incremental("n", initial_value=0, lag=2)) -> Iterator[Any]:
        yield pipeline.spark.range(0, top[0] + 1).withColumnRenamed("id", "n")

    pipeline.run(lagged())
    top[0] = 5
    info = pipeline.run(lagged())
    assert info is not None
    assert sorted(r["n"] for r in delta_rows(pipeline, "lagged")) == [0, 1, 2, 3, 4, 5]


def test_large_dataframe_made_with_range_loads_every_row(pipeline: sl.Pipeline) -> None:
    df = pipeline.spark.range(200_000).selectExpr("id", "id % 7 as bucket", "struct(id as k) as nested")
    pipeline.run(df, table_name="big")
    table = deltalake.DeltaTable(f"{pipeline.dataset_uri}/big").to_pyarrow_table(columns=["id", "nested__k"])
    assert table.num_rows == 200_000
    assert table.column("id").to_pylist() == table.column("nested__k").to_pylist()


@pytest.fixture
def other_server_session() -> Iterator[Any]:
    """A session of a second Sail server (another Spark Connect endpoint)."""
    SparkConnectServer = pytest.importorskip("pysail.spark").SparkConnectServer

    server = SparkConnectServer(ip="127.0.0.1", port=0)
    server.start(background=True)
    _, port = server.listening_address
    session = session_for(f"sc://127.0.0.1:{port}")
    try:
        yield session
    finally:
        session.stop()  # before its server, so nothing calls the stopped server at exit
        server.stop()


@pytest.mark.connect
@pytest.mark.jvm
def test_dataframe_of_another_spark_server_is_refused_naming_the_resource(
    pipeline: sl.Pipeline, other_server_session: Any
) -> None:
    @sl.resource
    def foreign() -> Iterator[Any]:
        yield other_server_session.range(3)

    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(foreign())
    cause = failure.value.__cause__
    assert isinstance(cause, ResourceError)
    assert "resource 'foreign'" in str(cause) and "another Spark session" in str(cause)


@pytest.mark.jvm
def test_unsupported_column_type_is_refused_naming_resource_and_column(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def mapped() -> Iterator[Any]:
        yield pipeline.spark.range(2).selectExpr("id", "map('k', id) as props")

    with pytest.raises(PipelineStepFailed, match=r"resource 'mapped'.*column 'props'.*map"):
        pipeline.run(mapped())


@pytest.mark.connect
@pytest.mark.jvm
def test_an_interrupted_engine_write_leaves_no_part_normalize_would_read(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    files = TableFiles(tmp_path / "t")
    files.write_spark(pipeline.spark.range(3))
    broken = pipeline.spark.range(3).selectExpr("id", "cast(raise_error('boom') as string) as broken")
    with pytest.raises(Exception, match="boom"):
        files.write_spark(broken)
    finished = [p.name for p in (tmp_path / "t" / SPARK_DIR).iterdir() if p.name.startswith("part-")]
    assert finished == ["part-00000"] and files.rows == 3


def test_a_time_interval_resource_yielding_a_dataframe_loads_its_window_alone(pipeline: sl.Pipeline) -> None:
    """The window is applied in Spark to the DataFrame's rows as to any item's: rows outside
    it (a query that leaks) are dropped and counted, a rerun of the window replaces it."""
    utc = datetime.timezone.utc
    day = datetime.datetime(2024, 10, 25, tzinfo=utc)
    rows = [{"id": i, "ts": day + datetime.timedelta(hours=6 * i)} for i in range(-1, 9)]  # 2 days ± 6 h

    @sl.resource(name="events")
    def events(window: Any = sl.sources.intervals("ts", cron="@daily", start=day)) -> Iterator[Any]:  # noqa: B008
        yield frame(pipeline, rows, "id bigint, ts timestamp")  # every row, whatever the window

    today = day + datetime.timedelta(days=2)
    info = pipeline.run(events(), execution_time=today)
    assert sorted(row["id"] for row in delta_rows(pipeline, "events")) == list(range(8))
    assert any("outside the window" in note for note in info.notes), info.notes
    pipeline.run(
        events(), restate=["events"], start=day, end=day + datetime.timedelta(days=1), execution_time=today
    )
    assert sorted(row["id"] for row in delta_rows(pipeline, "events")) == list(range(8))


@pytest.mark.parametrize("disposition", ["append", "replace", pytest.param("merge", marks=pytest.mark.jvm)])
def test_an_empty_dataframe_loads_nothing_as_an_empty_list_does(
    pipeline: sl.Pipeline, disposition: str
) -> None:
    def numbers(start: int, end: int) -> Any:
        return pipeline.spark.range(start, end).selectExpr("id", "id * 2 as double_id")

    def run(items: Any, table: str) -> Any:
        return pipeline.run(items, table_name=table, write_disposition=disposition, primary_key="id")

    # A new table: nothing is created, from an empty frame as from an empty list.
    assert run(numbers(0, 0), "never").row_counts.get("never") == run([], "listed").row_counts.get("listed")
    assert not (Path(pipeline.dataset_uri) / "never").exists()
    # An existing table: a frame filtered to nothing changes it as an empty list does (an
    # empty replace empties it).
    for table in ("from_frame", "from_list"):
        run(numbers(0, 3), table)
    framed = run(numbers(0, 10).filter("id > 100"), "from_frame")
    listed = run([], "from_list")
    assert framed.row_counts == {
        k.replace("from_list", "from_frame"): v for k, v in listed.row_counts.items()
    }
    assert comparable_rows(delta_rows(pipeline, "from_frame")) == comparable_rows(
        delta_rows(pipeline, "from_list")
    )
    expected = [] if disposition == "replace" else [0, 1, 2]
    assert sorted(r["id"] for r in delta_rows(pipeline, "from_frame")) == expected
