"""Tables by name in the session's catalog: ``sl.destinations.delta(catalog=...)``.

The dataset is the catalog's schema (``<catalog>.<dataset_name>.<table>``); sparkload
creates, appends to, replaces, merges into and reads the tables by name, keeps its state in
``<catalog>.<dataset>._sparkload_pipeline_state`` and recognises its own commits there (a
load finished after a failure commits nothing twice). Runs on every engine of the matrix
with the engine's own catalog (Sail's, or Spark's session catalog with Delta); a Hive
metastore shared by two JVMs is in ``tests/jvm/test_catalog_metastore.py``. Every table is
read back by delta-rs too, at the location the catalog gives.
"""

from __future__ import annotations

import datetime
import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import engines
import pytest

import sparkload as sl
from sparkload.common.literals import string_literal
from sparkload.common.naming import normalize_dataset_name
from sparkload.common.package import list_packages
from sparkload.common.sql import quote
from sparkload.common.system_columns import SYSTEM_COLUMNS
from sparkload.engine import capabilities
from sparkload.exceptions import PipelineStepFailed, SparkloadError
from sparkload.load.table import CatalogTable
from sparkload.pipeline import state as state_store
from sparkload.pipeline.state import STATE_TABLE

# The engine sessions that run this file (noxfile.py says why).
pytestmark = [pytest.mark.connect]

_schemas = itertools.count()
DAY = datetime.timedelta(days=1)
START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def schema_for(prefix: str, tmp_path: Path) -> str:
    """A schema name of its own for this test, in dlt's normal form: the dataset name a
    pipeline uses (``crm__x`` would be the dataset ``crm_x``)."""
    return normalize_dataset_name(f"{prefix}_{next(_schemas)}_{tmp_path.name[-12:]}")


@pytest.fixture
def catalog_pipeline(tmp_path: Path) -> Iterator[sl.Pipeline]:
    """A pipeline into a fresh schema of the engine's current catalog. The schema is made
    here with a location in this test's folder, as an administrator would make one, so the
    tables' files land there (sparkload's own ``CREATE SCHEMA`` is tested separately)."""
    probe = sl.pipeline(
        "probe", destination=sl.destinations.delta(tmp_path / "unused"), pipelines_dir=tmp_path
    )
    spark = probe.spark
    catalog = spark.catalog.currentCatalog()
    schema = schema_for("crm", tmp_path)
    location = tmp_path / "warehouse" / schema
    spark.sql(f"CREATE SCHEMA {quote(catalog)}.{quote(schema)} LOCATION {string_literal(str(location))}")
    yield sl.pipeline(
        "crm",
        destination=sl.destinations.delta(catalog=catalog),
        dataset_name=schema,
        pipelines_dir=tmp_path / "pipelines",
    )


def schema_name(pipeline: sl.Pipeline) -> str:
    assert pipeline.destination.catalog is not None
    return f"{quote(pipeline.destination.catalog)}.{quote(pipeline.dataset_name)}"


def full_name(pipeline: sl.Pipeline, table: str) -> str:
    return f"{schema_name(pipeline)}.{quote(table)}"


def by_name(pipeline: sl.Pipeline, table: str, order_by: str = "id") -> list[dict[str, Any]]:
    """Rows read through the catalog by the table's name, without bookkeeping columns."""
    rows = pipeline.spark.read.table(full_name(pipeline, table)).orderBy(order_by).collect()
    return [{k: v for k, v in row.asDict().items() if k not in SYSTEM_COLUMNS} for row in rows]


def by_delta_rs(pipeline: sl.Pipeline, table: str, order_by: str = "id") -> list[dict[str, Any]]:
    """The same table read by delta-rs at the location the catalog names."""
    found = pipeline.destination_dataset.table(table)
    assert isinstance(found, CatalogTable)
    rows = deltalake.DeltaTable(found.location()).to_pyarrow_table().to_pylist()
    rows.sort(key=lambda row: row[order_by])
    return [{k: v for k, v in row.items() if k not in SYSTEM_COLUMNS} for row in rows]


@sl.resource(primary_key="id", write_disposition="merge")
def users(day: int) -> Iterator[dict[str, Any]]:
    yield {"id": 1, "name": f"Ada {day}", "languages": ["en", "fr"][: 3 - day]}
    yield {"id": day + 1, "name": f"new on day {day}", "languages": ["de"]}


