"""dlt's module paths and names under sparkload: a dlt script ports by changing ``import dlt``
to ``import sparkload as dlt`` and ``from dlt.X`` to ``from sparkload.X``.

The imports are the ones dlt's own templates make; each behaviour is checked on real
components (a SQLite file, an HTTP server on 127.0.0.1, Delta tables read by delta-rs)."""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import deltalake
import pytest
from conftest import delta_rows
from http_api import APIRequest, FakeAPI

import sparkload as sl
from sparkload.config import project_settings_dir
from sparkload.config.resolved import redact_text
from sparkload.sources.credentials import ConnectionStringCredentials
from sparkload.sources.sql_database import sql_table

# What dlt 1.31's templates import (dlt/_workspace/_templates), as ``from sparkload.X``;
# docs/dlt.md says why the two it imports beyond these have no counterpart.
TEMPLATE_IMPORTS = [
    ("sparkload.common", "Decimal"),
    ("sparkload.common", "pendulum"),
    ("sparkload.common.pendulum", "pendulum"),
    ("sparkload.sources", "TDataItems"),
    ("sparkload.sources", "TDataItem"),
    ("sparkload.sources", "DltResource"),
    ("sparkload.sources", "DltSource"),
    ("sparkload.sources", "incremental"),
    ("sparkload.sources.credentials", "ConnectionStringCredentials"),
    ("sparkload.sources.helpers", "requests"),
    ("sparkload.sources.helpers.rest_client", "RESTClient"),
    ("sparkload.sources.helpers.rest_client", "paginate"),
    ("sparkload.sources.helpers.rest_client.auth", "BearerTokenAuth"),
    ("sparkload.sources.helpers.rest_client.paginators", "HeaderLinkPaginator"),
    ("sparkload.sources.rest_api", "RESTAPIConfig"),
    ("sparkload.sources.rest_api", "check_connection"),
    ("sparkload.sources.rest_api", "rest_api_resources"),
    ("sparkload.sources.rest_api", "rest_api_source"),
    ("sparkload.sources.rest_api.typing", "RESTAPIConfig"),
    ("sparkload.sources.filesystem", "filesystem"),
    ("sparkload.sources.filesystem", "readers"),
    ("sparkload.sources.filesystem", "read_csv"),
    ("sparkload.sources.sql_database", "sql_database"),
    ("sparkload.sources.sql_database", "sql_table"),
    ("sparkload.sources.sql_database", "Table"),
]


