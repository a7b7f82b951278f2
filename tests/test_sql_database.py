"""sparkload.sources.sql_database against real databases: SQLite files and a PostgreSQL
server started for the session (tests/postgres_server.py), loaded into Delta tables that
delta-rs reads back."""

from __future__ import annotations

import datetime
import decimal
import os
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from conftest import delta_rows, user_columns
from postgres_server import Unavailable, postgres_server

import sparkload as sl

sa = pytest.importorskip("sqlalchemy")
from sparkload.sources.sql_database import sql_database, sql_table  # noqa: E402

UTC = datetime.timezone.utc


# -- SQLite -------------------------------------------------------------------------------------
@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            """
            CREATE TABLE products (
                id INTEGER PRIMARY KEY, price NUMERIC(10, 2), name TEXT, weight REAL,
                added DATE, seen DATETIME, picture BLOB, active BOOLEAN
            );
            INSERT INTO products VALUES
                (1, 12.34, 'kettle', 1.25, '2024-01-02', '2024-01-02 03:04:05.123456', x'00ff', 1),
                (2, 0.5, 'cup', NULL, '2024-02-29', '2024-02-29 23:59:59', NULL, 0),
                (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
            CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT NOT NULL, notes TEXT);
            INSERT INTO customers VALUES (1, 'a@example.com', 'secret'), (2, 'b@example.com', NULL);
            """
        )
    return f"sqlite:///{path}"


def test_sqlite_tables_load_with_their_types(pipeline: sl.Pipeline, sqlite_url: str) -> None:
    source = sql_database(sqlite_url)
    assert sorted(source.resources) == ["customers", "products"]
    products = source.resources["products"]
    assert products.hints.primary_key == ("id",)
    assert products.hints.columns["price"] == {"data_type": "decimal", "precision": 10, "scale": 2}
    assert products.hints.columns["seen"] == {"data_type": "timestamp", "timezone": False}

    info = pipeline.run(source)

    assert info.row_counts == {"products": 3, "customers": 2}
    rows = user_columns(delta_rows(pipeline, "products", order_by="id"))
    assert rows == [
        {
            "id": 1,
            "price": decimal.Decimal("12.34"),
            "name": "kettle",
            "weight": 1.25,
            "added": datetime.date(2024, 1, 2),
            "seen": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
            "picture": b"\x00\xff",
            "active": True,
        },
        {
            "id": 2,
            "price": decimal.Decimal("0.50"),
            "name": "cup",
            "weight": None,
            "added": datetime.date(2024, 2, 29),
            "seen": datetime.datetime(2024, 2, 29, 23, 59, 59),
            "picture": None,
            "active": False,
        },
        dict.fromkeys(["id", "price", "name", "weight", "added", "seen", "picture", "active"]) | {"id": 3},
    ]
    schema = {
        f.name: f.type for f in deltalake.DeltaTable(f"{pipeline.dataset_uri}/products").schema().fields
    }
    assert str(schema["price"]) == 'PrimitiveType("decimal(10,2)")'
    assert str(schema["seen"]) == 'PrimitiveType("timestamp_ntz")'


def test_reflected_primary_key_merges_on_second_run(pipeline: sl.Pipeline, sqlite_url: str) -> None:
    def products() -> Any:
        resource = sql_table(sqlite_url, table="products")
        resource.apply_hints(write_disposition="merge")
        return resource

    pipeline.run(products())
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE products SET name = 'teapot', price = 20.00 WHERE id = 1")
        db.execute("INSERT INTO products (id, name) VALUES (4, 'spoon')")
    pipeline.run(products())

    rows = user_columns(delta_rows(pipeline, "products", order_by="id"))
    assert [(r["id"], r["name"], r["price"]) for r in rows] == [
        (1, "teapot", decimal.Decimal("20.00")),
        (2, "cup", decimal.Decimal("0.50")),
        (3, None, None),
        (4, "spoon", None),
    ]


