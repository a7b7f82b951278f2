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
from types import SimpleNamespace
from typing import Any

import deltalake
import engines
import pyarrow as pa
import pytest
from conftest import delta_rows, user_columns
from postgres_server import Unavailable, postgres_server

import sparkload as sl

sa = pytest.importorskip("sqlalchemy")
from sparkload.exceptions import PipelineStepFailed, ResourceError  # noqa: E402
from sparkload.sources.sql_database import sql_database, sql_table  # noqa: E402
from sparkload.sources.sql_database.jdbc import jdbc_options, jdbc_url  # noqa: E402

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


@pytest.mark.parametrize("backend", ["pandas", "connectorx"])
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
    # The query itself filtered: a bound parameter at the last cursor value (NULL cursors pass,
    # for on_cursor_value_missing="raise" to see them; no ORDER BY without a row_order, as dlt);
    # the database returned the two changed rows and the one at the previous run's boundary.
    sql = " ".join(str(queries[-1].compile(pg)).split())
    assert "WHERE events.updated_at >= %(updated_at_1)s OR events.updated_at IS NULL" in sql
    assert "ORDER BY" not in sql
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


# -- backend="spark": Spark's JDBC source -------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg2://u:p%40ss@db.example:5433/shop", "jdbc:postgresql://db.example:5433/shop"),
        ("postgresql://u@db/shop", "jdbc:postgresql://db/shop"),
        ("mysql+pymysql://u:p@db:3306/shop", "jdbc:mysql://db:3306/shop"),
        ("mssql+pyodbc://u:p@db:1433/shop", "jdbc:sqlserver://db:1433;databaseName=shop"),
    ],
)
def test_jdbc_url_from_the_sqlalchemy_url_has_no_credentials(url: str, expected: str) -> None:
    assert jdbc_url(sa.engine.make_url(url)) == expected
    table = sa.Table("orders", sa.MetaData(), sa.Column("id", sa.Integer), schema="sales")
    parsed = sa.engine.make_url(url)
    # The URL and dialect alone (the DBAPI drivers of MySQL and SQL Server are not installed).
    engine = SimpleNamespace(url=parsed, dialect=parsed.get_dialect()())
    options = jdbc_options(engine, table, 500, {})  # type: ignore[arg-type]
    assert options["url"] == expected and "@" not in options["url"]
    assert options["user"] == "u" and options["fetchsize"] == "500"
    assert options["driver"].startswith(("org.postgresql.", "com.mysql.", "com.microsoft.sqlserver."))
    assert options.get("password") == parsed.password
    assert options["dbtable"] in ('"sales"."orders"', "`sales`.`orders`", "[sales].[orders]")


def test_backend_spark_options_and_refusals(sqlite_url: str) -> None:
    with pytest.raises(ValueError, match=r"dialect 'sqlite'.*backend='pyarrow'"):
        jdbc_url(sa.engine.make_url(sqlite_url))
    table = sa.Table("orders", sa.MetaData(), sa.Column("id", sa.Integer))
    given = {"jdbc_url": "jdbc:sqlite:/tmp/x.db", "driver": "org.sqlite.JDBC", "user": "other"}
    options = jdbc_options(sa.create_engine(sqlite_url), table, 10, given)
    assert options == {
        "url": "jdbc:sqlite:/tmp/x.db",
        "driver": "org.sqlite.JDBC",
        "user": "other",
        "dbtable": '"orders"',
        "fetchsize": "10",
    }
    with pytest.raises(ValueError, match="backend_kwargs are not supported with backend='pyarrow'"):
        sql_table(sqlite_url, table="customers", backend_kwargs={"driver": "x"})
    with pytest.raises(ValueError, match="backend_kwargs.*dbtable"):
        sql_table(sqlite_url, table="customers", backend="spark", backend_kwargs={"dbtable": "x"})
    with pytest.raises(ValueError, match="builds no SQL query.*table_adapter_callback"):
        sql_table(sqlite_url, table="customers", backend="spark", query_adapter_callback=lambda q, t: q)
    with pytest.raises(ValueError, match="builds no SQL query"):
        sql_database(sqlite_url, backend="spark", query_adapter_callback=lambda q, t: q)
    # Spark's JDBC mapping types the columns: reflection gives the primary key alone.
    resource = sql_table(sqlite_url, table="products", backend="spark")
    assert resource.hints.columns == {} and resource.hints.primary_key == ("id",)


