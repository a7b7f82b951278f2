"""A bucket as the destination, on the embedded engine: a real S3 API server on 127.0.0.1
(moto's server mode, ``tests/s3_server.py``), a local working folder beside it, every table
read back from the bucket by delta-rs as well as through Spark."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import deltalake
import engines
import pytest
from cli_process import sparkload, succeeded
from conftest import user_columns

import sparkload as sl
from sparkload.engine.session import resolve_spark
from sparkload.exceptions import ConfigValueError, EngineError, InvalidNameError
from sparkload.load import compaction
from sparkload.pipeline.state import STATE_TABLE
from sparkload.pipeline.trace_file import TRACE_FILE

if TYPE_CHECKING:
    from s3_server import S3Bucket, S3Server

# The S3 server and bucket fixtures (imported by pytest only, so that it rewrites asserts).
pytest_plugins = ("s3_server",)
# Each engine session runs the tests marked for it, those whose statements its engine runs
# on the bucket (noxfile.py says which); the settings' checks are the client's own, the same
# on every engine, and run on the embedded engine only.
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.usefixtures("one_writer_on_the_jvm"),
]


def bucket_pipeline(
    bucket: S3Bucket, tmp_path: Path, name: str = "orders", working: str = "work", **kwargs: Any
) -> sl.Pipeline:
    return sl.pipeline(
        name,
        destination=sl.destinations.delta(f"{bucket.url}/lake"),
        dataset_name="shop",
        pipelines_dir=tmp_path / working,
        **kwargs,
    )


def bucket_rows(bucket: S3Bucket, pipeline: sl.Pipeline, table: str, order_by: str) -> list[dict[str, Any]]:
    """The table as delta-rs reads it from the bucket, with the server's endpoint and keys."""
    table_uri = f"{pipeline.dataset_uri}/{table}"
    assert table_uri.startswith(f"{bucket.url}/lake/")
    found = deltalake.DeltaTable(table_uri, storage_options=bucket.server.storage_options())
    rows = user_columns(found.to_pyarrow_table().to_pylist())
    return sorted(rows, key=lambda row: row[order_by])


def engine_rows(pipeline: sl.Pipeline, table: str, order_by: str) -> list[dict[str, Any]]:
    rows = [row.asDict(recursive=True) for row in pipeline.table(table).collect()]
    return sorted(user_columns(rows), key=lambda row: row[order_by])


