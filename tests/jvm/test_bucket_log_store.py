"""A JVM Spark that sparkload starts (``SPARKLOAD_SPARK_MASTER=local[1]``) and a bucket as
the destination, on a real S3 API server on 127.0.0.1 (``tests/s3_server.py``).

The JVM gets hadoop-aws and the ``fs.s3a.*`` settings from the standard AWS variables, as a
cluster's session does. delta-spark's default log store for S3 keeps two writers apart only
inside one driver, so sparkload refuses a bucket until the log store is chosen (see
``engine/object_store.py``). The log store and the AWS variables a JVM starts with are fixed
when it starts, so the cases run in processes of their own, each starting its JVM; a JVM
start is the costly part, so each process runs, one after the other, the cases that start
alike (``started_bare``, ``started_for_buckets``), each on a bucket of its own, and each
test checks its case's part of the output."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import deltalake
import pytest

from sparkload.engine.object_store import SINGLE_DRIVER_LOG_STORE

if TYPE_CHECKING:
    from s3_server import S3Bucket, S3Server

pytest_plugins = ("s3_server",)

RUN = """
import os
import sys
import sparkload as sl
from sparkload.exceptions import ConfigValueError

def delta_pipeline(name, lake, work):
    return sl.pipeline(name, destination=sl.destinations.delta(lake), dataset_name="shop",
                       pipelines_dir=sys.argv[1] + "/" + work)
"""


def run_script(code: str, tmp_path: Path, *lakes: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a process of its own, on a JVM sparkload starts, with this process's AWS
    variables and ``env``; ``lakes`` are its ``sys.argv[2:]``."""
    variables = {
        k: v for k, v in os.environ.items() if k not in ("SPARKLOAD_SPARK_REMOTE", "ENGINE__DELTA_LOG_STORE")
    }
    variables.update(SPARKLOAD_SPARK_MASTER="local[1]", **env)
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(RUN) + textwrap.dedent(code))
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), *lakes],
        capture_output=True,
        text=True,
        timeout=600,
        env=variables,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def new_bucket(server: S3Server, case: str) -> S3Bucket:
    # Imported here, once pytest_plugins made it a plugin (rewriting its assertions).
    from s3_server import S3Bucket

    bucket = S3Bucket(server, f"lake-{case}-{os.getpid()}")
    server.create_bucket(bucket.name)
    return bucket


def read_rows(bucket: S3Bucket, path: str) -> list[dict[str, object]]:
    options = bucket.server.storage_options()
    table = deltalake.DeltaTable(f"s3://{bucket.name}/{path}", storage_options=options)
    return table.to_pyarrow_table().to_pylist()


def assert_no_secret(done: subprocess.CompletedProcess[str], server: S3Server) -> None:
    assert server.secret_key not in done.stdout + done.stderr


class Started:
    """One process's output and the buckets of its cases."""

    def __init__(self, done: subprocess.CompletedProcess[str], buckets: dict[str, S3Bucket]) -> None:
        self.done = done
        self.buckets = buckets

    def printed(self, label: str) -> list[str]:
        lines = self.done.stdout.splitlines()
        return [line[len(label) + 1 :] for line in lines if line.startswith(label + " ")]