@pytest.mark.jvm
def test_backend_spark_without_a_jdbc_source_or_driver_fails_naming_table_and_fix(
    pipeline: sl.Pipeline, pg: Any
) -> None:
    """The embedded Sail engine has no JDBC source; the JVM session sparkload starts has no
    PostgreSQL driver: either way extract fails before anything is written."""
    with pg.begin() as c:
        c.execute(sa.text("CREATE TABLE events (id int PRIMARY KEY, v text)"))
        c.execute(sa.text("INSERT INTO events VALUES (1, 'a')"))

    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(sql_table(pg, table="events", backend="spark"))

    assert failure.value.step == "extract"
    cause = failure.value.__cause__
    assert isinstance(cause, ResourceError) and cause.__cause__ is not None  # the engine's error
    message = str(failure.value)
    assert "table 'events'" in message and "backend='spark'" in message
    assert "spark.jars.packages=org.postgresql:postgresql:<version>" in message
    assert "backend='pyarrow'" in message
    assert "password" not in message
    assert not (Path(pipeline.dataset_uri) / "events").exists()


_JVM_CHILD = r"""
import datetime, json, sys
import delta
from pyspark.sql import SparkSession
import sparkload as sl
from sparkload.sources.sql_database import sql_table

url, lake, pipelines = sys.argv[1:4]
builder = (
    SparkSession.builder.master("local[1]")
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
)
spark = delta.configure_spark_with_delta_pip(
    builder, extra_packages=["org.postgresql:postgresql:42.7.4"]
).getOrCreate()
pipeline = sl.pipeline(
    "jdbc_child", destination=sl.destinations.delta(lake), pipelines_dir=pipelines, spark=spark
)
start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)

def accounts():
    resource = sql_table(
        url, table="accounts", backend="spark", chunk_size=1000,
        incremental=sl.sources.incremental("updated_at", initial_value=start),
    )
    resource.apply_hints(write_disposition="merge")
    return resource

resource = accounts()
out = {"primary_key": list(resource.hints.primary_key), "hint_columns": resource.hints.columns}
out["first"] = pipeline.run(resource).row_counts
import sqlalchemy as sa
engine = sa.create_engine(url)
with engine.begin() as c:
    c.execute(sa.text(
        "UPDATE accounts SET note = 'changed', balance = balance + 1, "
        "updated_at = '2024-02-01 00:00:00+00' WHERE id IN (3, 7)"
    ))
out["second"] = pipeline.run(accounts()).row_counts
columns = pipeline.default_schema.get_table_columns("accounts")
out["types"] = {name: {k: v for k, v in c.items() if k in ("data_type", "precision", "scale")}
                for name, c in columns.items() if not name.startswith("_")}
print("RESULT " + json.dumps(out, default=str))
spark.stop()
"""