@pytest.mark.connect
@pytest.mark.cluster
@pytest.mark.jvm
def test_local_working_folder_beside_a_bucket_destination_passes_the_engine_check(
    s3_bucket: S3Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine reads the working folder's marker and the bucket's each in a read of its
    own: one read of both returned the rows of one filesystem only, and the check failed."""
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    pipeline.run([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], table_name="orders")

    expected = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert bucket_rows(s3_bucket, pipeline, "orders", "id") == expected
    assert engine_rows(pipeline, "orders", "id") == expected


@engines.engine_limit(
    "connect",
    "cluster",
    reason="a Sail server in another process takes its S3 settings from its own environment, "
    "so the AWS_ALLOW_HTTP set in the client does not reach it",
)
@engines.engine_limit(
    "spark",
    reason="a JVM on a local master reads the bucket through S3A, which AWS_ALLOW_HTTP does not "
    "govern, and is part of this process, so no folder check is made",
)
@engines.engine_limit(
    "spark-connect",
    reason="Apache Spark's Spark Connect server reads the bucket through S3A with the settings "
    "it was started with, which AWS_ALLOW_HTTP in the client does not govern",
)
@pytest.mark.connect
@pytest.mark.cluster
@pytest.mark.jvm
@pytest.mark.spark_connect
def test_the_folder_the_engine_cannot_read_is_named(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """Read one by one, the markers still tell which folder the engine misses: with
    AWS_ALLOW_HTTP=false set by the user (and kept), the engine refuses the http:// endpoint
    that pyarrow writes to, so the bucket is named and the local working folder is not."""
    os.environ["AWS_ALLOW_HTTP"] = "false"
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    with pytest.raises(EngineError) as refused:
        pipeline.run([{"id": 1}], table_name="orders")
    message = str(refused.value)
    assert f"in the destination ({s3_bucket.url}/lake/shop):" in message
    assert "working folder" not in message


@pytest.mark.skipif(
    engines.current() != "spark-connect",
    reason="delta-spark's log store behind Apache Spark Connect; a classic JVM's refusal is "
    "tests/jvm/test_bucket_log_store.py, and Sail makes each commit a conditional PUT",
)
@pytest.mark.spark_connect
def test_a_bucket_on_delta_sparks_default_log_store_is_refused_behind_spark_connect(
    s3_bucket: S3Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server was started without a log store for S3, so two writers through two servers
    (or a server and a JVM) could each take a commit's version: refused before writing, as
    on a classic JVM session, until one driver at a time is stated or the store is chosen."""
    monkeypatch.delenv("ENGINE__DELTA_LOG_STORE")
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    with pytest.raises(ConfigValueError) as refused:
        pipeline.run([{"id": 1}], table_name="orders")
    message = str(refused.value)
    for named in ("delta-spark", "spark.delta.logStore.s3.impl", "S3DynamoDBLogStore", "delta_log_store"):
        assert named in message
    assert s3_bucket.server.secret_key not in message
    assert s3_bucket.object_keys() == []


def test_a_url_as_pipelines_dir_is_refused_naming_the_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    destination = sl.destinations.delta(tmp_path / "lake")
    with pytest.raises(InvalidNameError) as refused:
        sl.pipeline("orders", destination=destination, pipelines_dir="s3://lake-bucket/work")
    assert refused.value.argument == "pipelines_dir"
    assert "'s3://lake-bucket/work'" in str(refused.value)
    assert "use a local folder" in str(refused.value)

    # Credentials in such a URL are not repeated in the error.
    with pytest.raises(InvalidNameError) as refused:
        sl.pipeline("orders", destination=destination, pipelines_dir="s3://key:hush@lake-bucket/w")
    assert "hush" not in str(refused.value)

    monkeypatch.setenv("SPARKLOAD_PIPELINES_DIR", "gs://lake-bucket/work")
    with pytest.raises(InvalidNameError) as refused:
        sl.pipeline("orders", destination=destination)
    assert refused.value.argument == "SPARKLOAD_PIPELINES_DIR"

    with pytest.raises(InvalidNameError):
        sl.attach("orders", pipelines_dir="s3://lake-bucket/work")
    # No local folder named after the URL's scheme was made on the way.
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(":")]

    # A file:// URL is the local folder it names.
    local = sl.pipeline("orders", destination=destination, pipelines_dir=f"file://{tmp_path}/work")
    assert local.working_dir == tmp_path / "work" / "orders"