@pytest.mark.parametrize(("module", "name"), TEMPLATE_IMPORTS)
def test_names_dlt_templates_import_resolve(module: str, name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from {module} import {name}", namespace)  # the statement a ported script runs
    assert namespace[name] is not None


def test_dlt_typing_names_are_sparkloads_classes() -> None:
    from sparkload.common import Decimal, pendulum
    from sparkload.sources import DltResource, DltSource
    from sparkload.sources.sql_database import Table

    assert DltResource is sl.Resource and DltSource is sl.Source
    assert Decimal("1.10") == Decimal("1.1") and pendulum.datetime(2024, 1, 1).year == 2024
    assert Table.__module__.startswith("sqlalchemy")


def test_connection_string_credentials_parse_and_hide_the_password() -> None:
    creds = ConnectionStringCredentials("mysql+pymysql://rfamro:p%40ss@db.example:4497/Rfam?charset=utf8")
    assert (creds.drivername, creds.username, creds.host, creds.port, creds.database) == (
        "mysql+pymysql",
        "rfamro",
        "db.example",
        4497,
        "Rfam",
    )
    assert creds.password == "p@ss" and creds.query == {"charset": "utf8"}
    assert (
        creds.to_native_representation() == "mysql+pymysql://rfamro:p%40ss@db.example:4497/Rfam?charset=utf8"
    )
    assert "p@ss" not in repr(creds) and "p%40ss" not in str(creds) and "p@ss" not in repr(dict(creds))
    absolute = ConnectionStringCredentials("sqlite:////tmp/x.db")
    assert absolute.database == "/tmp/x.db" and absolute.to_native_representation() == "sqlite:////tmp/x.db"
    with pytest.raises(sl.ConfigValueError, match="no field 'user'"):
        ConnectionStringCredentials({"drivername": "sqlite", "user": "x"})


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE family (id INTEGER PRIMARY KEY, name TEXT)")
        db.executemany("INSERT INTO family VALUES (?, ?)", [(1, "a"), (2, "b")])
    return path


def test_connection_string_credentials_from_secrets_reach_sql_database(
    sqlite_file: Path, pipeline: sl.Pipeline
) -> None:
    """dlt's sql_database template: a source function whose ``credentials`` parameter is
    annotated ``ConnectionStringCredentials`` gets one made from secrets.toml's table."""

    settings = project_settings_dir()
    settings.mkdir(parents=True)
    (settings / "secrets.toml").write_text(
        f'[sources.shop.credentials]\ndrivername = "sqlite"\ndatabase = "{sqlite_file}"\n'
    )
    seen: list[Any] = []

    @sl.source(name="shop")
    def shop(credentials: ConnectionStringCredentials = sl.secrets.value) -> Any:
        seen.append(credentials)
        return sql_table(credentials, table="family")

    pipeline.run(shop())
    assert isinstance(seen[0], ConnectionStringCredentials) and seen[0].database == str(sqlite_file)
    # its fields are secrets a trace keeps out of its text, as any secret's
    assert redact_text(f"opened {sqlite_file}") == "opened ***"
    rows = delta_rows(pipeline, "family", order_by="id")
    assert [(row["id"], row["name"]) for row in rows] == [(1, "a"), (2, "b")]


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with FakeAPI() as server:
        yield server


def test_check_connection_fetches_one_page_and_reports_failures(api: FakeAPI) -> None:
    from sparkload.sources.rest_api import check_connection, rest_api_source

    api.route("/pokemon", lambda request: (200, {}, [{"id": 1}, {"id": 2}]))
    api.route("/broken", lambda request: (500, {}, {"error": "down"}))
    source = rest_api_source(
        {"client": {"base_url": api.url}, "resources": ["pokemon", "broken"]}, name="pokemon"
    )
    assert check_connection(source, "pokemon") == (True, "")
    failed, message = check_connection(source, "broken")
    assert failed is False and "500" in message
    unknown, message = check_connection(source, "not_existing_endpoint")
    assert unknown is False and "not_existing_endpoint" in message
    assert [request.path for request in api.requests if isinstance(request, APIRequest)].count(
        "/pokemon"
    ) == 1


def test_sql_client_runs_sql_against_the_datasets_delta_tables(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], table_name="users")
    with pipeline.sql_client() as client:
        assert client.execute_sql("SELECT id, name FROM users ORDER BY id") == [(1, "a"), (2, "b")]
        with client.execute_query("SELECT count(*) AS n FROM users") as cursor:
            assert cursor.fetchall() == [(2,)]
        with client.execute_query("SELECT name FROM users WHERE id = 2") as cursor:
            assert cursor.df()["name"].tolist() == ["b"]
        with pytest.raises(sl.SparkloadError, match="no query parameters"):
            client.execute_sql("SELECT * FROM users WHERE id = %s", 1)


def test_last_normalize_info_counts_rows_per_table(pipeline: sl.Pipeline) -> None:
    info = pipeline.run([{"id": 1, "tags": ["x", "y"]}, {"id": 2, "tags": []}], table_name="items")
    trace = pipeline.last_trace
    assert trace is not None
    normalized = trace.last_normalize_info
    assert normalized is not None
    assert normalized.loads_ids == info.loads_ids
    assert normalized.row_counts == {"items": 2, "items__tags": 2}


# -- dlt's .dlt folder and its sections --------------------------------------------------------


def _write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