@pytest.mark.jvm
@pytest.mark.skipif(engines.current() != "spark", reason="needs the JVM engine (--engine=spark)")
def test_backend_spark_reads_postgres_through_jvm_jdbc_incrementally_and_merges(
    pg: Any, postgres_url: str, tmp_path: Path
) -> None:
    """A child process with its own classic session that has PostgreSQL's JDBC driver (the
    JVM session sparkload starts has none): the table loads through Spark's JDBC source,
    a second run with an incremental on updated_at loads the 2 changed rows alone, and a
    merge on the reflected primary key updates them."""
    import json
    import subprocess

    with pg.begin() as c:
        c.execute(
            sa.text(
                """
                CREATE TABLE accounts (
                    id bigint PRIMARY KEY, balance numeric(12, 2), updated_at timestamptz,
                    note text, ref uuid
                );
                INSERT INTO accounts
                SELECT g, g * 10.25, TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * INTERVAL '1 hour',
                       'n' || g, md5(g::text)::uuid
                FROM generate_series(1, 10) g;
                """
            )
        )
    script = tmp_path / "child.py"
    script.write_text(_JVM_CHILD)
    lake = tmp_path / "jdbc_lake"
    done = subprocess.run(
        [sys.executable, str(script), postgres_url, str(lake), str(tmp_path / "child_pipelines")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    [line] = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))

    assert result["primary_key"] == ["id"] and result["hint_columns"] == {}
    assert result["first"] == {"accounts": 10}
    assert result["second"] == {"accounts": 2}
    assert result["types"] == {
        "id": {"data_type": "bigint"},
        "balance": {"data_type": "decimal", "precision": 12, "scale": 2},
        "updated_at": {"data_type": "timestamp"},
        "note": {"data_type": "text"},
        "ref": {"data_type": "text"},
    }
    [table] = [p for p in lake.glob("*/accounts") if (p / "_delta_log").is_dir()]
    rows = sorted(deltalake.DeltaTable(str(table)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert len(rows) == 10  # merged on the reflected primary key: no duplicates
    changed = {r["id"]: r for r in rows if r["note"] == "changed"}
    assert sorted(changed) == [3, 7]
    assert changed[3]["balance"] == decimal.Decimal("31.75")
    assert changed[3]["updated_at"] == datetime.datetime(2024, 2, 1, tzinfo=UTC)
    assert rows[0]["balance"] == decimal.Decimal("10.25") and rows[0]["note"] == "n1"
    assert rows[0]["ref"] == str(uuid.UUID("c4ca4238-a0b9-2382-0dcc-509a6f75849b"))
    schema = {f.name: str(f.type) for f in deltalake.DeltaTable(str(table)).schema().fields}
    assert schema["balance"] == 'PrimitiveType("decimal(12,2)")'
    assert schema["updated_at"] == 'PrimitiveType("timestamp")'


# -- exact numerics -----------------------------------------------------------------------------
def _sqlite_table(sqlite_url: str, script: str) -> None:
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.executescript(script)


@pytest.mark.parametrize("backend", ["pyarrow", "sqlalchemy"])
@pytest.mark.parametrize("stored", ["1.005", "2.675", "0.125"])
def test_sqlite_numeric_beyond_its_scale_fails_naming_table_and_column(
    pipeline: sl.Pipeline, sqlite_url: str, backend: str, stored: str
) -> None:
    """SQLite keeps these as REAL; SQLAlchemy's own float-to-Decimal step rounded them to two
    places (1.00, 2.67, 0.12) without a word. A value the column's scale cannot hold fails."""
    _sqlite_table(
        sqlite_url,
        f"CREATE TABLE amounts (id INTEGER PRIMARY KEY, v NUMERIC(10, 2)); "
        f"INSERT INTO amounts VALUES (1, 12.34), (2, {stored});",
    )
    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(sql_table(sqlite_url, table="amounts", backend=backend))

    message = str(failure.value)
    assert "table 'amounts', column 'v'" in message
    assert stored in message and "decimal(10,2)" in message
    assert not (Path(pipeline.dataset_uri) / "amounts").exists()


@pytest.mark.parametrize("backend", ["pyarrow", "sqlalchemy"])
def test_sqlite_numerics_load_their_exact_values(
    pipeline: sl.Pipeline, sqlite_url: str, backend: str
) -> None:
    """REAL, INTEGER and TEXT storage all load exactly: a REAL as the shortest decimal that reads
    back as it (what SQLite prints), an INTEGER of 19 digits without passing through a float."""
    _sqlite_table(
        sqlite_url,
        """
        CREATE TABLE amounts (id INTEGER PRIMARY KEY, v NUMERIC(10, 2), big NUMERIC(38, 0), free NUMERIC);
        INSERT INTO amounts VALUES
            (1, 12.34, 9223372036854775807, 0.000000001),
            (2, 2.5, -9223372036854775807, 123456789.123456789),
            (3, 7, 0, 1e20),
            (4, NULL, NULL, NULL);
        """,
    )
    pipeline.run(sql_table(sqlite_url, table="amounts", backend=backend))

    rows = user_columns(delta_rows(pipeline, "amounts", order_by="id"))
    D = decimal.Decimal
    assert [(r["v"], r["big"]) for r in rows] == [
        (D("12.34"), D(9223372036854775807)),
        (D("2.50"), D(-9223372036854775807)),
        (D("7.00"), D(0)),
        (None, None),
    ]
    # An unconstrained NUMERIC is decimal(38, 9); a REAL keeps its 15-17 significant digits.
    assert [r["free"] for r in rows] == [D("1E-9"), D("123456789.12345679"), D("1E+20"), None]


@pytest.mark.parametrize("backend", ["pyarrow", "sqlalchemy"])
def test_a_float_type_that_returns_decimals_loads_as_a_decimal_of_its_places(
    pipeline: sl.Pipeline, sqlite_url: str, backend: str
) -> None:
    """MySQL's DOUBLE(5,2) (Rfam's family.gathering_cutoff, in dlt's sql_database template) is
    a float type that SQLAlchemy returns as Decimals: dlt loads it as decimal(5,2). Given here
    to SQLite's column by the type adapter, as MySQL reflects it. A plain DOUBLE, which MySQL
    returns as Decimals too, holds binary doubles: it stays a double with every digit, where a
    decimal of nine places would fail on 0.12345678901234566; a REAL is a double."""
    from sqlalchemy.dialects import mysql
    from sqlalchemy.sql import sqltypes

    _sqlite_table(
        sqlite_url,
        "CREATE TABLE family (id INTEGER PRIMARY KEY, cutoff DOUBLE, lambda FLOAT, plain REAL); "
        "INSERT INTO family VALUES (1, 38.0, 0.12345678901234566, 0.1), (2, 12.34, -1e-12, 2.5), "
        "(3, NULL, NULL, NULL);",
    )

    def as_mysql_reflects_it(column_type: Any) -> Any:
        if isinstance(column_type, sqltypes.DOUBLE):
            return mysql.DOUBLE(precision=5, scale=2, asdecimal=True)
        if isinstance(column_type, sqltypes.FLOAT):
            return mysql.DOUBLE(asdecimal=True)
        return None

    source = sql_table(
        sqlite_url, table="family", backend=backend, type_adapter_callback=as_mysql_reflects_it
    )
    pipeline.run(source)

    rows = user_columns(delta_rows(pipeline, "family", order_by="id"))
    D = decimal.Decimal
    assert [(r["cutoff"], r["lambda"], r["plain"]) for r in rows] == [
        (D("38.00"), 0.12345678901234566, 0.1),
        (D("12.34"), -1e-12, 2.5),
        (None, None, None),
    ]
    schema = {
        f.name: str(f.type) for f in deltalake.DeltaTable(f"{pipeline.dataset_uri}/family").schema().fields
    }
    assert (
        schema["cutoff"] == 'PrimitiveType("decimal(5,2)")' and schema["plain"] == 'PrimitiveType("double")'
    )


def test_sqlite_unconstrained_numeric_with_more_than_nine_places_fails(
    pipeline: sl.Pipeline, sqlite_url: str
) -> None:
    _sqlite_table(
        sqlite_url, "CREATE TABLE t (id INTEGER PRIMARY KEY, free NUMERIC); INSERT INTO t VALUES (1, 1e-12);"
    )
    with pytest.raises(PipelineStepFailed, match=r"table 't', column 'free'.*1e-12.*decimal\(38,9\)"):
        pipeline.run(sql_table(sqlite_url, table="t"))


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("1e40", "the value 1" + "0" * 40 + " does not fit"),  # beyond decimal(38, 9)
        ("0.0000000001", "the value 1E-10 does not fit"),  # a tenth place
        ("'NaN'", "the value NaN does not fit"),
    ],
)
def test_postgres_unconstrained_numeric_that_delta_cannot_hold_fails(
    pipeline: sl.Pipeline, pg: Any, value: str, shown: str
) -> None:
    with pg.begin() as c:
        c.execute(
            sa.text(
                f"CREATE TABLE n (id int PRIMARY KEY, v numeric); INSERT INTO n VALUES (1, 1.5), (2, {value})"
            )
        )

    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(sql_table(pg, table="n"))

    message = str(failure.value)
    assert "table 'n', column 'v'" in message and shown in message and "decimal(38,9)" in message
    assert not (Path(pipeline.dataset_uri) / "n").exists()


