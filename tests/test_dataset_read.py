"""``pipeline.dataset()``: dlt's read API over the tables a pipeline loaded.

Every table is loaded by a real run and read back through the dataset; delta-rs
(``delta_rows``) reads the same table independently. Where a test says what the engine
sent, it watches the one place the reader collects rows (``_collect_arrow``) or streams
them (``_arrow_stream``)."""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from conftest import delta_rows

import sparkload as sl
from sparkload.common.literals import string_literal
from sparkload.common.naming import normalize_dataset_name
from sparkload.common.sql import quote
from sparkload.pipeline import dataset_reader

UTC = datetime.timezone.utc
_schemas = itertools.count()


def users(count: int = 10) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "userName": f"user {i}",
            "joined": datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(hours=i),
            "tags": [f"t{i}", "all"],
        }
        for i in range(count)
    ]


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: row["id"])


@pytest.fixture
def loaded(pipeline: sl.Pipeline) -> sl.Pipeline:
    pipeline.run(users(), table_name="users")
    return pipeline


class Collected:
    """What the reader fetched from the engine in one piece: the tables ``_collect_arrow``
    returned."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tables: list[pa.Table] = []
        collect = dataset_reader._collect_arrow

        def watched(frame: Any) -> pa.Table:
            table = collect(frame)
            self.tables.append(table)
            return table

        monkeypatch.setattr(dataset_reader, "_collect_arrow", watched)


@pytest.fixture
def collected(monkeypatch: pytest.MonkeyPatch) -> Collected:
    return Collected(monkeypatch)


def test_a_table_is_reached_three_ways_and_reads_the_committed_rows(loaded: sl.Pipeline) -> None:
    dataset = loaded.dataset()
    expected = by_id(delta_rows(loaded, "users"))
    assert len(expected) == 10
    for relation in (dataset.users, dataset["users"], dataset.table("users")):
        assert by_id(relation.arrow().to_pylist()) == expected
    # A nested table too, by its path.
    assert sorted(dataset.users__tags.arrow().to_pylist(), key=str) == sorted(
        delta_rows(loaded, "users__tags"), key=str
    )


def test_the_dataset_lists_loaded_tables_then_sparkloads_own(loaded: sl.Pipeline) -> None:
    assert loaded.dataset().tables == ["users", "users__tags", "_sparkload_pipeline_state"]


def test_fetch_methods_give_the_tables_rows(loaded: sl.Pipeline) -> None:
    relation = loaded.dataset().users
    expected = by_id(delta_rows(loaded, "users"))
    columns = relation.columns
    assert columns == list(expected[0])
    as_tuples = [tuple(row[c] for c in columns) for row in expected]

    assert sorted(relation.fetchall()) == as_tuples
    assert relation.fetchone() in as_tuples
    many = relation.fetchmany(3)
    assert len(many) == 3 and set(many) <= set(as_tuples)
    frame = relation.df()
    assert sorted(frame["id"].tolist()) == list(range(10))
    assert str(frame["joined"].dtype) == "datetime64[us, UTC]"
    assert by_id(frame.to_dict("records"))[3]["joined"] == expected[3]["joined"]
    assert relation.arrow().schema.field("joined").type == pa.timestamp("us", tz="UTC")


def test_limit_select_and_head_are_evaluated_by_the_engine(loaded: sl.Pipeline, collected: Collected) -> None:
    relation = loaded.dataset().users
    assert relation.select("id", "user_name").limit(3).fetchall()
    assert len(relation.head().fetchall()) == 5
    assert len(relation.fetchmany(2)) == 2
    assert relation.arrow(chunk_size=4).num_rows == 4
    # What the engine sent: only the rows (and columns) asked for, never the whole table.
    assert [(t.num_rows, t.column_names) for t in collected.tables] == [
        (3, ["id", "user_name"]),
        (5, relation.columns),
        (2, relation.columns),
        (4, relation.columns),
    ]


def test_spark_gives_the_lazy_dataframe(loaded: sl.Pipeline, collected: Collected) -> None:
    frame = loaded.dataset().users.select("id").limit(4).spark()
    assert collected.tables == []  # nothing was fetched to make it
    assert type(frame).__name__ == "DataFrame" and frame.columns == ["id"]
    ids = [row["id"] for row in frame.collect()]
    assert len(ids) == 4 and set(ids) <= {row["id"] for row in delta_rows(loaded, "users")}


def test_iter_arrow_and_iter_df_stream_chunks(loaded: sl.Pipeline, collected: Collected) -> None:
    relation = loaded.dataset().users
    chunks = list(relation.iter_arrow(chunk_size=4))
    assert [chunk.num_rows for chunk in chunks] == [4, 4, 2]
    assert by_id(pa.concat_tables(chunks).to_pylist()) == by_id(delta_rows(loaded, "users"))
    assert [len(frame) for frame in relation.iter_df(chunk_size=3)] == [3, 3, 3, 1]
    assert [len(rows) for rows in relation.iter_fetch(chunk_size=6)] == [6, 4]
    assert collected.tables == []  # streamed, never collected whole


def test_iter_arrow_hands_out_a_chunk_before_the_engine_has_sent_everything(
    loaded: sl.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks are cut from the engine's batches as they arrive: the first chunk is out
    while later batches are still unread."""
    batches_read: list[int] = []
    stream = dataset_reader._arrow_stream

    def counted(frame: Any) -> Iterator[pa.Table]:
        for table in stream(frame):
            for batch in table.to_batches(max_chunksize=2):
                batches_read.append(batch.num_rows)
                yield pa.Table.from_batches([batch])

    monkeypatch.setattr(dataset_reader, "_arrow_stream", counted)
    chunks = loaded.dataset().users.iter_arrow(chunk_size=3)
    assert next(chunks).num_rows == 3
    assert sum(batches_read) < 10


