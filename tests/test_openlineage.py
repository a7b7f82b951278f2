"""OpenLineage run events: real pipelines on the embedded engine send them through
openlineage-python's file transport, configured as a user does (``OPENLINEAGE__TRANSPORT__...``
variables), into this test's tmp dir. Every event is validated against OpenLineage's JSON
schema and the schema of each of its facets, vendored in ``tests/openlineage_spec``.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pytest

import sparkload as sl

pytest.importorskip("openlineage.client")
jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

SPEC = Path(__file__).parent / "openlineage_spec"
PASSWORD = "s3cr3t-Pa55w0rd"
ORDERS = [{"id": 1, "amount": 2.5, "customer": "ann"}, {"id": 2, "amount": 4.0, "customer": "bob"}]
CUSTOMERS = [{"name": "ann"}, {"name": "bob"}, {"name": "cy"}]


# -- validation against the vendored schema -----------------------------------------------------
def _spec_registry() -> tuple[Any, dict[tuple[str, str], dict[str, Any]]]:
    """The vendored schemas by their ``$id`` (so the facets' ``$ref`` to
    ``https://openlineage.io/spec/2-0-2/OpenLineage.json`` resolves to the local file, never
    the network), and each facet file's schema by where the facet goes (``RunFacet``,
    ``JobFacet``, ``DatasetFacet``, ``OutputDatasetFacet``...) and the name it has there."""
    resources = []
    facets: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(SPEC.glob("*.json")):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], referencing.Resource.from_contents(schema)))
        if path.name == "OpenLineage.json":
            continue
        for facet_name, reference in schema["properties"].items():
            definition = schema["$defs"][reference["$ref"].rsplit("/", 1)[-1]]
            kind = definition["allOf"][0]["$ref"].rsplit("/", 1)[-1]
            facets[(kind, facet_name)] = schema
    return referencing.Registry().with_resources(resources), facets


REGISTRY, FACET_SCHEMAS = _spec_registry()
EVENT_SCHEMA = json.loads((SPEC / "OpenLineage.json").read_text())


def validate(event: dict[str, Any]) -> None:
    """``event`` against OpenLineage.json, then each facet against its own schema (a facet
    whose schema is not vendored fails the test)."""
    jsonschema.Draft202012Validator(EVENT_SCHEMA, registry=REGISTRY).validate(event)
    found = [("RunFacet", event["run"].get("facets", {})), ("JobFacet", event["job"].get("facets", {}))]
    for dataset in event.get("inputs", []) + event.get("outputs", []):
        found.append(("DatasetFacet", dataset.get("facets", {})))
    found += [("InputDatasetFacet", dataset.get("inputFacets", {})) for dataset in event.get("inputs", [])]
    found += [("OutputDatasetFacet", dataset.get("outputFacets", {})) for dataset in event.get("outputs", [])]
    for kind, facets in found:
        for name, facet in facets.items():
            assert (kind, name) in FACET_SCHEMAS, f"{kind} '{name}' has no vendored schema"
            validator = jsonschema.Draft202012Validator(FACET_SCHEMAS[(kind, name)], registry=REGISTRY)
            validator.validate({name: facet})


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def openlineage_variables_restored() -> Iterator[None]:
    """The OpenLineage variables as they were before each test. The client itself writes
    some into the environment (it turns ``OPENLINEAGE_URL`` into
    ``OPENLINEAGE__TRANSPORT__TRANSPORTS__DEFAULT_HTTP__*``), which monkeypatch does not
    know of; left behind, they would turn lineage on for every later test of the process."""
    before = {name: value for name, value in os.environ.items() if name.startswith("OPENLINEAGE")}
    yield
    for name in [name for name in os.environ if name.startswith("OPENLINEAGE")]:
        del os.environ[name]
    os.environ.update(before)


@pytest.fixture
def events_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file transport, as a user configures it, appending every event to one file."""
    path = tmp_path / "lineage" / "events.jsonl"
    path.parent.mkdir()
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(path))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    monkeypatch.setenv("OPENLINEAGE_NAMESPACE", "shop_lineage")
    return path


def read_events(path: Path) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for event in events:
        validate(event)
    return events


@sl.resource(table_name="orders", primary_key="id", write_disposition="merge")
def orders() -> Iterator[dict[str, Any]]:
    yield from ORDERS


@sl.resource(table_name="customers")
def customers() -> Iterator[dict[str, Any]]:
    yield from CUSTOMERS


@sl.resource(table_name="broken")
def broken() -> Iterator[dict[str, Any]]:
    yield {"id": 1}
    raise ConnectionError("the shop closed the connection on page 2")