def test_postgres_numeric_keeps_its_digits(pipeline: sl.Pipeline, pg: Any) -> None:
    with pg.begin() as c:
        c.execute(
            sa.text(
                "CREATE TABLE n (id int PRIMARY KEY, v numeric(38, 2), free numeric);"
                "INSERT INTO n VALUES (1, 123456789012345678901234567890123456.78, 1.005),"
                " (2, -0.01, 12345678901234567890123456789.123456789)"
            )
        )
    pipeline.run(sql_table(pg, table="n"))

    rows = user_columns(delta_rows(pipeline, "n", order_by="id"))
    assert rows == [
        {
            "id": 1,
            "v": decimal.Decimal("123456789012345678901234567890123456.78"),
            "free": decimal.Decimal("1.005"),
        },
        {
            "id": 2,
            "v": decimal.Decimal("-0.01"),
            "free": decimal.Decimal("12345678901234567890123456789.123456789"),
        },
    ]


# -- a value of the wrong type ------------------------------------------------------------------
@pytest.mark.parametrize(("backend", "column"), [("pyarrow", "n"), ("sqlalchemy", "b")])
def test_a_value_of_the_wrong_type_fails_naming_table_and_column(
    pipeline: sl.Pipeline, sqlite_url: str, backend: str, column: str
) -> None:
    """SQLite stores any value in any column: a text in an INTEGER or BLOB column."""
    _sqlite_table(
        sqlite_url,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, b BLOB);"
        "INSERT INTO t VALUES (1, 2, x'00'), (2, "
        + ("'abc', x'01'" if column == "n" else "3, 'text'")
        + ");",
    )
    with pytest.raises(PipelineStepFailed, match=f"table 't', column '{column}'"):
        pipeline.run(sql_table(sqlite_url, table="t", backend=backend))


