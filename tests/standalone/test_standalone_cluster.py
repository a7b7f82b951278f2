"""sparkload on a real Apache Spark standalone cluster (``tests/spark_standalone.py``) whose
executors cannot see the driver's disk, with the tables in a bucket on a real S3 API server
(``tests/s3_server.py``). Run by ``nox -s standalone`` (``pytest --run-standalone``)."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import deltalake
import pytest

if TYPE_CHECKING:
    from s3_server import S3Bucket
    from spark_standalone import StandaloneCluster

# The bucket server's and the cluster's fixtures (imported by pytest, which rewrites asserts).
pytest_plugins = ("s3_server", "spark_standalone")


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


def test_a_task_cannot_read_the_drivers_temporary_files(cluster_spark: Any) -> None:
    """What the driver writes with ``tempfile`` (as sparkload's UTF-8 copies of a file
    source are) is on its disk alone, as on a real cluster."""
    handle, name = tempfile.mkstemp(suffix=".txt")
    with open(handle, "w") as out:
        out.write(uuid.uuid4().hex)
    with pytest.raises(Exception, match="FileNotFoundException|does not exist") as failure:
        cluster_spark.read.text(name).collect()
    assert name in str(failure.value)


def test_the_workers_share_the_disk_beside_the_tests_base_folder(
    cluster_spark: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Only pytest's base temporary folder is hidden, not all of ``/tmp``: a checkout there
    keeps the virtualenv whose PySpark the Workers start from."""
    beside = tmp_path_factory.getbasetemp().parent / f"shared-with-workers-{uuid.uuid4().hex}.txt"
    token = uuid.uuid4().hex
    beside.write_text(token)
    try:
        assert [row.value for row in cluster_spark.read.text(str(beside)).collect()] == [token]
    finally:
        beside.unlink()
