"""A remote engine that reads the destination but not the pipeline's working folder (as a
cluster's executors, which do not share the driver's disk): the files it reads are put
beside the destination, and the pipeline runs.

The engine here is a Sail server in a mount namespace of its own, where the working folder
is under an empty tmpfs; the destination is a folder both processes see. The Apache Spark
standalone cluster with a bucket is ``tests/standalone`` (``nox -s standalone``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import engines
import pyarrow as pa
import pytest
from conftest import user_columns

import sparkload as sl
from sparkload.common.package import EXTRACTED_COPIES_FOLDER

pytestmark = pytest.mark.skipif(engines.current() != "embedded", reason="starts a Sail server of its own")


@pytest.fixture
def hidden_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """A Sail server's URL, and the folder that is an empty tmpfs for it."""
    # A server starting on a busy machine may take longer than the default wait.
    monkeypatch.setenv("SPARKLOAD_SPARK_CONNECT_TIMEOUT", "120")
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    with engines.sail_server_hiding(hidden) as url:
        yield url, hidden


@sl.resource(primary_key="id", write_disposition="merge")
def customers(rows: list[Any]) -> Iterator[Any]:
    yield from rows


def table_rows(lake: Path, table: str, order_by: str) -> list[dict[str, Any]]:
    found = deltalake.DeltaTable(str(lake / "shop" / table)).to_pyarrow_table().to_pylist()
    return sorted(user_columns(found), key=lambda row: row[order_by])


def test_an_engine_that_cannot_read_the_working_folder_reads_the_extracted_files_beside_the_destination(
    hidden_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, hidden = hidden_server
    lake = tmp_path / "lake"
    pipeline = sl.pipeline(
        "crm",
        destination=sl.destinations.delta(lake),
        dataset_name="shop",
        pipelines_dir=hidden / "pipelines",
        spark=url,
    )
    pipeline.run(
        customers(
            [
                {"id": 1, "name": "ada", "langs": ["en", "fr"], "detail": 5},
                {"id": 2, "name": "bob", "langs": ["fr"], "detail": {"code": "x"}},
            ]
        )
    )
    pipeline.run(
        customers([{"id": 1, "name": "ada l.", "langs": ["de"]}, pa.table({"id": [3], "name": ["cy"]})])
    )

    rows = table_rows(lake, "customers", "id")
    assert [(row["id"], row["name"]) for row in rows] == [(1, "ada l."), (2, "bob"), (3, "cy")]
    # Values of two JSON types in one field: normalize rewrote the rows (split into a
    # variant column) and the engine read the rewritten files beside the destination.
    assert [str(v) for k, v in rows[1].items() if k.startswith("detail") and v is not None] == [
        '{"code":"x"}'
    ]
    assert sorted(row["value"] for row in table_rows(lake, "customers__langs", "value")) == ["de", "fr"]
    # The copies went with their packages; the working folder keeps no package either.
    copies = lake / "shop" / EXTRACTED_COPIES_FOLDER / "crm"
    assert not copies.exists() or not any(copies.rglob("*.*"))
    assert not any((pipeline.working_dir / "packages").glob("*"))


def test_a_package_extracted_by_an_engine_that_read_the_working_folder_is_copied_when_normalized(
    hidden_server: tuple[str, Path], tmp_path: Path
) -> None:
    """Extracted on the embedded engine (which reads the working folder: nothing copied),
    normalized and loaded by a run on the engine that cannot read it."""
    url, hidden = hidden_server
    lake = tmp_path / "lake"

    def make(spark: Any = None) -> sl.Pipeline:
        return sl.pipeline(
            "crm",
            destination=sl.destinations.delta(lake),
            dataset_name="shop",
            pipelines_dir=hidden / "pipelines",
            spark=spark,
        )

    make().extract(customers([{"id": 7, "name": "eve", "langs": ["es"]}]))
    assert not (lake / "shop" / EXTRACTED_COPIES_FOLDER).exists()
    remote = make(url)
    remote.normalize()
    remote.load()
    assert [(row["id"], row["name"]) for row in table_rows(lake, "customers", "id")] == [(7, "eve")]
