"""Delta on Apache Spark: the profile's first pass over a table the engine stages is taken
by the staging write itself (``DataFrame.observe``), not by a query that reads the staged
files again, and it says what that query says. Runs with ``--engine=spark``."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import delta_rows
from pyspark.sql import SparkSession
from test_jvm_duplicate_check import executed_plans

import sparkload as sl
from sparkload.normalize.infer import profile
from sparkload.normalize.observed import observing
from sparkload.normalize.slices import StagedTable
from sparkload.normalize.staged_schema import stage

UTC = datetime.timezone.utc


def rows_of_every_kind() -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "big": -(2**62) + i if i % 3 else None,
            "amount": i * 0.5,
            "flag": i % 2 == 0,
            "name": f"u{i}" if i % 4 else None,
            "ts": f"2024-01-{1 + i % 28:02d}T00:00:00Z",
            "mixed": ["12", '{"a": 1}', "text", "2024-02-03"][i % 4],
            "price": decimal.Decimal(f"{i}.125"),
            "at": datetime.datetime(2024, 5, 1 + i % 28, 12, tzinfo=UTC),
            "tags": ["a", "b"] if i % 5 == 0 else [],
        }
        for i in range(40)
    ]


def test_a_nested_merge_load_runs_no_query_of_its_own_for_the_first_pass(pipeline: sl.Pipeline) -> None:
    """Each aggregate that counts the rows (the first pass's ``__rows``) is observed within
    a write; before, each table's first pass was a query of its own over its staged files."""
    spark = pipeline.spark
    before = len(executed_plans(spark))
    pipeline.run(rows_of_every_kind(), table_name="t", write_disposition="merge", primary_key="id")
    counting = [plan for plan in executed_plans(spark)[before:] if "AS __rows" in plan]
    assert len(counting) == 2  # the root's staging write and the tags'
    assert all("CollectMetrics" in plan for plan in counting)
    loaded = sorted(delta_rows(pipeline, "t"), key=lambda row: row["id"])
    assert [row["id"] for row in loaded] == list(range(40))
    assert loaded[1]["ts"] == datetime.datetime(2024, 1, 2, tzinfo=UTC)
    assert loaded[1]["big"] == -(2**62) + 1 and loaded[0]["big"] is None
    assert loaded[3]["price"] == decimal.Decimal("3.125")
    assert loaded[2]["at"] == datetime.datetime(2024, 5, 3, 12, tzinfo=UTC)
    assert [row["mixed"] for row in loaded[:4]] == ["12", '{"a": 1}', "text", "2024-02-03"]
    assert len(delta_rows(pipeline, "t__tags")) == 16


def test_the_observed_first_pass_says_what_the_query_of_the_staged_files_says(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    """The profile of one staged folder, read from the write's observed summary and asked
    of the files, agrees on every statistic (the second pass runs in both)."""
    spark: SparkSession = pipeline.spark
    frame = spark.createDataFrame(
        [
            (1, -(2**62), 0.5, True, "u1", "2024-01-01T00:00:00Z", "\x00d12.125"),
            (2, None, None, None, None, "text", '{"a": 1}'),
            (3, 2**62, 2.5, False, "[1]", None, "7"),
        ],
        "id BIGINT, big BIGINT, amount DOUBLE, flag BOOLEAN, name STRING, ts STRING, mixed STRING",
    )
    leaves = [field.name for field in frame.schema.fields]
    observed, summary = observing(frame, leaves)
    assert summary is not None
    target = str(tmp_path / "staged")
    schema = stage(observed, target)
    types = {field.name: field.dataType for field in schema.fields}
    from_write = profile(StagedTable(spark, target, schema, summary()), types)
    from_files = profile(StagedTable(spark, target, schema), types)
    assert from_write == from_files
    assert from_write["__rows"] == 3 and from_write["min1"] == -(2**62) and from_write["max1"] == 2**62


@pytest.mark.parametrize("width", [0, 500])
def test_no_columns_or_a_wide_table_keeps_the_query_of_its_own(pipeline: sl.Pipeline, width: int) -> None:
    frame = pipeline.spark.range(1).selectExpr(*[f"id AS c{i}" for i in range(max(width, 1))])
    leaves = [f"c{i}" for i in range(width)]
    observed, summary = observing(frame, leaves)
    assert summary is None and observed is frame