# -- incremental: NULL cursors and row order ----------------------------------------------------
@pytest.fixture
def events_url(sqlite_url: str) -> str:
    _sqlite_table(
        sqlite_url,
        """
        CREATE TABLE events (id INTEGER PRIMARY KEY, seq INTEGER, v TEXT);
        INSERT INTO events VALUES (1, 10, 'a'), (2, NULL, 'no cursor'), (3, 30, 'c'), (4, 20, 'b');
        """,
    )
    return sqlite_url


def _events(url: str, queries: list[Any], **incremental: Any) -> Any:
    def record(query: Any, table: Any) -> Any:
        queries.append(query)
        return query

    return sql_table(
        url,
        table="events",
        incremental=sl.sources.incremental("seq", **incremental),
        query_adapter_callback=record,
    )


def _sql(query: Any) -> str:
    return " ".join(str(query.compile(dialect=sa.dialects.sqlite.dialect())).split())


@pytest.mark.parametrize("initial_value", [None, 0])
def test_null_cursor_with_raise_fails_naming_the_cursor_column(
    pipeline: sl.Pipeline, events_url: str, initial_value: Any
) -> None:
    """The query's range let no NULL through, so a start value hid the row without the error."""
    queries: list[Any] = []
    with pytest.raises(PipelineStepFailed, match="cursor column 'seq'"):
        pipeline.run(_events(events_url, queries, initial_value=initial_value))