def test_dlt_folder_config_and_secrets_are_read_and_sparkload_folder_wins(pipeline: sl.Pipeline) -> None:
    dlt_dir = project_settings_dir().parent / ".dlt"
    _write(dlt_dir, "config.toml", '[sources.test_dlt_paths.rows]\ncount = 2\nlabel = "from .dlt"\n')
    _write(dlt_dir, "secrets.toml", '[sources.test_dlt_paths.rows]\ntoken = "dlt-secret"\n')
    _write(project_settings_dir(), "config.toml", '[sources.test_dlt_paths.rows]\nlabel = "from sparkload"\n')

    @sl.resource
    def rows(
        count: int = sl.config.value, label: str = sl.config.value, token: str = sl.secrets.value
    ) -> Any:
        for n in range(count):
            yield {"n": n, "label": label, "token_length": len(token)}

    pipeline.run(rows())
    assert [(row["n"], row["label"], row["token_length"]) for row in delta_rows(pipeline, "rows", "n")] == [
        (0, "from sparkload", 10),
        (1, "from sparkload", 10),
    ]


def test_source_name_of_the_module_is_its_config_section(
    tmp_path: Path, pipeline: sl.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dlt's ``__source_name__`` names the section of what a module defines, and a resource's
    own section (``sources.<section>.<resource>``) comes before the section's."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "github_pipeline_helpers.py").write_text(
        "import sparkload as dlt\n"
        "__source_name__ = 'github'\n"
        "@dlt.resource\n"
        "def issues(per_page: int = dlt.config.value):\n"
        "    yield {'per_page': per_page}\n"
        "@dlt.resource\n"
        "def pulls(per_page: int = dlt.config.value):\n"
        "    yield {'per_page': per_page}\n"
    )
    monkeypatch.syspath_prepend(str(code))
    _write(
        project_settings_dir().parent / ".dlt",
        "config.toml",
        "[sources.github]\nper_page = 1\n[sources.github.issues]\nper_page = 5\n",
    )
    module = importlib.import_module("github_pipeline_helpers")
    pipeline.run([module.issues(), module.pulls()])
    assert [row["per_page"] for row in delta_rows(pipeline, "issues")] == [5]
    assert [row["per_page"] for row in delta_rows(pipeline, "pulls")] == [1]


# -- an Optional parameter no provider sets ----------------------------------------------------


def test_optional_parameters_left_unset_get_none_as_in_dlt(pipeline: sl.Pipeline) -> None:
    """dlt's rest_api template: ``access_token: Optional[str] = dlt.secrets.value`` runs
    without a token; a parameter that does not admit None still fails, naming it."""

    @sl.source(name="github")
    def github(
        access_token: Optional[str] = sl.secrets.value,  # noqa: UP045 (the template's spelling)
        per_page: int | None = sl.config.value,
    ) -> Any:
        @sl.resource
        def tokens() -> Any:
            yield {"has_token": access_token is not None, "per_page_unset": per_page is None}

        return tokens

    pipeline.run(github())
    assert [(row["has_token"], row["per_page_unset"]) for row in delta_rows(pipeline, "tokens")] == [
        (False, True)
    ]

    @sl.resource
    def needs_token(access_token: str = sl.secrets.value) -> Any:
        yield {"token": access_token}

    with pytest.raises(sl.ConfigFieldMissingError, match="access_token"):
        list(needs_token())


# -- deferred items piped into a transformer ---------------------------------------------------


def _users_and_details(calls: list[int]) -> tuple[sl.Resource, sl.Resource]:
    @sl.defer
    def fetch_user(n: int) -> Any:
        calls.append(n)
        return {"id": n, "name": f"user {n}"}

    @sl.defer
    def fetch_page(start: int) -> Any:
        calls.append(start)
        return [{"id": start + k, "name": f"user {start + k}"} for k in range(2)]

    @sl.resource
    def users() -> Any:
        yield fetch_user(1)
        yield fetch_page(10)  # a list: one page for the transformer, as in dlt
        yield sl.mark.with_table_name(fetch_user(2), "vip_users")

    @sl.transformer(data_from=users)
    def details(page: Any) -> Any:
        rows = page if isinstance(page, list) else [page]
        yield [{"user_id": row["id"], "page_size": len(rows)} for row in rows]

    return users, details