def test_table_adapter_removes_a_column(pipeline: sl.Pipeline, sqlite_url: str) -> None:
    seen: list[str] = []

    def drop_notes(table: Any) -> None:
        seen.append(table.name)
        if table.name == "customers":
            table._columns.remove(table.c.notes)

    pipeline.run(sql_database(sqlite_url, table_names=["customers"], table_adapter_callback=drop_notes))

    assert seen == ["customers"]
    rows = user_columns(delta_rows(pipeline, "customers", order_by="id"))
    assert rows == [{"id": 1, "email": "a@example.com"}, {"id": 2, "email": "b@example.com"}]


def test_query_adapter_filters_rows(pipeline: sl.Pipeline, sqlite_url: str) -> None:
    def only_named(query: Any, table: Any) -> Any:
        return query.where(table.c.name.is_not(None)) if table.name == "products" else query

    info = pipeline.run(sql_table(sqlite_url, table="products", query_adapter_callback=only_named))

    assert info.row_counts == {"products": 2}
    assert [r["id"] for r in delta_rows(pipeline, "products", order_by="id")] == [1, 2]


def test_sqlalchemy_backend_yields_dicts(sqlite_url: str) -> None:
    items = list(sql_table(sqlite_url, table="customers", backend="sqlalchemy"))
    assert items == [
        {"id": 1, "email": "a@example.com", "notes": "secret"},
        {"id": 2, "email": "b@example.com", "notes": None},
    ]


def test_engine_and_url_credentials(sqlite_url: str) -> None:
    engine = sa.create_engine(sqlite_url)
    for credentials in (engine, sa.engine.make_url(sqlite_url)):
        (chunk,) = list(sql_table(credentials, table="customers"))
        assert isinstance(chunk, pa.Table) and chunk.num_rows == 2


@pytest.mark.parametrize("backend", ["pandas", "connectorx", "spark"])
def test_other_backends_are_refused_by_name(sqlite_url: str, backend: str) -> None:
    with pytest.raises(ValueError, match=f"backend='{backend}'"):
        sql_database(sqlite_url, backend=backend)


def test_unmapped_column_type_names_table_and_column(sqlite_url: str) -> None:
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("CREATE TABLE odd (id INTEGER PRIMARY KEY, anything)")
    with pytest.raises(sl.exceptions.ResourceError, match="table 'odd', column 'anything'"):
        sql_table(sqlite_url, table="odd")
    # minimal reflection gives no hints and leaves the type to the data
    resource = sql_table(sqlite_url, table="odd", reflection_level="minimal")
    assert resource.hints.columns == {}