def test_null_cursor_with_exclude_is_left_out_by_the_query(pipeline: sl.Pipeline, events_url: str) -> None:
    queries: list[Any] = []
    for initial_value in (None, 0):
        pipeline.run(
            _events(events_url, queries, initial_value=initial_value, on_cursor_value_missing="exclude")
        )
        assert "events.seq IS NOT NULL" in _sql(queries[-1])
    assert [r["id"] for r in delta_rows(pipeline, "events", order_by="id")] == [1, 3, 4]


def test_null_cursor_with_include_is_read_with_the_range(pipeline: sl.Pipeline, events_url: str) -> None:
    """As dlt: the rows without a cursor value are read with every run's range (a merge on the
    primary key keeps one copy of each)."""
    queries: list[Any] = []

    def run() -> None:
        resource = _events(events_url, queries, initial_value=0, on_cursor_value_missing="include")
        resource.apply_hints(write_disposition="merge")
        pipeline.run(resource)

    run()
    assert "events.seq >= ? OR events.seq IS NULL" in _sql(queries[-1])
    run()
    rows = user_columns(delta_rows(pipeline, "events", order_by="id"))
    assert [r["id"] for r in rows] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("func", "row_order", "order"),
    [
        (max, None, None),
        (max, "asc", "ORDER BY events.seq ASC"),
        (max, "desc", "ORDER BY events.seq DESC"),
        (min, "asc", "ORDER BY events.seq DESC"),
        (min, "desc", "ORDER BY events.seq ASC"),
    ],
)
def test_query_is_ordered_by_the_row_order(
    pipeline: sl.Pipeline, events_url: str, func: Any, row_order: str | None, order: str | None
) -> None:
    """dlt's: ORDER BY only for a declared row_order, ascending where the rows then arrive in
    the direction last_value_func moves (asc with max, desc with min)."""
    queries: list[Any] = []
    resource = _events(
        events_url,
        queries,
        initial_value=0 if func is max else 100,
        last_value_func=func,
        row_order=row_order,
        on_cursor_value_missing="exclude",
    )
    pipeline.run(resource)

    sql = _sql(queries[-1])
    if order is None:
        assert "ORDER BY" not in sql
    else:
        assert sql.endswith(order)
    assert sorted(r["id"] for r in delta_rows(pipeline, "events")) == [1, 3, 4]


# -- dlt's other sql_table arguments ------------------------------------------------------------
def test_included_and_excluded_columns(pipeline: sl.Pipeline, sqlite_url: str) -> None:
    both = sql_table(
        sqlite_url, table="products", included_columns=["id", "name", "price"], excluded_columns=["price"]
    )
    assert sorted(both.hints.columns) == ["id", "name"]
    pipeline.run(both)
    pipeline.run(sql_table(sqlite_url, table="customers", excluded_columns=["notes"]))

    assert user_columns(delta_rows(pipeline, "products", order_by="id"))[0] == {"id": 1, "name": "kettle"}
    assert user_columns(delta_rows(pipeline, "customers", order_by="id")) == [
        {"id": 1, "email": "a@example.com"},
        {"id": 2, "email": "b@example.com"},
    ]
    # A misspelt name is refused: the column it meant to leave out would be loaded.
    with pytest.raises(ResourceError, match=r"table 'customers' has no column 'note'"):
        sql_table(sqlite_url, table="customers", excluded_columns=["note"])