# -- (a) a run of two tables ------------------------------------------------------------------
def test_a_run_sends_start_and_complete_with_its_two_delta_tables(
    make_pipeline: Any, events_file: Path, destination_dir: Path
) -> None:
    pipeline = make_pipeline("lineage_shop", dataset_name="shop")
    pipeline.run([orders(), customers()])

    start, complete = read_events(events_file)
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    assert start["run"]["runId"] == complete["run"]["runId"]
    assert start["job"] == complete["job"]
    assert start["job"]["namespace"] == "shop_lineage" and start["job"]["name"] == "lineage_shop"
    engine = complete["run"]["facets"]["processing_engine"]
    assert (engine["name"], engine["version"]) == ("sparkload", sl.__version__)
    assert start["outputs"] == []

    outputs = {output["name"]: output for output in complete["outputs"]}
    folder = (destination_dir / "shop").resolve()
    assert set(outputs) == {str(folder / "orders"), str(folder / "customers")}
    for table, rows in (("orders", ORDERS), ("customers", CUSTOMERS)):
        output = outputs[str(folder / table)]
        assert output["namespace"] == "file"
        assert output["outputFacets"]["outputStatistics"]["rowCount"] == len(rows)
        delta_fields = deltalake.DeltaTable(str(folder / table)).schema().to_json()
        expected = [(field["name"], field["type"]) for field in json.loads(delta_fields)["fields"]]
        sent = [(field["name"], field["type"]) for field in output["facets"]["schema"]["fields"]]
        assert sent == expected
        assert set(rows[0]) <= {name for name, _ in sent}


def test_extract_normalize_and_load_called_alone_are_runs_of_their_own_jobs(
    make_pipeline: Any, events_file: Path
) -> None:
    pipeline = make_pipeline("lineage_steps")
    pipeline.extract(customers())
    pipeline.normalize()
    pipeline.load()

    events = read_events(events_file)
    assert [(e["job"]["name"], e["eventType"]) for e in events] == [
        (f"lineage_steps.{step}", kind)
        for step in ("extract", "normalize", "load")
        for kind in ("START", "COMPLETE")
    ]
    assert len({e["run"]["runId"] for e in events}) == 3
    assert [len(e["outputs"]) for e in events] == [0, 0, 0, 0, 0, 1]


