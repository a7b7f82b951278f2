"""sparkload on a real Apache Spark standalone cluster (``tests/spark_standalone.py``) whose
executors cannot see the driver's disk, with the tables in a bucket on a real S3 API server
(``tests/s3_server.py``). Run by ``nox -s standalone`` (``pytest --run-standalone``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import deltalake
import pyarrow.fs
import pytest

import sparkload as sl
from sparkload.engine.session import release_session, session_for
from sparkload.exceptions import EngineError

if TYPE_CHECKING:
    from s3_server import S3Bucket
    from spark_standalone import StandaloneCluster

# The bucket server's and the cluster's fixtures (imported by pytest, which rewrites asserts).
pytest_plugins = ("s3_server", "spark_standalone")


@pytest.fixture(scope="module")
def _cluster_session_released(spark_standalone: StandaloneCluster) -> Iterator[str]:
    """The master's URL; sparkload's session to it is stopped after the module's tests."""
    yield spark_standalone.master_url
    release_session(spark_standalone.master_url)


@pytest.fixture
def cluster_spark(_cluster_session_released: str, s3_bucket: S3Bucket) -> Any:
    """sparkload's own session on the cluster's master, started as a pipeline starts it
    (``session_for`` the ``spark://`` URL; one per URL) with the bucket server's AWS
    variables set, which its S3A settings are made from."""
    return session_for(_cluster_session_released)


@pytest.fixture
def on_cluster(
    spark_standalone: StandaloneCluster, cluster_spark: Any, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """Pipelines of this test run on the cluster (``SPARKLOAD_SPARK_MASTER``)."""
    monkeypatch.setenv("SPARKLOAD_SPARK_MASTER", spark_standalone.master_url)
    return cluster_spark


def test_the_cluster_has_two_workers_and_the_session_runs_on_them(
    spark_standalone: StandaloneCluster,
    cluster_spark: Any,
) -> None:
    assert spark_standalone.alive_workers() == 2
    assert cluster_spark.sparkContext.master == spark_standalone.master_url
    assert cluster_spark.range(1000).repartition(4).count() == 1000


def test_a_task_cannot_read_a_file_on_the_drivers_disk_but_reads_it_from_the_bucket(
    cluster_spark: Any,
    s3_bucket: S3Bucket,
    tmp_path: Path,
) -> None:
    token = uuid.uuid4().hex
    local = tmp_path / "driver-only.txt"
    local.write_text(token)
    # The driver lists the file (it is on its disk); the task that opens it runs on an
    # executor, whose mount namespace has an empty folder there.
    with pytest.raises(Exception, match="FileNotFoundException|does not exist") as failure:
        cluster_spark.read.text(str(local)).collect()
    assert str(local) in str(failure.value)
    # The same file in the bucket is read by the same executors, through S3A.
    remote = f"{s3_bucket.url}/driver-copy.txt"
    cluster_spark.createDataFrame([(token,)], "value string").coalesce(1).write.text(remote)
    assert [row.value for row in cluster_spark.read.text(remote).collect()] == [token]


def test_the_session_writes_delta_tables_in_the_bucket_that_delta_rs_reads(
    cluster_spark: Any,
    s3_bucket: S3Bucket,
) -> None:
    table = f"{s3_bucket.url}/lake/numbers"
    cluster_spark.range(10).write.format("delta").save(table)
    cluster_spark.range(10, 15).write.format("delta").mode("append").save(table)
    rows = deltalake.DeltaTable(table, storage_options=s3_bucket.server.storage_options()).to_pyarrow_table()
    assert sorted(rows.column("id").to_pylist()) == list(range(15))


def test_a_pipeline_fails_before_extracting_naming_the_working_folder_the_executors_cannot_see(
    on_cluster: Any,  # noqa: ARG001
    s3_bucket: S3Bucket,
    tmp_path: Path,
) -> None:
    """Extracted items wait in the pipeline's working folder, a local one, and the engine
    reads them from there: the executors of a cluster cannot, so the run stops before
    extracting, naming that folder, and the bucket gets no table."""

    @sl.resource(primary_key="id", write_disposition="merge")
    def users() -> Iterator[dict[str, Any]]:
        yield {"id": 1, "name": "ada", "address": {"city": "London"}, "langs": ["en", "fr"]}

    working = tmp_path / "work"
    destination = sl.destinations.delta(f"{s3_bucket.url}/lake")
    pipeline = sl.pipeline("on_cluster", destination=destination, pipelines_dir=working)
    with pytest.raises(EngineError, match="cannot read files that this process writes in") as failure:
        pipeline.run(users)
    message = str(failure.value)
    assert f"the pipeline's working folder ({working}" in message
    assert "the destination (" not in message  # the bucket the executors do read
    assert not _keys(s3_bucket, "lake/on_cluster_dataset/users/")


def _keys(bucket: S3Bucket, prefix: str) -> list[str]:
    store = pyarrow.fs.S3FileSystem(
        access_key=bucket.server.access_key,
        secret_key=bucket.server.secret_key,
        endpoint_override=bucket.server.endpoint,
        region="us-east-1",
    )
    selector = pyarrow.fs.FileSelector(f"{bucket.name}/{prefix}", allow_not_found=True, recursive=True)
    return [info.path for info in store.get_file_info(selector)]