def test_row_counts_count_every_loaded_table(loaded: sl.Pipeline) -> None:
    loaded.run(users(4), table_name="users")  # appended: 14 users, 28 tags
    dataset = loaded.dataset()
    expected = {name: len(delta_rows(loaded, name)) for name in ("users", "users__tags")}
    assert expected == {"users": 14, "users__tags": 28}
    counts = dataset.row_counts()
    assert counts.columns == ["table_name", "row_count"]
    assert counts.fetchall() == list(expected.items())
    with_own = dict(dataset.row_counts(dlt_tables=True).fetchall())
    assert with_own["_sparkload_pipeline_state"] == len(delta_rows(loaded, "_sparkload_pipeline_state"))
    assert dataset.row_counts(table_names=["users__tags"]).fetchall() == [("users__tags", 28)]
    second_load = max(row["_sparkload_load_id"] for row in delta_rows(loaded, "users"))
    assert dataset.row_counts(load_id=second_load).fetchall() == [("users", 4), ("users__tags", 8)]


def test_a_missing_table_names_itself_and_the_tables_there(loaded: sl.Pipeline) -> None:
    dataset = loaded.dataset()
    with pytest.raises(sl.TableNotFoundError) as error:
        dataset.table("orders")
    assert error.value.table == "orders"
    assert error.value.tables == ("users", "users__tags", "_sparkload_pipeline_state")
    assert "orders" in str(error.value) and "users__tags" in str(error.value)
    # Caught as dlt's errors are: ValueError from table(), KeyError from [], AttributeError
    # from an attribute (so hasattr answers).
    with pytest.raises(ValueError):
        dataset.table("orders")
    with pytest.raises(KeyError):
        dataset["orders"]
    with pytest.raises(AttributeError):
        dataset.orders  # noqa: B018
    assert not hasattr(dataset, "orders") and hasattr(dataset, "users")