def test_merge_key_replaces_the_rows_of_a_key(pipeline: sl.Pipeline, sqlite_url: str) -> None:
    _sqlite_table(
        sqlite_url,
        """
        CREATE TABLE daily (day TEXT, shop TEXT, sold INTEGER);
        INSERT INTO daily VALUES ('2024-01-01', 'a', 1), ('2024-01-01', 'b', 2), ('2024-01-02', 'a', 3);
        """,
    )

    def daily() -> Any:
        return sql_table(sqlite_url, table="daily", write_disposition="merge", merge_key="day")

    assert daily().hints.merge_key == ("day",)
    pipeline.run(daily())
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("DELETE FROM daily WHERE day = '2024-01-01' AND shop = 'b'")
    pipeline.run(daily())

    rows = user_columns(delta_rows(pipeline, "daily"))
    assert sorted((r["day"], r["shop"], r["sold"]) for r in rows) == [
        ("2024-01-01", "a", 1),
        ("2024-01-02", "a", 3),
    ]


def test_engine_kwargs_go_to_create_engine(sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    with caplog.at_level(logging.INFO, logger="sqlalchemy.engine"):
        list(sql_table(sqlite_url, table="customers", engine_kwargs={"echo": True}))
        list(
            sql_database(sqlite_url, table_names=["products"], engine_kwargs={"echo": True}).resources[
                "products"
            ]
        )
    logged = " ".join(r.getMessage() for r in caplog.records if r.name.startswith("sqlalchemy.engine"))
    assert "FROM customers" in logged and "FROM products" in logged
    with pytest.raises(TypeError):  # SQLAlchemy's own refusal of an unknown keyword
        sql_table(sqlite_url, table="customers", engine_kwargs={"no_such_argument": True})
    with pytest.raises(sl.exceptions.ConfigValueError, match="engine_kwargs.*Engine"):
        sql_table(sa.create_engine(sqlite_url), table="customers", engine_kwargs={"echo": True})


@pytest.mark.parametrize("backend", ["pyarrow", "sqlalchemy"])
def test_query_adapter_may_return_a_textual_query(
    pipeline: sl.Pipeline, sqlite_url: str, backend: str
) -> None:
    """Columns named as the table's keep its types (SQLite's text datetimes parsed, NUMERIC
    exact); another column's type comes from its values."""

    def raw(query: Any, table: Any) -> Any:
        return sa.text("SELECT id, price, seen, upper(name) AS loud FROM products WHERE id <= :n").bindparams(
            n=2
        )

    pipeline.run(sql_table(sqlite_url, table="products", query_adapter_callback=raw, backend=backend))

    rows = user_columns(delta_rows(pipeline, "products", order_by="id"))
    assert [(r["id"], r["price"], r["seen"], r["loud"]) for r in rows] == [
        (1, decimal.Decimal("12.34"), datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), "KETTLE"),
        (2, decimal.Decimal("0.50"), datetime.datetime(2024, 2, 29, 23, 59, 59), "CUP"),
    ]
    schema = {
        f.name: str(f.type) for f in deltalake.DeltaTable(f"{pipeline.dataset_uri}/products").schema().fields
    }
    assert schema["price"] == 'PrimitiveType("decimal(10,2)")' and schema["loud"] == 'PrimitiveType("string")'


def test_table_adapter_may_return_a_select_with_computed_columns(
    pipeline: sl.Pipeline, sqlite_url: str
) -> None:
    """dlt's: the adapter's select is read instead of the table, here with a computed column
    and a filter; the incremental's range applies to the select's columns."""

    def with_total(table: Any) -> Any:
        gross = (table.c.price * 2).label("gross")
        return sa.select(table.c.id, table.c.name, table.c.price, gross).where(table.c.name.is_not(None))

    def products() -> Any:
        return sql_table(
            sqlite_url,
            table="products",
            table_adapter_callback=with_total,
            incremental=sl.sources.incremental("id", initial_value=2),
        )

    resource = products()
    assert resource.hints.primary_key == ("id",)
    assert resource.hints.columns["gross"]["data_type"] == "decimal"
    pipeline.run(resource)

    rows = user_columns(delta_rows(pipeline, "products", order_by="id"))
    assert rows == [
        {"id": 2, "name": "cup", "price": decimal.Decimal("0.50"), "gross": decimal.Decimal("1.00")}
    ]
    with pytest.raises(ResourceError, match="returned a str"):
        sql_table(sqlite_url, table="products", table_adapter_callback=lambda table: "SELECT 1")