# -- PostgreSQL ---------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    try:
        with postgres_server() as url:
            yield url
    except Unavailable as exc:
        # CI installs what the suite needs: a server missing there is a failure, not a skip.
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is needed on CI: {exc}")
        pytest.skip(str(exc))


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Any]:
    """An engine on the session's server, with this test's tables dropped afterwards."""
    engine = sa.create_engine(postgres_url)
    with engine.begin() as c:
        c.execute(sa.text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    yield engine
    engine.dispose()


def test_postgres_types_round_trip(pipeline: sl.Pipeline, pg: Any) -> None:
    row_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    with pg.begin() as c:
        c.execute(
            sa.text(
                """
                CREATE TABLE everything (
                    id bigint PRIMARY KEY, amount numeric(12, 4), at timestamptz, local timestamp,
                    day date, ref uuid, doc jsonb, counts integer[], tags text[], raw bytea,
                    note text, flag boolean, ratio double precision, clock time
                );
                SET TIME ZONE 'Europe/Berlin';
                INSERT INTO everything VALUES
                  (1, 1234.5000, '2024-03-31 02:30:00+02', '2024-03-31 02:30:00', '2024-03-31',
                   :ref, '{"a": [1, 2.5, null], "b": {"c": "x"}}', '{1,2,3}', '{"x","y z"}',
                   '\\x00ff10', 'héllo', true, 0.1, '13:45:30.5'),
                  (2, -0.0001, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                """
            ),
            {"ref": row_id},
        )

    info = pipeline.run(sql_database(pg, table_names=["everything"]))

    assert info.row_counts == {"everything": 2}
    first, second = user_columns(delta_rows(pipeline, "everything", order_by="id"))
    assert first == {
        "id": 1,
        "amount": decimal.Decimal("1234.5000"),
        "at": datetime.datetime(2024, 3, 31, 0, 30, tzinfo=UTC),
        "local": datetime.datetime(2024, 3, 31, 2, 30),
        "day": datetime.date(2024, 3, 31),
        "ref": str(row_id),
        "doc": '{"a":[1,2.5,null],"b":{"c":"x"}}',
        "counts": "[1,2,3]",
        "tags": '["x","y z"]',
        "raw": b"\x00\xff\x10",
        "note": "héllo",
        "flag": True,
        "ratio": 0.1,
        "clock": "13:45:30.500000",
    }
    assert first["at"].utcoffset() == datetime.timedelta(0)
    assert str(first["amount"]) == "1234.5000"  # the scale is kept
    assert second["amount"] == decimal.Decimal("-0.0001")
    assert all(second[k] is None for k in second if k not in ("id", "amount"))
    columns = pipeline.default_schema.get_table_columns("everything")
    assert {name: columns[name]["data_type"] for name in ("doc", "counts", "tags", "clock", "at")} == {
        "doc": "json",
        "counts": "json",
        "tags": "json",
        "clock": "time",
        "at": "timestamp",
    }


def test_postgres_incremental_reads_only_changed_rows(pipeline: sl.Pipeline, pg: Any) -> None:
    start = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    with pg.begin() as c:
        c.execute(sa.text("CREATE TABLE events (id int PRIMARY KEY, v text, updated_at timestamptz)"))
        c.execute(
            sa.text("INSERT INTO events VALUES (:id, :v, :at)"),
            [{"id": i, "v": f"v{i}", "at": start + datetime.timedelta(hours=i)} for i in range(10)],
        )
    queries: list[Any] = []

    def record(query: Any, table: Any) -> Any:
        queries.append(query)
        return query

    def events() -> Any:
        return sql_table(
            pg,
            table="events",
            incremental=sl.sources.incremental("updated_at", initial_value=start),
            query_adapter_callback=record,
        )

    assert pipeline.run(events()).row_counts == {"events": 10}
    with pg.begin() as c:
        later = start + datetime.timedelta(days=1)
        c.execute(
            sa.text("UPDATE events SET v = 'changed', updated_at = :at WHERE id IN (2, 5)"), {"at": later}
        )
    second = pipeline.run(events())

    assert second.row_counts == {"events": 2}
    # The query itself filtered: a bound parameter at the last cursor value, in cursor order;
    # the database returned the two changed rows and the one at the previous run's boundary.
    sql = str(queries[-1].compile(pg))
    assert "WHERE events.updated_at >= %(updated_at_1)s" in sql and "ORDER BY events.updated_at" in sql
    compiled = queries[-1].compile(pg).params
    assert compiled["updated_at_1"] == start + datetime.timedelta(hours=9)
    with pg.connect() as c:
        assert sorted(r.id for r in c.execute(queries[-1])) == [2, 5, 9]
    rows = user_columns(delta_rows(pipeline, "events", order_by="id"))
    assert len(rows) == 12 and sum(r["v"] == "changed" for r in rows) == 2


def test_postgres_large_table_is_read_in_chunks(pipeline: sl.Pipeline, pg: Any) -> None:
    with pg.begin() as c:
        c.execute(
            sa.text("CREATE TABLE big AS SELECT g AS id, md5(g::text) AS h FROM generate_series(1, 200000) g")
        )
    sizes: list[int] = []

    def count(chunk: pa.Table) -> pa.Table:
        sizes.append(chunk.num_rows)
        return chunk

    cursors: list[Any] = []
    sa.event.listen(pg, "before_cursor_execute", lambda _c, cursor, *_: cursors.append(cursor))
    resource = sql_table(pg, table="big", chunk_size=10_000).add_map(count)
    info = pipeline.run(resource)

    assert sizes == [10_000] * 20
    # A server-side (named) cursor read the rows: psycopg2 names only those.
    assert cursors[-1].name is not None
    assert info.row_counts == {"big": 200_000}
    table = deltalake.DeltaTable(f"{pipeline.dataset_uri}/big").to_pyarrow_table(columns=["id"])
    assert table.num_rows == 200_000 and pa.compute.max(table["id"]).as_py() == 200_000


def test_deferred_reflection_gives_hints_when_the_table_is_read(
    pipeline: sl.Pipeline, sqlite_url: str
) -> None:
    source = sql_database(sqlite_url, table_names=["products"], defer_table_reflect=True)
    assert source.resources["products"].hints.columns == {}

    pipeline.run(source)

    columns = pipeline.default_schema.get_table_columns("products")
    assert columns["price"]["data_type"] == "decimal" and columns["price"]["scale"] == 2
    assert delta_rows(pipeline, "products", order_by="id")[1]["price"] == decimal.Decimal("0.50")


def test_credentials_from_config(
    pipeline: sl.Pipeline, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCES__SQL_DATABASE__CREDENTIALS", sqlite_url)
    assert sorted(sql_database().resources) == ["customers", "products"]
    assert pipeline.run(sql_table(table="customers")).row_counts == {"customers": 2}


def test_postgres_sqlalchemy_backend_keeps_json_whole(pipeline: sl.Pipeline, pg: Any) -> None:
    with pg.begin() as c:
        c.execute(
            sa.text("CREATE TABLE docs (id int PRIMARY KEY, doc jsonb, tags text[], amount numeric(6,2))")
        )
        c.execute(sa.text("""INSERT INTO docs VALUES (1, '{"k": {"n": 1}}', '{a,b}', 1.50)"""))

    items = list(sql_table(pg, table="docs", backend="sqlalchemy"))
    assert items == [{"id": 1, "doc": {"k": {"n": 1}}, "tags": ["a", "b"], "amount": decimal.Decimal("1.50")}]
    pipeline.run(sql_table(pg, table="docs", backend="sqlalchemy"))

    (row,) = user_columns(delta_rows(pipeline, "docs"))
    assert row == {"id": 1, "doc": '{"k":{"n":1}}', "tags": '["a","b"]', "amount": decimal.Decimal("1.50")}


def test_without_sqlalchemy_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r'pip install "sparkload\[sql_database\]"'):
        sql_table("sqlite://", table="t")
    with pytest.raises(ImportError, match="sql_database"):
        sql_database("sqlite://")


def test_type_adapter_gives_an_unmapped_column_a_type(pipeline: sl.Pipeline, sqlite_url: str) -> None:
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("CREATE TABLE odd (id INTEGER PRIMARY KEY, anything)")
        db.execute("INSERT INTO odd VALUES (1, 'x')")

    def as_text(sql_type: Any) -> Any:
        return sa.Text() if isinstance(sql_type, sa.types.NullType) else None

    resource = sql_table(sqlite_url, table="odd", type_adapter_callback=as_text)
    assert resource.hints.columns["anything"] == {"data_type": "text"}
    pipeline.run(resource)
    assert user_columns(delta_rows(pipeline, "odd")) == [{"id": 1, "anything": "x"}]


def test_the_sqlite_example_runs_offline_twice(tmp_path: Path) -> None:
    """examples/sql_database_sqlite.py, copied (it writes beside itself): the first run loads
    both tables, the second reads only the order it changed."""
    import shutil
    import subprocess

    script = tmp_path / "sql_database_sqlite.py"
    shutil.copy(Path(__file__).parents[1] / "examples" / "sql_database_sqlite.py", script)
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    [orders] = [path for path in (tmp_path / "_lake").glob("*/orders") if (path / "_delta_log").is_dir()]
    rows = {
        row["id"]: row["total"] for row in deltalake.DeltaTable(str(orders)).to_pyarrow_table().to_pylist()
    }
    assert rows == {1: decimal.Decimal("21.99"), 2: decimal.Decimal("5.00")}
