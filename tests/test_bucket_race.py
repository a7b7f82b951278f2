"""Two writers merging into one table in a bucket at the same moment never duplicate a key
nor lose a commit: the two-process race of ``test_concurrent_merge.py`` with the
destination in a bucket of a real S3 API server on 127.0.0.1 (moto's server mode).

In a bucket the writers' commits to a table take turns under a lease object beside the
tables (``bucket_lock``), which lets a merge be a range rewrite there as on local disk;
what keeps a commit from overwriting another's version is the store refusing a second
``_delta_log/<version>.json``: the embedded engine's Delta writer (Sail) writes each commit
with ``PutMode::Create``, a PUT with ``If-None-Match: *`` under the conditional-put setting
sparkload gives it (``AWS_CONDITIONAL_PUT=etag``), and moto answers 412 to the loser, as
S3 does.

Each round is several seconds against the bucket, so the main suite runs
``BUCKET_RACE_ROUNDS`` rounds of each kind (3); ``SPARKLOAD_BUCKET_RACE_ROUNDS=20`` runs the
20 the race claims.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import botocore.exceptions
import deltalake
import engines
import pytest
from test_bucket import bucket_pipeline
from test_concurrent_merge import race

from sparkload.exceptions import ConfigValueError

# The engine sessions that run this file (noxfile.py says why): the two-writer race on a
# server in another process (`connect`); on `cluster`, whose commits are the same driver's,
# the single-writer tests only (marked there).
pytestmark = [pytest.mark.connect]

if TYPE_CHECKING:
    from s3_server import S3Bucket

pytest_plugins = ("s3_server",)

BUCKET_RACE_ROUNDS = int(os.environ.get("SPARKLOAD_BUCKET_RACE_ROUNDS", "3"))


@engines.engine_limit(
    "spark",
    reason="delta-spark keeps two drivers' commits to a bucket apart only through a DynamoDB log "
    "store (S3DynamoDBLogStore), which this server is not given; without one sparkload refuses "
    "the bucket (tests/jvm/test_bucket_log_store.py)",
)
@pytest.mark.timeout(max(300, 60 * BUCKET_RACE_ROUNDS))
def test_two_writers_merging_in_one_bucket_never_duplicate_a_key_nor_lose_a_commit(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    race(tmp_path, f"{s3_bucket.url}/lake", BUCKET_RACE_ROUNDS, s3_bucket.server.storage_options())
    # Commits the store refused because another writer's had taken their version.
    log = s3_bucket.server.log.read_text(errors="replace").splitlines()
    commits = [line for line in log if f"PUT /{s3_bucket.name}/" in line and "/_delta_log/" in line]
    refused = [line for line in commits if '" 412 ' in line]
    print(f"commits the store refused (412, another writer's was there): {len(refused)}")


@engines.engine_limit(
    "spark",
    reason="on Delta with Apache Spark a merge is a MERGE bounded by the load's key range in its ON "
    "(range_rewrite.usable), wherever the table lives",
)
@pytest.mark.cluster
@pytest.mark.usefixtures("one_writer_on_the_jvm")
def test_a_merge_into_a_table_in_a_bucket_is_a_range_rewrite(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """On Sail a merge in a bucket overwrites the key range it touches
    (``range_rewrite``), as on local disk, holding the table's lease meanwhile: its commit
    is a WRITE with the range as its predicate, not a MERGE (which would join every file)."""
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    for value in ("a", "b"):
        rows = [{"id": i, "value": value} for i in range(10)]
        pipeline.run(rows, table_name="orders", primary_key="id", write_disposition="merge")
    table = deltalake.DeltaTable(
        f"{pipeline.dataset_uri}/orders", storage_options=s3_bucket.server.storage_options()
    )
    newest = table.history(1)[0]
    assert newest["operation"] == "WRITE", newest
    assert "BETWEEN 0" in newest["operationParameters"]["predicate"]
    assert sorted(table.to_pyarrow_table().column("value").to_pylist()) == ["b"] * 10
    # The lease was released: only the table's objects are left.
    assert not [key for key in s3_bucket.object_keys() if "_sparkload_locks" in key]


@pytest.mark.cluster
@pytest.mark.usefixtures("one_writer_on_the_jvm")
def test_the_engine_commits_to_a_bucket_by_conditional_put(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    assert "AWS_CONDITIONAL_PUT" not in os.environ
    bucket_pipeline(s3_bucket, tmp_path).run([{"id": 1}], table_name="orders")
    assert os.environ["AWS_CONDITIONAL_PUT"] == "etag"


@pytest.mark.cluster
@pytest.mark.usefixtures("one_writer_on_the_jvm")
def test_commits_without_conditional_put_are_refused_before_writing(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    """Sail's commits to S3 need a conditional PUT (without one it fails at the first commit,
    after writing data files): the pipeline is refused when it is made, naming the engine
    and the setting, and nothing reaches the bucket."""
    os.environ["AWS_CONDITIONAL_PUT"] = "disabled"
    with pytest.raises(ConfigValueError) as refused:
        bucket_pipeline(s3_bucket, tmp_path).run([{"id": 1}], table_name="orders")
    message = str(refused.value)
    assert "Sail engine" in message
    assert "AWS_CONDITIONAL_PUT" in message
    assert "'etag'" in message
    assert s3_bucket.server.secret_key not in message
    assert s3_bucket.object_keys() == []


def test_the_server_refuses_a_second_conditional_put_of_a_key(s3_bucket: S3Bucket) -> None:
    """What the race in a bucket rests on, checked on the server it runs against: a PUT with
    ``If-None-Match: *`` of a key that exists is refused (412) and the first object stays
    (boto3, which moto brings, signs the requests as a client of S3 does)."""
    server = s3_bucket.server
    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=server.access_key,
        aws_secret_access_key=server.secret_key,
        region_name="us-east-1",
    )
    key = "_delta_log/00000000000000000000.json"
    client.put_object(Bucket=s3_bucket.name, Key=key, Body=b"first", IfNoneMatch="*")
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        client.put_object(Bucket=s3_bucket.name, Key=key, Body=b"second", IfNoneMatch="*")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert client.get_object(Bucket=s3_bucket.name, Key=key)["Body"].read() == b"first"