def test_a_transformer_gets_what_its_parents_deferred_calls_return(pipeline: sl.Pipeline) -> None:
    calls: list[int] = []
    users, details = _users_and_details(calls)
    rows: list[Any] = []
    for item in users | details:
        data = getattr(item, "data", item)  # the marked item's page comes marked, whole
        rows += data if isinstance(data, list) else [data]
    assert sorted((row["user_id"], row["page_size"]) for row in rows) == [(1, 1), (2, 1), (10, 2), (11, 2)]

    calls.clear()

    @sl.source
    def people() -> Any:
        return users, details

    pipeline.run(people())  # the parent is shared: its calls are made once, in the pool
    assert sorted(calls) == [1, 2, 10]
    assert [row["id"] for row in delta_rows(pipeline, "users", "id")] == [1, 10, 11]
    details_rows = delta_rows(pipeline, "details", "user_id")
    assert [(row["user_id"], row["page_size"]) for row in details_rows] == [(1, 1), (10, 2), (11, 2)]
    # the mark goes on with what the transformer makes of the marked item, as in dlt
    vip = delta_rows(pipeline, "vip_users")
    assert sorted(((row["id"], row["user_id"]) for row in vip), key=str) == [(2, None), (None, 2)]


# -- values nested beyond max_table_nesting whose keys are all None ------------------------------


def test_keys_none_in_every_row_of_a_value_kept_whole_make_no_column(pipeline: sl.Pipeline) -> None:
    """A dict nested beyond max_table_nesting is kept whole; its keys that are None in every
    row have no type, and, as dlt creates a column only once it has a value, they are left
    out (the whole column when no key is left) until a load brings a value."""

    @sl.resource(max_table_nesting=0)
    def items(rows: list[dict[str, Any]]) -> Any:
        yield rows

    pipeline.run(items([{"id": 1, "meta": {"a": None, "b": None}}, {"id": 2, "meta": {"a": None}}]))
    table = deltalake.DeltaTable(f"{pipeline.dataset_uri}/items")
    assert "meta" not in table.schema().to_arrow().names
    assert [row["id"] for row in delta_rows(pipeline, "items", "id")] == [1, 2]

    pipeline.run(
        items(
            [
                {"id": 3, "meta": {"a": "x", "gone": None, "deep": {"n": None}}},
                {"id": 4, "meta": {"a": None}, "pages": [{"empty": None, "size": 2}]},
            ]
        )
    )
    rows = {row["id"]: row for row in delta_rows(pipeline, "items", "id")}
    assert rows[3]["meta"] == {"a": "x"} and rows[4]["meta"] == {"a": None}
    assert rows[4]["pages"] == [{"size": 2}] and rows[1]["meta"] is None


def test_compute_table_schema_gives_the_hints_in_dlts_shape() -> None:
    @sl.resource(
        table_name="people",
        primary_key="id",
        write_disposition={"disposition": "merge", "strategy": "scd2"},
        columns={"born": {"data_type": "date"}},
    )
    def users() -> Any:
        yield {"id": 1}

    assert users().compute_table_schema() == {
        "name": "people",
        "columns": {
            "born": {"name": "born", "data_type": "date"},
            "id": {"name": "id", "primary_key": True},
        },
        "write_disposition": "merge",
        "x-merge-strategy": "scd2",
        "resource": "users",
    }

    @sl.resource(table_name=lambda item: f"events_{item['kind']}")
    def events() -> Any:
        yield {"kind": "click"}

    assert events().compute_table_schema({"kind": "click"})["name"] == "events_click"
    with pytest.raises(sl.ResourceError, match="pass an item"):
        events().compute_table_schema()