@sl.resource(write_disposition="append")
def events(day: int) -> Iterator[dict[str, Any]]:
    yield {"id": day, "what": f"event {day}"}


@sl.resource(write_disposition="replace")
def snapshot(day: int) -> Iterator[dict[str, Any]]:
    yield {"id": day, "total": day * 10}


@sl.resource(primary_key="id", write_disposition={"disposition": "merge", "strategy": "scd2"})
def dim(day: int) -> Iterator[dict[str, Any]]:
    yield {"id": 1, "tier": "gold" if day == 2 else "silver"}


@sl.resource(write_disposition="append")
def ticks(day: int, at: Any = sl.incremental("day")) -> Iterator[dict[str, Any]]:  # noqa: B008
    yield {"id": day, "day": day}  # the cursor moves every day, so every load commits a state


def day_of(day: int) -> list[Any]:
    return [users(day), events(day), snapshot(day), dim(day), ticks(day)]


@pytest.mark.jvm
@pytest.mark.spark_connect
def test_every_disposition_loads_into_tables_named_in_the_catalog(catalog_pipeline: sl.Pipeline) -> None:
    pipeline = catalog_pipeline
    first = pipeline.run(day_of(1))
    pipeline.run(day_of(2))

    listed = {
        row["tableName"] for row in pipeline.spark.sql(f"SHOW TABLES IN {schema_name(pipeline)}").collect()
    }
    assert listed == {"users", "users__languages", "events", "snapshot", "dim", "ticks", STATE_TABLE}
    assert first.dataset_uri == f"{pipeline.destination.catalog}.{pipeline.dataset_name}"

    expected_users = [
        {"id": 1, "name": "Ada 2"},
        {"id": 2, "name": "new on day 1"},
        {"id": 3, "name": "new on day 2"},
    ]
    for read in (by_name, by_delta_rs):
        assert read(pipeline, "users") == expected_users
        assert read(pipeline, "events") == [{"id": 1, "what": "event 1"}, {"id": 2, "what": "event 2"}]
        assert read(pipeline, "snapshot") == [{"id": 2, "total": 20}]
        languages = read(pipeline, "users__languages", order_by="value")
        # Ada's list shrank to ["en"] on day 2: the merge replaced her nested rows.
        assert sorted(row["value"] for row in languages) == ["de", "de", "en"]
    history = by_name(pipeline, "dim", order_by="_sparkload_valid_from")
    assert [(row["id"], row["tier"], row["_sparkload_valid_to"] is None) for row in history] == [
        (1, "silver", False),
        (1, "gold", True),
    ]
    assert pipeline.table("users").count() == 3


