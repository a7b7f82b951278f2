"""sparkload's pipeline on a real Apache Spark standalone cluster whose executors cannot see
the driver's disk (``tests/spark_standalone.py``), with the destination and its staged
packages in a bucket on a real S3 API server (``tests/s3_server.py``).

The working folder stays on the driver's disk with the state and the manifests; the files
the executors read (the extracted items, the normalized rows) are in the bucket. Every
table is read back by delta-rs from the bucket. Run by ``nox -s standalone``.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import deltalake
import pyarrow as pa
import pytest
from conftest import user_columns

import sparkload as sl
from sparkload.common.package import EXTRACTED_COPIES_FOLDER, PACKAGES_FOLDER

if TYPE_CHECKING:
    from s3_server import S3Bucket

# The bucket server's and the cluster's fixtures (imported by pytest, which rewrites asserts).
pytest_plugins = ("s3_server", "spark_standalone")
pytestmark = pytest.mark.timeout(600)

UTC = datetime.timezone.utc
DAY = datetime.timedelta(days=1)
HOUR = datetime.timedelta(hours=1)
TODAY = datetime.datetime(2024, 10, 27, tzinfo=UTC)


def cluster_pipeline(bucket: S3Bucket, tmp_path: Path, working: str = "work") -> sl.Pipeline:
    return sl.pipeline(
        "shop_loads",
        destination=sl.destinations.delta(f"{bucket.url}/lake"),
        dataset_name="shop",
        pipelines_dir=tmp_path / working,
    )


def bucket_rows(bucket: S3Bucket, pipeline: sl.Pipeline, table: str, order_by: str) -> list[dict[str, Any]]:
    """The table as delta-rs reads it from the bucket."""
    found = deltalake.DeltaTable(
        f"{pipeline.dataset_uri}/{table}", storage_options=bucket.server.storage_options()
    )
    return sorted(user_columns(found.to_pyarrow_table().to_pylist()), key=lambda row: row[order_by])


def staged_keys(bucket: S3Bucket) -> list[str]:
    """The files the loads left of their packages in the bucket (none once loaded; the
    store's markers of empty folders are no files)."""
    folders = (f"lake/shop/{PACKAGES_FOLDER}/", f"lake/shop/{EXTRACTED_COPIES_FOLDER}/")
    return [key for key in bucket.object_keys() if key.startswith(folders) and not key.endswith("/")]


@sl.resource(primary_key="id", write_disposition="merge")
def customers(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield from rows


def test_a_merge_with_nested_tables_runs_on_executors_that_cannot_see_the_working_folder(
    on_cluster: Any,  # noqa: ARG001
    s3_bucket: S3Bucket,
    tmp_path: Path,
) -> None:
    pipeline = cluster_pipeline(s3_bucket, tmp_path)
    pipeline.run(
        customers(
            [
                {"id": 1, "name": "ada", "address": {"city": "London"}, "langs": ["en", "fr"]},
                {"id": 2, "name": "bob", "address": {"city": "Paris"}, "langs": ["fr"]},
            ]
        )
    )
    pipeline.run(customers([{"id": 1, "name": "ada l.", "address": {"city": "Oxford"}, "langs": ["de"]}]))

    assert bucket_rows(s3_bucket, pipeline, "customers", "id") == [
        {"id": 1, "name": "ada l.", "address__city": "Oxford"},
        {"id": 2, "name": "bob", "address__city": "Paris"},
    ]
    langs = bucket_rows(s3_bucket, pipeline, "customers__langs", "value")
    assert sorted(row["value"] for row in langs) == ["de", "fr"]
    # The extracted files went to the bucket for the executors, and went with the package.
    assert staged_keys(s3_bucket) == []
    assert not (pipeline.working_dir / "packages").exists() or not any(
        (pipeline.working_dir / "packages").iterdir()
    )


def test_an_append_of_dicts_arrow_tables_and_spark_dataframes(
    on_cluster: Any,
    s3_bucket: S3Bucket,
    tmp_path: Path,
) -> None:
    """Every kind of item the engine reads: NDJSON, Arrow's Parquet, and a Spark DataFrame
    that the executors write themselves."""
    pipeline = cluster_pipeline(s3_bucket, tmp_path)

    @sl.resource(write_disposition="append")
    def events() -> Iterator[Any]:
        yield [{"id": 1, "detail": {"code": "w"}}, {"id": 2, "detail": {"code": "x"}}]
        yield pa.table({"id": [3, 4], "note": ["arrow", "items"]})
        yield on_cluster.createDataFrame([(5, "spark"), (6, "frame")], "id long, note string")

    pipeline.run(events())
    pipeline.run(events())

    rows = bucket_rows(s3_bucket, pipeline, "events", "id")
    assert [row["id"] for row in rows] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    by_id = {row["id"]: row for row in rows}
    assert by_id[1]["detail__code"] == "w"
    assert by_id[2]["detail__code"] == "x"
    assert (by_id[3]["note"], by_id[6]["note"]) == ("arrow", "frame")
    assert staged_keys(s3_bucket) == []


@sl.resource(write_disposition="append")
def numbered(upto: int, updated: Any = sl.incremental("n")) -> Any:  # noqa: B008 (dlt's form)
    yield from ({"n": n} for n in range(1, upto + 1))


def test_a_cursor_resumes_from_the_bucket_in_an_empty_working_folder(
    on_cluster: Any,  # noqa: ARG001
    s3_bucket: S3Bucket,
    tmp_path: Path,
) -> None:
    cluster_pipeline(s3_bucket, tmp_path, working="machine_a").run(numbered(3))
    # Another driver: the same pipeline, nothing in its working folder.
    second = cluster_pipeline(s3_bucket, tmp_path, working="machine_b")
    second.run(numbered(5))
    assert bucket_rows(s3_bucket, second, "numbered", "n") == [{"n": n} for n in range(1, 6)]


def test_an_extracted_package_is_normalized_and_loaded_from_its_files_in_the_bucket(
    on_cluster: Any,  # noqa: ARG001
    s3_bucket: S3Bucket,
    tmp_path: Path,
) -> None:
    """Extract only (as a run cut short after extract leaves it): the package's data files
    wait in the bucket, the manifest in the working folder; the next run loads it once, from
    a Pipeline object of its own."""
    pipeline = cluster_pipeline(s3_bucket, tmp_path)
    pipeline.extract(customers([{"id": 7, "name": "eve", "langs": ["es"]}]))
    copies = [key for key in staged_keys(s3_bucket) if f"/{EXTRACTED_COPIES_FOLDER}/" in f"/{key}"]
    assert copies and all(key.endswith(".jsonl") for key in copies)

    resumed = cluster_pipeline(s3_bucket, tmp_path)
    resumed.run()
    assert bucket_rows(s3_bucket, resumed, "customers", "id") == [{"id": 7, "name": "eve"}]
    assert [row["value"] for row in bucket_rows(s3_bucket, resumed, "customers__langs", "value")] == ["es"]
    assert staged_keys(s3_bucket) == []


def test_an_interval_load_and_scd2(
    on_cluster: Any,  # noqa: ARG001
    s3_bucket: S3Bucket,
    tmp_path: Path,
) -> None:
    pipeline = cluster_pipeline(s3_bucket, tmp_path)
    start = TODAY - 2 * DAY
    source = [{"ts": start + i * HOUR, "id": i, "tags": [f"h{i}"]} for i in range(60)]

    @sl.resource(name="events")
    def events(
        window: Any = sl.sources.intervals("ts", start=start, cron="@daily"),  # noqa: B008 (dlt's way)
    ) -> Iterator[dict[str, Any]]:
        yield from (row for row in source if window.start <= row["ts"] < window.end)

    pipeline.run(events(), execution_time=TODAY + 12 * HOUR)
    rows = bucket_rows(s3_bucket, pipeline, "events", "id")
    assert [row["id"] for row in rows] == list(range(48))  # today is not complete yet
    assert len(bucket_rows(s3_bucket, pipeline, "events__tags", "value")) == 48

    scd2 = {"disposition": "merge", "strategy": "scd2"}
    pipeline.run([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], table_name="dim", write_disposition=scd2)
    pipeline.run([{"id": 1, "v": "a"}, {"id": 2, "v": "c"}], table_name="dim", write_disposition=scd2)
    found = deltalake.DeltaTable(
        f"{pipeline.dataset_uri}/dim", storage_options=s3_bucket.server.storage_options()
    ).to_pyarrow_table()
    versions = sorted((row["v"], row["_sparkload_valid_to"] is None) for row in found.to_pylist())
    assert versions == [("a", True), ("b", False), ("c", True)]