def test_openlineage_url_sends_the_events_to_a_lineage_server_over_http(
    make_pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client's HTTP transport, configured by OPENLINEAGE_URL alone, to a real server on
    127.0.0.1 (Marquez's endpoint)."""
    from http_api import FakeAPI

    for name in [name for name in os.environ if name.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(name)
    with FakeAPI() as server:
        server.route("/api/v1/lineage", lambda request: (201, {}, {}))
        monkeypatch.setenv("OPENLINEAGE_URL", server.url)
        monkeypatch.setenv("OPENLINEAGE_API_KEY", PASSWORD)
        make_pipeline("lineage_http").run(customers())
        received = server.asked("/api/v1/lineage")

    assert [r.method for r in received] == ["POST", "POST"]
    assert {r.headers["Authorization"] for r in received} == {f"Bearer {PASSWORD}"}
    events = [json.loads(r.raw_body) for r in received]
    for event in events:
        validate(event)
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    assert events[0]["job"] == events[1]["job"] and events[0]["job"]["namespace"] == "sparkload"
    assert PASSWORD not in b"".join(r.raw_body for r in received).decode()


# -- (b) a failing run --------------------------------------------------------------------------
def test_a_failing_run_sends_start_and_fail_with_the_error_message(
    make_pipeline: Any, events_file: Path
) -> None:
    pipeline = make_pipeline("lineage_broken")
    with pytest.raises(sl.PipelineStepFailed):
        pipeline.run(broken())

    start, fail = read_events(events_file)
    assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
    assert start["run"]["runId"] == fail["run"]["runId"]
    error = fail["run"]["facets"]["errorMessage"]
    assert "the shop closed the connection on page 2" in error["message"]
    assert error["programmingLanguage"] == "PYTHON"
    assert "ConnectionError" in error["stackTrace"]
    assert fail["outputs"] == []


# -- (c) a sql_database source ------------------------------------------------------------------
def test_a_sql_database_table_is_the_input_and_its_password_is_in_no_event(
    make_pipeline: Any, events_file: Path, tmp_path: Path
) -> None:
    sql_database = pytest.importorskip("sparkload.sources.sql_database").sql_database
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, title TEXT)")
        db.execute("INSERT INTO products VALUES (1, 'lamp'), (2, 'desk')")
    # SQLite takes no user or password: a password goes in the query of its URI form (SQLite
    # ignores a parameter it does not know), where a server's token or key would travel.
    url = f"sqlite:///file:{path}?uri=true&password={PASSWORD}"
    pipeline = make_pipeline("lineage_sql")
    pipeline.run(sql_database(url))

    text = events_file.read_text()
    assert PASSWORD not in text
    start, complete = read_events(events_file)
    expected = [{"namespace": f"sqlite://{path}", "name": "main.products", "facets": {}, "inputFacets": {}}]
    assert start["inputs"] == complete["inputs"] == expected
    assert complete["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 2


def test_a_database_server_is_named_by_host_and_port_without_credentials() -> None:
    sa = pytest.importorskip("sqlalchemy")
    from sparkload.sources.sql_database import table_origin

    url = sa.engine.make_url(f"postgresql+psycopg2://loader:{PASSWORD}@db.example.com:5433/shop?sslkey=k")
    origin = table_origin(url, "sales", "orders")
    assert (origin.namespace, origin.name) == ("postgres://db.example.com:5433", "shop.sales.orders")


def test_a_rest_api_endpoint_and_a_folder_of_files_are_inputs_without_the_token(
    make_pipeline: Any, events_file: Path, tmp_path: Path
) -> None:
    from http_api import FakeAPI

    from sparkload.sources.filesystem import readers
    from sparkload.sources.rest_api import rest_api_source

    folder = tmp_path / "drops"
    folder.mkdir()
    (folder / "a.csv").write_text("id,name\n1,ann\n2,bob\n")
    with FakeAPI() as api:
        api.route("/v1/items", lambda request: (200, {}, [{"id": 1}, {"id": 2}]))
        config = {
            "client": {"base_url": f"{api.url}/v1/", "auth": {"type": "bearer", "token": PASSWORD}},
            "resources": [{"name": "items", "endpoint": {"path": "items", "paginator": "single_page"}}],
        }
        pipeline = make_pipeline("lineage_inputs")
        pipeline.run([*rest_api_source(config).selected_resources.values(), readers(str(folder)).read_csv()])

    assert PASSWORD not in events_file.read_text()
    start, complete = read_events(events_file)
    host = api.url.removeprefix("http://")
    expected = [(f"http://{host}", "v1/items"), ("file", str(folder.resolve()))]
    assert [(i["namespace"], i["name"]) for i in start["inputs"]] == expected
    assert complete["inputs"] == start["inputs"]
    assert {o["name"].rsplit("/", 1)[-1] for o in complete["outputs"]} == {"items", "read_csv"}


def test_bucket_and_api_locations_are_named_without_credentials_or_query() -> None:
    from sparkload.common.origin import endpoint_origin, location_origin

    bucket = location_origin(f"s3://AKIA:{PASSWORD}@lake-bucket/shop/orders?versionId=3")
    assert (bucket.namespace, bucket.name) == ("s3://lake-bucket", "shop/orders")
    local = location_origin("file:///data/lake/shop/orders/")
    assert (local.namespace, local.name) == ("file", "/data/lake/shop/orders")
    endpoint = endpoint_origin(f"https://bot:{PASSWORD}@api.example.com:8443/v2/", f"orders?key={PASSWORD}")
    assert (endpoint.namespace, endpoint.name) == ("https://api.example.com:8443", "v2/orders")
    elsewhere = endpoint_origin("https://api.example.com/v2", "https://files.example.com/exports/day")
    assert (elsewhere.namespace, elsewhere.name) == ("https://files.example.com", "exports/day")


# -- (d) lineage not configured -----------------------------------------------------------------
def test_without_lineage_configured_no_event_is_sent_and_no_openlineage_module_imported(
    tmp_path: Path,
) -> None:
    """A script in a fresh process, with no OPENLINEAGE variable: the client is never imported."""
    script = textwrap.dedent(f"""
        import sys
        import sparkload as sl
        pipeline = sl.pipeline("quiet", destination=sl.destinations.delta({str(tmp_path / "lake")!r}),
                               pipelines_dir={str(tmp_path / "pipelines")!r})
        pipeline.run([{{"id": 1}}], table_name="items")
        assert "sparkload.pipeline.lineage" in sys.modules  # the run went past the lineage hook
        print(sorted(name for name in sys.modules if name.startswith("openlineage")))
    """)
    env = {name: value for name, value in os.environ.items() if not name.startswith("OPENLINEAGE")}
    env["RUST_LOG"] = "error"
    env["PYTHONPATH"] = str(Path(sl.__file__).resolve().parent.parent)  # this checkout's sparkload
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert list(tmp_path.rglob("*.jsonl")) == []


def test_the_sparkload_switch_alone_turns_lineage_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkload.pipeline import lineage

    for name in [name for name in os.environ if name.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(name)
    assert not lineage.configured()
    monkeypatch.setenv("RUNTIME__OPENLINEAGE", "true")
    assert lineage.configured()
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    assert not lineage.configured()


# -- (e) a transport that fails -----------------------------------------------------------------
def test_a_failing_transport_leaves_the_run_s_result_and_logs_a_warning(
    make_pipeline: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The file transport told to write into a folder: every emit raises.
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(tmp_path))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    pipeline = make_pipeline("lineage_unsent")
    with caplog.at_level(logging.WARNING, logger="sparkload.pipeline.lineage"):
        info = pipeline.run(customers())

    assert info.row_counts == {"customers": 3}
    assert pipeline.last_trace is not None and pipeline.last_trace.status == "ok"
    warnings = [r.getMessage() for r in caplog.records if r.name == "sparkload.pipeline.lineage"]
    assert len(warnings) == 2, warnings
    assert "START event was not sent" in warnings[0] and "COMPLETE/FAIL event was not sent" in warnings[1]