@pytest.fixture(scope="module")
def started_bare(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    """A JVM started by a first pipeline into a local folder, with neither the AWS variables
    nor the log store set yet: then the variables are set and a load into a bucket is
    refused (no log store chosen); then the log store is stated and the next pipeline loads
    into another bucket on the same JVM."""
    from s3_server import aws_variables

    with aws_variables(s3_server):
        refused, later = new_bucket(s3_server, "refused"), new_bucket(s3_server, "later")
        done = run_script(
            f"""
            aws = {{k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}}
            local = sl.pipeline("local", destination=sl.destinations.delta(sys.argv[1] + "/local-lake"),
                                pipelines_dir=sys.argv[1] + "/local-work")
            local.run([{{"id": 0}}], table_name="warm_up")
            os.environ.update(aws)
            try:
                delta_pipeline("orders", sys.argv[2], "work").run([{{"id": 1}}], table_name="orders")
            except ConfigValueError as exc:
                print("REFUSED", exc)
            os.environ["ENGINE__DELTA_LOG_STORE"] = {SINGLE_DRIVER_LOG_STORE!r}
            pipeline = delta_pipeline("orders", sys.argv[3], "work-later")
            pipeline.run([{{"id": 1, "name": "a"}}, {{"id": 2, "name": "b"}}], table_name="orders")
            print("SAME JVM", pipeline.spark is local.spark)
            """,
            tmp_path_factory.mktemp("started_bare"),
            f"s3a://{refused.name}/lake",
            f"s3a://{later.name}/lake",
        )
        yield Started(done, {"refused": refused, "later": later})


@pytest.fixture(scope="module")
def started_for_buckets(
    s3_server: S3Server, another_s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Started]:
    """A JVM started with the AWS variables and one driver at a time stated in config: merge
    loads into an ``s3a://`` and an ``s3://`` URL, then a load into a bucket whose name is
    on two servers, first through one, then (the AWS variables changed) through the other."""
    from s3_server import aws_variables

    with aws_variables(s3_server):
        merged, moved = new_bucket(s3_server, "merged"), new_bucket(s3_server, "moved")
        another_s3_server.create_bucket(moved.name)
        done = run_script(
            f"""
            @sl.resource(primary_key="id", write_disposition="merge")
            def users(rows):
                yield from rows
            for scheme in ("s3a", "s3"):
                pipeline = delta_pipeline(scheme, f"{{scheme}}://{{sys.argv[2]}}/{{scheme}}-lake", scheme)
                pipeline.run(users([{{"id": 1, "name": "a", "tags": ["x"]}},
                                    {{"id": 2, "name": "b", "tags": []}}]))
                pipeline.run(users([{{"id": 1, "name": "a2", "tags": ["y", "z"]}}]))
                conf = pipeline.spark.sparkContext.getConf()
                print("MASTER", pipeline.spark.sparkContext.master)
                print("STORE", *(conf.get(f"spark.delta.logStore.{{s}}.impl") for s in ("s3a", "s3")))

            first = delta_pipeline("orders", sys.argv[3], "work")
            first.run([{{"id": 1}}], table_name="first")
            os.environ["AWS_ENDPOINT_URL"] = {another_s3_server.endpoint!r}
            second = delta_pipeline("orders", sys.argv[3], "work-2")
            second.run([{{"id": 2}}], table_name="second")
            print("SAME JVM", second.spark is first.spark)
            """,
            tmp_path_factory.mktemp("started_for_buckets"),
            merged.name,
            f"s3a://{moved.name}/lake",
            ENGINE__DELTA_LOG_STORE=SINGLE_DRIVER_LOG_STORE,
        )
        yield Started(done, {"merged": merged, "moved": moved})


def test_a_bucket_on_the_default_log_store_is_refused_before_writing(started_bare: Started) -> None:
    (refusal,) = started_bare.printed("REFUSED")
    assert refusal.startswith("the JVM Spark engine (delta-spark)")
    for named in ("spark.delta.logStore.s3a.impl", "S3DynamoDBLogStore", "delta_log_store"):
        assert named in refusal
    assert_no_secret(started_bare.done, started_bare.buckets["refused"].server)
    assert started_bare.buckets["refused"].object_keys() == []


def test_a_jvm_sparkload_starts_merges_into_s3a_and_s3_urls_with_hadoop_aws(
    started_for_buckets: Started,
) -> None:
    """One driver at a time, stated in config: the JVM starts with that log store, and loads
    through S3A into ``s3a://`` and ``s3://`` URLs alike; delta-rs reads the tables back."""
    assert started_for_buckets.printed("MASTER") == ["local[1]", "local[1]"]
    both = f"{SINGLE_DRIVER_LOG_STORE} {SINGLE_DRIVER_LOG_STORE}"
    assert started_for_buckets.printed("STORE") == [both, both]
    bucket = started_for_buckets.buckets["merged"]
    for scheme in ("s3a", "s3"):
        users = read_rows(bucket, f"{scheme}-lake/shop/users")
        assert sorted((row["id"], row["name"]) for row in users) == [(1, "a2"), (2, "b")]
        tags = read_rows(bucket, f"{scheme}-lake/shop/users__tags")
        assert sorted(row["value"] for row in tags) == ["y", "z"]


def test_a_jvm_sparkload_started_before_the_aws_variables_were_set_loads_into_a_bucket_with_them(
    started_bare: Started,
) -> None:
    """The JVM of a first pipeline (a local folder, no AWS variables yet) serves the next
    pipeline of the process, into a bucket with the variables set since: a JVM never sees
    its process's later environment, so sparkload hands the session the settings then."""
    assert started_bare.printed("SAME JVM") == ["True"]
    assert_no_secret(started_bare.done, started_bare.buckets["later"].server)
    orders = read_rows(started_bare.buckets["later"], "lake/shop/orders")
    assert sorted((row["id"], row["name"]) for row in orders) == [(1, "a"), (2, "b")]


def test_a_jvm_sparkload_started_writes_a_bucket_at_the_endpoint_of_the_settings_now(
    started_for_buckets: Started, another_s3_server: S3Server
) -> None:
    """The same bucket name on two servers: a load into it through the first, then the
    AWS variables point at the second and the next pipeline of the process loads there, not
    through the client Hadoop cached for the bucket at the first load."""
    assert started_for_buckets.printed("SAME JVM") == ["True"]
    bucket = started_for_buckets.buckets["moved"]

    def tables(server: S3Server) -> dict[str, list[int]]:
        found = {}
        for table in ("first", "second"):
            uri = f"s3://{bucket.name}/lake/shop/{table}"
            if deltalake.DeltaTable.is_deltatable(uri, storage_options=server.storage_options()):
                rows = deltalake.DeltaTable(uri, storage_options=server.storage_options()).to_pyarrow_table()
                found[table] = rows.column("id").to_pylist()
        return found

    assert tables(bucket.server) == {"first": [1]}
    assert tables(another_s3_server) == {"second": [2]}