@pytest.mark.jvm
@pytest.mark.spark_connect
def test_a_new_working_directory_resumes_from_the_state_table_in_the_catalog(
    catalog_pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    seen: list[Any] = []

    @sl.resource(primary_key="id", write_disposition="merge")
    def orders(updated: Any = sl.incremental("updated", initial_value=0)) -> Iterator[dict[str, Any]]:  # noqa: B008
        seen.append(updated.last_value)
        for i in range(1, 6):
            if i > updated.last_value:
                yield {"id": i, "updated": i}

    catalog_pipeline.run(orders())
    fresh = sl.pipeline(
        "crm",
        destination=catalog_pipeline.destination,
        dataset_name=catalog_pipeline.dataset_name,
        pipelines_dir=tmp_path / "another_machine",
    )
    fresh.run(orders())
    assert seen == [0, 5]
    assert [row["id"] for row in by_name(fresh, "orders")] == [1, 2, 3, 4, 5]


@pytest.mark.jvm
def test_a_load_finished_after_a_failure_commits_nothing_twice(
    catalog_pipeline: sl.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every table commits, then the state commit fails: the next run finishes the package.
    It must recognise each table's commit by its load id through the catalog (the engine's
    history, or the log at the table's location) and not append or merge again."""
    pipeline = catalog_pipeline
    pipeline.run(day_of(1))

    def fail(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the state commit failed")

    with monkeypatch.context() as patch:
        patch.setattr(state_store, "write_destination", fail)
        with pytest.raises(PipelineStepFailed, match="the state commit failed"):
            pipeline.run(day_of(2))
    assert list_packages(pipeline.destination_dataset.staging_folder(pipeline.pipeline_name))
    versions = {
        name: pipeline.destination_dataset.table(name).version()
        for name in ("users", "events", "snapshot", "ticks")
    }

    pipeline.run()  # finishes the package left behind
    assert {name: pipeline.destination_dataset.table(name).version() for name in versions} == versions
    assert by_name(pipeline, "events") == [{"id": 1, "what": "event 1"}, {"id": 2, "what": "event 2"}]
    assert [row["id"] for row in by_delta_rs(pipeline, "users")] == [1, 2, 3]
    assert pipeline.state["_state_version"] == 2


@pytest.mark.jvm
def test_a_time_range_replaces_its_window_in_a_catalog_table(catalog_pipeline: sl.Pipeline) -> None:
    rows = [{"ts": START + i * DAY / 2, "n": i} for i in range(6)]  # two rows a day, 3 days

    factor = [1]

    @sl.resource()
    def readings(
        window: Any = sl.sources.intervals("ts", start=START, cron="@daily"),  # noqa: B008 (dlt's way)
    ) -> Iterator[dict[str, Any]]:
        for row in rows:
            if window.start <= row["ts"] < window.end:
                yield {**row, "n": row["n"] * factor[0]}

    catalog_pipeline.run(readings(), execution_time=START + 3 * DAY)
    factor[0] = 100
    catalog_pipeline.run(
        readings(),
        restate=["readings"],
        start=START + DAY,
        end=START + 2 * DAY,
        execution_time=START + 3 * DAY,
    )
    assert [row["n"] for row in by_name(catalog_pipeline, "readings", order_by="ts")] == [
        0,
        1,
        200,
        300,
        4,
        5,
    ]
    assert [row["n"] for row in by_delta_rs(catalog_pipeline, "readings", order_by="ts")] == [
        0,
        1,
        200,
        300,
        4,
        5,
    ]


@pytest.mark.jvm
def test_dropping_a_resource_drops_its_catalog_tables(catalog_pipeline: sl.Pipeline) -> None:
    pipeline = catalog_pipeline
    pipeline.run(day_of(1))
    pipeline.drop_resources(["users"])
    assert not pipeline.spark.catalog.tableExists(full_name(pipeline, "users"))
    assert not pipeline.spark.catalog.tableExists(full_name(pipeline, "users__languages"))
    assert pipeline.spark.catalog.tableExists(full_name(pipeline, "events"))
    assert sorted(pipeline.destination_dataset.user_tables()) == ["dim", "events", "snapshot", "ticks"]


@pytest.mark.jvm
def test_the_schema_is_created_when_missing_and_attach_finds_the_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if engines.current() == "embedded":
        # Sail's warehouse is relative to the engine's working directory: the embedded
        # engine's is this process's, so its tables land in the test's folder.
        monkeypatch.chdir(tmp_path)
    probe = sl.pipeline(
        "probe", destination=sl.destinations.delta(tmp_path / "unused"), pipelines_dir=tmp_path
    )
    catalog = probe.spark.catalog.currentCatalog()
    schema = schema_for("made", tmp_path)
    pipeline = sl.pipeline(
        "made",
        destination=sl.destinations.delta(catalog=catalog),
        dataset_name=schema,
        pipelines_dir=tmp_path / "pipelines",
    )
    try:
        pipeline.run([{"id": 1}], table_name="things")
        assert pipeline.spark.catalog.databaseExists(f"{quote(catalog)}.{quote(schema)}")
        attached = sl.attach("made", pipelines_dir=tmp_path / "pipelines")
        assert attached.destination == pipeline.destination
        assert attached.dataset_name == schema
        assert [row["id"] for row in attached.table("things").collect()] == [1]
    finally:
        for table in pipeline.destination_dataset.table_names():
            pipeline.destination_dataset.drop_table(table)


def test_staging_url_holds_the_packages_of_a_catalog_destination(tmp_path: Path) -> None:
    destination = sl.destinations.delta(catalog="main", staging_url=tmp_path / "staging")
    pipeline = sl.pipeline(
        "staged", destination=destination, dataset_name="crm", pipelines_dir=tmp_path / "p"
    )
    folder = pipeline.destination_dataset.staging_folder("staged")
    assert folder.uri == f"{tmp_path}/staging/main/crm/_sparkload_packages/staged"
    default = sl.pipeline(
        "local",
        destination=sl.destinations.delta(catalog="main"),
        dataset_name="crm",
        pipelines_dir=tmp_path / "p",
    )
    assert default.destination_dataset.staging_folder("local").uri.startswith(str(tmp_path / "p" / "local"))


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "one of the two"),
        (("/lake",), {"catalog": "main"}, "one of the two"),
        ((), {"catalog": " "}, "needs a catalog name"),
        (("/lake",), {"staging_url": "/staging"}, "staging_url= goes with catalog="),
    ],
)
def test_a_destination_is_a_path_or_a_catalog(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(SparkloadError, match=message):
        sl.destinations.delta(*args, **kwargs)


@pytest.mark.jvm
def test_a_history_this_process_cannot_read_stops_the_load_before_any_commit(
    catalog_pipeline: sl.Pipeline, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where the engine tells no history (Sail) and the table's files are out of this
    process's reach (a remote engine's relative warehouse), a repeated load could not be
    recognised: the load is refused, not made twice. Where the engine tells the history
    (Delta on Apache Spark), the files are never read and the load goes through."""
    pipeline = catalog_pipeline
    pipeline.run(day_of(1))
    before = by_name(pipeline, "users")
    tells_history = capabilities.commit_history(pipeline.spark, full_name(pipeline, "users"), 1) is not None
    monkeypatch.setattr(CatalogTable, "location", lambda self: str(tmp_path / "elsewhere" / self.name))
    if tells_history:
        pipeline.run(day_of(2))
        assert len(by_name(pipeline, "users")) == 3
        return
    with pytest.raises(PipelineStepFailed, match="cannot be read from this process") as failed:
        pipeline.run(day_of(2))
    assert "CREATE SCHEMA ... LOCATION" in str(failed.value)
    monkeypatch.undo()
    assert by_name(pipeline, "users") == before


CHILD = """
import sys
import sparkload as sl
from sparkload.common.literals import string_literal
from sparkload.common.sql import quote

home, machine, limit, schema = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
probe = sl.pipeline("probe", destination=sl.destinations.delta(home + "/unused"), pipelines_dir=home)
catalog = probe.spark.catalog.currentCatalog()
location = string_literal(home + "/warehouse/" + schema)
probe.spark.sql(f"CREATE SCHEMA IF NOT EXISTS {quote(catalog)}.{quote(schema)} LOCATION {location}")

@sl.resource(primary_key="id", write_disposition="merge")
def orders(updated=sl.incremental("updated", initial_value=0)):
    print("CURSOR", updated.last_value, flush=True)
    for i in range(1, limit + 1):
        if i > updated.last_value:
            yield {"id": i, "updated": i}

pipeline = sl.pipeline(
    "shared", destination=sl.destinations.delta(catalog=catalog), dataset_name=schema,
    pipelines_dir=home + "/" + machine,
)
pipeline.run(orders())
print("ROWS", pipeline.table("orders").count(), flush=True)
"""


@engines.engine_limit(
    "embedded",
    "connect",
    "cluster",
    reason="Sail 0.7.2's catalog lives in the memory of one Spark session: another process's "
    "session, even on the same server, sees none of its tables",
)
@engines.engine_limit(
    "spark",
    reason="a JVM session sparkload starts from a master URL has Spark's in-memory catalog; "
    "a Hive metastore persists (tests/jvm/test_catalog_metastore.py)",
)
def test_a_second_process_finds_the_catalog_tables_and_state_of_the_first(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    schema = schema_for("shared", tmp_path)

    def run(machine: str, limit: int) -> str:
        done = subprocess.run(
            [sys.executable, str(script), str(tmp_path), machine, str(limit), schema],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,  # where an engine's relative warehouse goes
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    assert "CURSOR 0" in run("machine_a", 3)
    second = run("machine_b", 5)
    assert "CURSOR 3" in second
    assert "ROWS 5" in second