@pytest.mark.jvm
def test_an_http_endpoint_works_without_aws_allow_http(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    assert "AWS_ALLOW_HTTP" not in os.environ
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    pipeline.run([{"id": 1}], table_name="orders")
    assert bucket_rows(s3_bucket, pipeline, "orders", "id") == [{"id": 1}]
    assert os.environ["AWS_ALLOW_HTTP"] == "true"


@pytest.mark.jvm
def test_a_value_the_user_set_is_kept(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    os.environ["AWS_ALLOW_HTTP"] = "1"
    bucket_pipeline(s3_bucket, tmp_path).run([{"id": 1}], table_name="orders")
    assert os.environ["AWS_ALLOW_HTTP"] == "1"


def write_secrets(text: str) -> None:
    folder = Path(os.environ["SPARKLOAD_PROJECT_DIR"]) / ".sparkload"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "secrets.toml").write_text(text)


@pytest.mark.jvm
def test_credentials_and_endpoint_from_secrets_under_dlt_names(
    s3_bucket: S3Bucket, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With no AWS variable set, dlt's ``[destination.filesystem.credentials]`` reach both
    pyarrow and the engine; the secret is in no log line and not in the trace."""
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL"):
        os.environ.pop(variable)
    write_secrets(
        "[destination.filesystem.credentials]\n"
        f'aws_access_key_id = "{s3_bucket.server.access_key}"\n'
        f'aws_secret_access_key = "{s3_bucket.server.secret_key}"\n'
        'region_name = "us-east-1"\n'
        f'endpoint_url = "{s3_bucket.server.endpoint}"\n'
    )
    caplog.set_level(logging.DEBUG)
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    pipeline.run([{"id": 1}, {"id": 2}], table_name="orders")

    assert bucket_rows(s3_bucket, pipeline, "orders", "id") == [{"id": 1}, {"id": 2}]
    assert s3_bucket.server.secret_key not in caplog.text
    assert s3_bucket.server.secret_key not in (pipeline.working_dir / TRACE_FILE).read_text()


def test_config_that_contradicts_an_aws_variable_is_refused_without_either_value(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    write_secrets(
        "[destination.filesystem.credentials]\n"
        f'aws_secret_access_key = "other-{s3_bucket.server.secret_key}"\n'
    )
    with pytest.raises(ConfigValueError) as refused:
        bucket_pipeline(s3_bucket, tmp_path)
    message = str(refused.value)
    assert "destination.filesystem.credentials.aws_secret_access_key" in message
    assert "AWS_SECRET_ACCESS_KEY" in message
    assert s3_bucket.server.secret_key not in message


@sl.resource(primary_key="id", write_disposition="merge")
def customers(rows: list[dict[str, Any]]) -> Any:
    yield from rows


# A JVM Spark's loads into a bucket through s3a run in tests/standalone, on a cluster whose
# executors cannot see the working folder: `-m jvm` does not repeat them on local[2], and
# Apache Spark Connect, whose server is such a JVM, loads into a bucket in the cursor's test
# below.
@pytest.mark.connect
@pytest.mark.cluster
def test_append_replace_merge_with_nested_tables_and_scd2(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    pipeline = bucket_pipeline(s3_bucket, tmp_path)

    pipeline.run([{"id": 1}, {"id": 2}], table_name="events", write_disposition="append")
    pipeline.run([{"id": 3}], table_name="events", write_disposition="append")
    assert bucket_rows(s3_bucket, pipeline, "events", "id") == [{"id": 1}, {"id": 2}, {"id": 3}]

    pipeline.run([{"id": 1}, {"id": 2}], table_name="snapshot", write_disposition="replace")
    pipeline.run([{"id": 9}], table_name="snapshot", write_disposition="replace")
    assert bucket_rows(s3_bucket, pipeline, "snapshot", "id") == [{"id": 9}]

    pipeline.run(
        customers([{"id": 1, "name": "a", "tags": ["x", "y"]}, {"id": 2, "name": "b", "tags": ["z"]}])
    )
    pipeline.run(customers([{"id": 1, "name": "a2", "tags": ["w"]}]))
    assert bucket_rows(s3_bucket, pipeline, "customers", "id") == [
        {"id": 1, "name": "a2"},
        {"id": 2, "name": "b"},
    ]
    assert sorted(row["value"] for row in bucket_rows(s3_bucket, pipeline, "customers__tags", "value")) == [
        "w",
        "z",
    ]
    assert engine_rows(pipeline, "customers", "id") == bucket_rows(s3_bucket, pipeline, "customers", "id")

    scd2 = {"disposition": "merge", "strategy": "scd2"}
    pipeline.run([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], table_name="dim", write_disposition=scd2)
    pipeline.run([{"id": 1, "v": "a"}, {"id": 2, "v": "c"}], table_name="dim", write_disposition=scd2)
    found = deltalake.DeltaTable(
        f"{pipeline.dataset_uri}/dim", storage_options=s3_bucket.server.storage_options()
    ).to_pyarrow_table()
    versions = sorted((row["v"], row["_sparkload_valid_to"] is None) for row in found.to_pylist())
    assert versions == [("a", True), ("b", False), ("c", True)]


@sl.resource(write_disposition="append")
def numbered(upto: int, updated: Any = sl.incremental("n")) -> Any:  # noqa: B008 (dlt's form)
    yield from ({"n": n} for n in range(1, upto + 1))


@pytest.mark.connect
@pytest.mark.cluster
@pytest.mark.spark_connect
def test_a_cursor_resumes_from_the_bucket_in_an_empty_working_folder(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    first = bucket_pipeline(s3_bucket, tmp_path, working="machine_a")
    first.run(numbered(3))

    # Another machine: the same pipeline, nothing in its working folder.
    second = bucket_pipeline(s3_bucket, tmp_path, working="machine_b")
    assert not any((tmp_path / "machine_b" / "orders").glob("state*"))
    second.run(numbered(5))

    assert bucket_rows(s3_bucket, second, "numbered", "n") == [{"n": n} for n in range(1, 6)]


@pytest.mark.connect
@pytest.mark.cluster
@pytest.mark.jvm
def test_a_missing_bucket_fails_in_seconds_naming_it(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    pipeline = sl.pipeline(
        "orders",
        destination=sl.destinations.delta("s3://no-such-lake-bucket/lake"),
        pipelines_dir=tmp_path / "work",
    )
    resolve_spark()  # the engine's start (a JVM's takes longer than the bound) is not the failure's
    started = time.monotonic()
    with pytest.raises(EngineError) as refused:
        pipeline.run([{"id": 1}], table_name="orders")
    assert time.monotonic() - started < 10
    assert "no-such-lake-bucket" in str(refused.value)


@pytest.mark.connect
@pytest.mark.cluster
@pytest.mark.jvm
def test_refused_keys_fail_in_seconds_naming_the_bucket(s3_refusing_keys: S3Server, tmp_path: Path) -> None:
    pipeline = sl.pipeline(
        "orders",
        destination=sl.destinations.delta("s3://keyed-lake-bucket/lake"),
        pipelines_dir=tmp_path / "work",
    )
    resolve_spark()  # the engine's start (a JVM's takes longer than the bound) is not the failure's
    started = time.monotonic()
    with pytest.raises(EngineError) as refused:
        pipeline.run([{"id": 1}], table_name="orders")
    assert time.monotonic() - started < 10
    message = str(refused.value)
    assert "keyed-lake-bucket" in message
    assert s3_refusing_keys.secret_key not in message


# -- everything beside the data ----------------------------------------------------------------


@pytest.mark.connect
@pytest.mark.cluster
def test_a_catalog_destination_stages_its_packages_in_a_bucket(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """``staging_url`` in a bucket, the working folder local: the normalized package waits
    in the bucket, the load reads it from there and clears it."""
    probe = sl.pipeline(
        "probe", destination=sl.destinations.delta(tmp_path / "unused"), pipelines_dir=tmp_path
    )
    catalog = probe.spark.catalog.currentCatalog()
    schema = f"staged_{tmp_path.name[-12:]}".lower()
    probe.spark.sql(f"CREATE SCHEMA `{catalog}`.`{schema}` LOCATION '{tmp_path / 'warehouse'}'")
    destination = sl.destinations.delta(catalog=catalog, staging_url=f"{s3_bucket.url}/staging")
    pipeline = sl.pipeline(
        "staged", destination=destination, dataset_name=schema, pipelines_dir=tmp_path / "work"
    )
    try:
        pipeline.extract([{"id": 1, "tags": ["x"]}, {"id": 2, "tags": []}], table_name="things")
        pipeline.normalize()
        prefix = f"staging/{catalog}/{schema}/_sparkload_packages/staged/"

        def package_files() -> list[str]:  # the folder's own marker object aside
            return [key for key in s3_bucket.object_keys() if key.startswith(prefix) and key != prefix]

        assert package_files(), "the package is not in the bucket"
        pipeline.load()

        assert sorted(row["id"] for row in pipeline.table("things").collect()) == [1, 2]
        assert not package_files(), "the package stayed"
    finally:
        for table in pipeline.destination_dataset.table_names():
            pipeline.destination_dataset.drop_table(table)


@pytest.mark.cluster
def test_the_state_table_in_a_bucket_is_compacted(
    s3_bucket: S3Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "EVERY", 3)
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    for upto in range(1, 5):  # a new cursor value each run: a state version each
        pipeline.run(numbered(upto))

    state = deltalake.DeltaTable(
        f"{pipeline.dataset_uri}/{STATE_TABLE}", storage_options=s3_bucket.server.storage_options()
    )
    tags = [entry.get("userMetadata", "") for entry in state.history()]
    assert [tag for tag in tags if tag.startswith("compact:state:")], tags
    versions = sorted(row["version"] for row in state.to_pyarrow_table(columns=["version"]).to_pylist())
    assert versions == [1, 2, 3, 4]
    fresh = bucket_pipeline(s3_bucket, tmp_path, working="elsewhere")
    fresh.run(numbered(5))
    assert bucket_rows(s3_bucket, fresh, "numbered", "n") == [{"n": n} for n in range(1, 6)]


@pytest.mark.cluster
def test_drop_of_a_resource_and_of_its_state_in_a_bucket(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    pipeline.run(numbered(3))
    pipeline.run([{"id": 1}], table_name="kept")

    pipeline.drop_resources(["numbered"])

    assert "numbered" not in pipeline.destination_dataset.table_names()
    assert not [key for key in s3_bucket.object_keys() if "/numbered/" in key]
    assert bucket_rows(s3_bucket, pipeline, "kept", "id") == [{"id": 1}]
    # The cursor went with it: the next run loads every row again, into a new table.
    pipeline.run(numbered(2))
    assert bucket_rows(s3_bucket, pipeline, "numbered", "n") == [{"n": 1}, {"n": 2}]


@pytest.mark.connect
@pytest.mark.cluster
def test_attach_to_a_pipeline_whose_destination_is_a_bucket(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    bucket_pipeline(s3_bucket, tmp_path).run(numbered(3))

    attached = sl.attach("orders", pipelines_dir=tmp_path / "work")
    assert attached.dataset_uri == f"{s3_bucket.url}/lake/shop"
    assert sorted(row["n"] for row in attached.table("numbered").collect()) == [1, 2, 3]
    attached.run(numbered(4))
    assert bucket_rows(s3_bucket, attached, "numbered", "n") == [{"n": n} for n in range(1, 5)]


@pytest.mark.skipif(
    engines.current() == "spark",
    reason="each CLI command starts a JVM of its own, past the test's time limit on a busy "
    "two-core machine; what the CLI reads in a bucket is engine-independent (embedded run)",
)
def test_the_cli_reads_and_drops_a_pipeline_in_a_bucket_without_showing_the_keys(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    pipeline.run(numbered(3))
    pipeline.run([{"id": 1}], table_name="kept")
    work = tmp_path / "work"
    outputs = []
    for action in ("info", "trace", "schema"):
        result = sparkload("pipeline", "orders", action, "--pipelines-dir", work)
        outputs.append(succeeded(result) + result.stderr)
    assert f"{s3_bucket.url}/lake" in outputs[0]
    assert "numbered" in outputs[2]
    result = sparkload("pipeline", "orders", "drop", "--resources", "numbered", "-y", "--pipelines-dir", work)
    outputs.append(succeeded(result) + result.stderr)

    assert not [key for key in s3_bucket.object_keys() if "/numbered/" in key]
    assert bucket_rows(s3_bucket, pipeline, "kept", "id") == [{"id": 1}]
    for output in outputs:
        assert s3_bucket.server.secret_key not in output
        assert s3_bucket.server.access_key not in output
    # Nor in a file of the working folder (the trace, the state's copy, the schemas).
    for file in work.rglob("*"):
        assert not file.is_file() or s3_bucket.server.secret_key.encode() not in file.read_bytes(), file
