"""A JVM Spark that sparkload starts (``SPARKLOAD_SPARK_MASTER=local[1]``) and a bucket as
the destination, on a real S3 API server on 127.0.0.1 (``tests/s3_server.py``).

The JVM gets hadoop-aws and the ``fs.s3a.*`` settings from the standard AWS variables, as a
cluster's session does. delta-spark's default log store for S3 keeps two writers apart only
inside one driver, so sparkload refuses a bucket until the log store is chosen (see
``engine/object_store.py``). Each case starts a JVM of its own, in a process of its own: the
log store is fixed when the JVM starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import deltalake
import pytest

from sparkload.engine.object_store import SINGLE_DRIVER_LOG_STORE

if TYPE_CHECKING:
    from s3_server import S3Bucket, S3Server

pytest_plugins = ("s3_server",)

RUN = """
import sys
import sparkload as sl
from sparkload.exceptions import ConfigValueError

pipeline = sl.pipeline("orders", destination=sl.destinations.delta(sys.argv[2]),
                       dataset_name="shop", pipelines_dir=sys.argv[1] + "/work")
"""


def run_script(code: str, tmp_path: Path, lake: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a process of its own, on a JVM sparkload starts, with the test's AWS
    variables (the bucket fixture's) and ``env``."""
    variables = {
        k: v for k, v in os.environ.items() if k not in ("SPARKLOAD_SPARK_REMOTE", "ENGINE__DELTA_LOG_STORE")
    }
    variables.update(SPARKLOAD_SPARK_MASTER="local[1]", **env)
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(RUN) + textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path), lake],
        capture_output=True,
        text=True,
        timeout=600,
        env=variables,
    )


def test_a_bucket_on_the_default_log_store_is_refused_before_writing(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    done = run_script(
        """
        try:
            pipeline.run([{"id": 1}], table_name="orders")
        except ConfigValueError as exc:
            print("REFUSED", exc)
        """,
        tmp_path,
        f"s3a://{s3_bucket.name}/lake",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "REFUSED the JVM Spark engine (delta-spark)" in done.stdout
    for named in ("spark.delta.logStore.s3a.impl", "S3DynamoDBLogStore", "delta_log_store"):
        assert named in done.stdout
    assert s3_bucket.server.secret_key not in done.stdout + done.stderr
    assert s3_bucket.object_keys() == []


@pytest.mark.timeout(2 * 600)  # two JVM starts, each bounded as run_script bounds it
def test_a_jvm_sparkload_starts_merges_into_s3a_and_s3_urls_with_hadoop_aws(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    """One driver at a time, stated in config: the JVM starts with that log store, and loads
    through S3A into ``s3a://`` and ``s3://`` URLs alike; delta-rs reads the tables back."""
    for scheme in ("s3a", "s3"):
        done = run_script(
            """
            import pyspark
            @sl.resource(primary_key="id", write_disposition="merge")
            def users(rows):
                yield from rows
            pipeline.run(users([{"id": 1, "name": "a", "tags": ["x"]}, {"id": 2, "name": "b", "tags": []}]))
            pipeline.run(users([{"id": 1, "name": "a2", "tags": ["y", "z"]}]))
            conf = pipeline.spark.sparkContext.getConf()
            print("MASTER", pipeline.spark.sparkContext.master)
            print("STORE", *(conf.get(f"spark.delta.logStore.{s}.impl") for s in ("s3a", "s3")))
            """,
            tmp_path / scheme,
            f"{scheme}://{s3_bucket.name}/{scheme}-lake",
            ENGINE__DELTA_LOG_STORE=SINGLE_DRIVER_LOG_STORE,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "MASTER local[1]" in done.stdout
        assert f"STORE {SINGLE_DRIVER_LOG_STORE} {SINGLE_DRIVER_LOG_STORE}" in done.stdout
        options = s3_bucket.server.storage_options()
        users = deltalake.DeltaTable(
            f"s3://{s3_bucket.name}/{scheme}-lake/shop/users", storage_options=options
        )
        rows = sorted((row["id"], row["name"]) for row in users.to_pyarrow_table().to_pylist())
        assert rows == [(1, "a2"), (2, "b")]
        tags = deltalake.DeltaTable(
            f"s3://{s3_bucket.name}/{scheme}-lake/shop/users__tags", storage_options=options
        )
        assert sorted(row["value"] for row in tags.to_pyarrow_table().to_pylist()) == ["y", "z"]


def test_a_jvm_sparkload_started_before_the_aws_variables_were_set_loads_into_a_bucket_with_them(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    """The JVM of a first pipeline (a local folder, no AWS variables yet) serves the next
    pipeline of the process, into a bucket with the variables set since: a JVM never sees
    its process's later environment, so sparkload hands the session the settings then."""
    done = run_script(
        """
        import os
        aws = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}
        local = sl.pipeline("local", destination=sl.destinations.delta(sys.argv[1] + "/local-lake"),
                            pipelines_dir=sys.argv[1] + "/local-work")
        local.run([{"id": 0}], table_name="warm_up")
        os.environ.update(aws)
        pipeline.run([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], table_name="orders")
        print("SAME JVM", pipeline.spark is local.spark)
        """,
        tmp_path,
        f"s3a://{s3_bucket.name}/lake",
        ENGINE__DELTA_LOG_STORE=SINGLE_DRIVER_LOG_STORE,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SAME JVM True" in done.stdout
    assert s3_bucket.server.secret_key not in done.stdout + done.stderr
    orders = deltalake.DeltaTable(
        f"s3://{s3_bucket.name}/lake/shop/orders", storage_options=s3_bucket.server.storage_options()
    )
    rows = sorted((row["id"], row["name"]) for row in orders.to_pyarrow_table().to_pylist())
    assert rows == [(1, "a"), (2, "b")]


def test_a_jvm_sparkload_started_writes_a_bucket_at_the_endpoint_of_the_settings_now(
    s3_bucket: S3Bucket, another_s3_server: S3Server, tmp_path: Path
) -> None:
    """The same bucket name on two servers: a load into it through the first, then the
    AWS variables point at the second and the next pipeline of the process loads there, not
    through the client Hadoop cached for the bucket at the first load."""
    another_s3_server.create_bucket(s3_bucket.name)
    done = run_script(
        f"""
        import os
        pipeline.run([{{"id": 1}}], table_name="first")
        os.environ["AWS_ENDPOINT_URL"] = {another_s3_server.endpoint!r}
        second = sl.pipeline("orders", destination=sl.destinations.delta(sys.argv[2]),
                             dataset_name="shop", pipelines_dir=sys.argv[1] + "/work-2")
        second.run([{{"id": 2}}], table_name="second")
        print("SAME JVM", second.spark is pipeline.spark)
        """,
        tmp_path,
        f"s3a://{s3_bucket.name}/lake",
        ENGINE__DELTA_LOG_STORE=SINGLE_DRIVER_LOG_STORE,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SAME JVM True" in done.stdout

    def tables(server: S3Server) -> dict[str, list[int]]:
        found = {}
        for table in ("first", "second"):
            uri = f"s3://{s3_bucket.name}/lake/shop/{table}"
            if deltalake.DeltaTable.is_deltatable(uri, storage_options=server.storage_options()):
                rows = deltalake.DeltaTable(uri, storage_options=server.storage_options()).to_pyarrow_table()
                found[table] = rows.column("id").to_pylist()
        return found

    assert tables(s3_bucket.server) == {"first": [1]}
    assert tables(another_s3_server) == {"second": [2]}