def test_names_are_accepted_as_the_load_normalized_them(pipeline: sl.Pipeline) -> None:
    pipeline.run(users(3), table_name="MyUsers")
    dataset = pipeline.dataset()
    assert dataset.tables[0] == "my_users"
    rows = dataset.table("MyUsers").select("userName", "id").fetchall()
    assert sorted(rows) == sorted((r["user_name"], r["id"]) for r in delta_rows(pipeline, "my_users"))
    assert dataset["myUsers"].columns == dataset.my_users.columns


def test_a_relation_reads_the_newest_commit(loaded: sl.Pipeline) -> None:
    relation = loaded.dataset().users
    loaded.run([{"id": 99, "userName": "new"}], table_name="users", write_disposition="replace")
    assert relation.select("id").fetchall() == [(99,)] == [(r["id"],) for r in delta_rows(loaded, "users")]


def test_a_sql_query_runs_on_the_engine_over_the_datasets_tables(loaded: sl.Pipeline) -> None:
    dataset = loaded.dataset()
    query = dataset(
        "SELECT u.id, count(*) AS tags FROM users AS u JOIN users__tags AS t "
        "ON t._sparkload_parent_id = u._sparkload_id GROUP BY u.id ORDER BY u.id"
    )
    tags = delta_rows(loaded, "users__tags")
    expected = [
        (user["id"], sum(tag["_sparkload_parent_id"] == user["_sparkload_id"] for tag in tags))
        for user in by_id(delta_rows(loaded, "users"))
    ]
    assert query.columns == ["id", "tags"]
    assert query.fetchall() == expected
    assert dataset("SELECT count(*) FROM users").fetchscalar() == 10
    assert dataset.query("SELECT max(id) AS m FROM users").limit(1).fetchone() == (9,)
    # The names were the query's own: the session has no table or view named so.
    assert not loaded.spark.catalog.tableExists("users")


def test_an_empty_dataset_has_no_tables_and_no_counts(pipeline: sl.Pipeline) -> None:
    dataset = pipeline.dataset()
    assert dataset.tables == []
    assert dataset.row_counts().fetchall() == []
    with pytest.raises(sl.TableNotFoundError):
        dataset.users  # noqa: B018


@pytest.fixture
def catalog_pipeline(tmp_path: Path) -> sl.Pipeline:
    """A pipeline into a fresh schema of the engine's catalog, made with a location in this
    test's folder (as ``tests/test_catalog_tables.py`` makes its schemas)."""
    unused = sl.destinations.delta(tmp_path / "unused")
    probe = sl.pipeline("probe", destination=unused, pipelines_dir=tmp_path)
    spark = probe.spark
    catalog = spark.catalog.currentCatalog()
    schema = normalize_dataset_name(f"read_{next(_schemas)}_{tmp_path.name[-12:]}")
    location = tmp_path / "warehouse" / schema
    spark.sql(f"CREATE SCHEMA {quote(catalog)}.{quote(schema)} LOCATION {string_literal(str(location))}")
    return sl.pipeline(
        "crm",
        destination=sl.destinations.delta(catalog=catalog),
        dataset_name=schema,
        pipelines_dir=tmp_path / "pipelines",
    )


def test_a_catalog_table_is_read_by_name(catalog_pipeline: sl.Pipeline) -> None:
    catalog_pipeline.run(users(6), table_name="users")
    dataset = catalog_pipeline.dataset()
    assert dataset.tables == ["users", "users__tags", "_sparkload_pipeline_state"]
    location = catalog_pipeline.destination_dataset.table("users").location()
    expected = by_id(deltalake.DeltaTable(location).to_pyarrow_table().to_pylist())
    assert by_id(dataset.users.arrow().to_pylist()) == expected
    assert dict(dataset.row_counts().fetchall()) == {"users": 6, "users__tags": 12}
    assert dataset("SELECT count(*) FROM users__tags").fetchscalar() == 12