def test_postgres_generated_columns_load(pipeline: sl.Pipeline, pg: Any) -> None:
    with pg.begin() as c:
        c.execute(
            sa.text(
                "CREATE TABLE lines (id int PRIMARY KEY, qty int, unit numeric(8, 2),"
                " total numeric(12, 2) GENERATED ALWAYS AS (qty * unit) STORED);"
                "INSERT INTO lines (id, qty, unit) VALUES (1, 3, 1.25), (2, NULL, 9.99)"
            )
        )
    pipeline.run(sql_table(pg, table="lines"))

    rows = user_columns(delta_rows(pipeline, "lines", order_by="id"))
    assert [(r["id"], r["total"]) for r in rows] == [(1, decimal.Decimal("3.75")), (2, None)]


def test_sql_table_reads_its_arguments_from_its_table_section(
    pipeline: sl.Pipeline, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dlt's sections: sources.sql_database.<table>.<argument>, then sources.sql_database."""
    monkeypatch.setenv("SOURCES__SQL_DATABASE__CREDENTIALS", sqlite_url)
    monkeypatch.setenv("SOURCES__SQL_DATABASE__CUSTOMERS__BACKEND", "sqlalchemy")
    monkeypatch.setenv("SOURCES__SQL_DATABASE__CUSTOMERS__EXCLUDED_COLUMNS", '["notes"]')
    monkeypatch.setenv("SOURCES__SQL_DATABASE__CUSTOMERS__INCREMENTAL__CURSOR_PATH", "email")
    monkeypatch.setenv("SOURCES__SQL_DATABASE__CUSTOMERS__INCREMENTAL__INITIAL_VALUE", "b@example.com")

    customers: list[Any] = []
    pipeline.run(sql_table(table="customers").add_map(lambda item: customers.append(item) or item))
    assert customers == [{"id": 2, "email": "b@example.com"}]  # dicts: the sqlalchemy backend
    assert user_columns(delta_rows(pipeline, "customers")) == [{"id": 2, "email": "b@example.com"}]
    # Another table does not see the section; what a caller passes wins over config.
    (chunk,) = list(sql_table(table="products"))
    assert isinstance(chunk, pa.Table) and chunk.num_rows == 3
    (chunk,) = list(sql_table(table="customers", backend="pyarrow", incremental=None))
    assert isinstance(chunk, pa.Table) and chunk.column_names == ["id", "email"]

    # A table's own credentials come before the source's.
    monkeypatch.setenv("SOURCES__SQL_DATABASE__PRODUCTS__CREDENTIALS", "sqlite:////nonexistent/dir/x.db")
    with pytest.raises(sa.exc.OperationalError, match="unable to open database file"):
        sql_table(table="products")


@pytest.mark.parametrize("backend", ["pyarrow", "sqlalchemy"])
def test_textual_query_reads_json_as_the_table_query_does(
    pipeline: sl.Pipeline, sqlite_url: str, backend: str
) -> None:
    """SQLite keeps JSON as text, which SQLAlchemy's JSON type parses: a textual query's column
    of the table's JSON column is parsed too (not loaded as a JSON string of the text)."""
    _sqlite_table(
        sqlite_url,
        """CREATE TABLE docs (id INTEGER PRIMARY KEY, doc JSON);
        INSERT INTO docs VALUES (1, '{"k": [1, "x"]}');""",
    )
    textual = sql_table(
        sqlite_url,
        table="docs",
        backend=backend,
        query_adapter_callback=lambda q, t: sa.text("SELECT * FROM docs"),
    )
    plain = sql_table(sqlite_url, table="docs", backend=backend)
    assert list(textual) == list(plain)

    pipeline.run(textual)
    assert user_columns(delta_rows(pipeline, "docs")) == [{"id": 1, "doc": '{"k":[1,"x"]}'}]
