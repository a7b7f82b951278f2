"""Delta on Apache Spark: a nested table's commits read and rewrite what the load changed,
not every root row, and a write cuts files of about the target size. Asserted on what the
commits did (the Delta log's operationMetrics, the files, the plans Spark ran), never on
timings. Runs with ``--engine=spark``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import delta_history, delta_rows

import sparkload as sl
from sparkload.load import table


def executed_plans(spark: Any) -> list[str]:
    """The physical plan of every SQL execution the session has run so far, oldest first."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    return [str(executions.apply(i).physicalPlanDescription()) for i in range(executions.size())]


def items(start: int, stop: int, version: str) -> list[dict[str, Any]]:
    return [{"id": i, "v": version, "tags": [f"{version}{i}a", f"{version}{i}b"]} for i in range(start, stop)]


def merge(pipeline: sl.Pipeline, rows: list[dict[str, Any]]) -> None:
    pipeline.run(rows, table_name="t", write_disposition="merge", primary_key="id")


def last_merge(pipeline: sl.Pipeline, table: str) -> dict[str, int]:
    commit = delta_history(pipeline, table)[0]
    assert commit["operation"] == "MERGE", commit
    return {name: int(value) for name, value in commit["operationMetrics"].items()}


def test_a_new_nested_table_under_a_root_this_load_created_is_written_without_joining_the_root(
    pipeline: sl.Pipeline,
) -> None:
    """Every nested row of the load has its root row in the root this load just created:
    the nested table's first commit writes them as they are, no semi-join against the root."""
    before = len(executed_plans(pipeline.spark))
    merge(pipeline, items(0, 50, "x"))
    joins = [plan for plan in executed_plans(pipeline.spark)[before:] if "LeftSemi" in plan]
    assert joins == []
    assert sorted(row["value"] for row in delta_rows(pipeline, "t__tags")) == sorted(
        tag for item in items(0, 50, "x") for tag in item["tags"]
    )


def test_a_nested_merge_takes_the_replaced_root_ids_and_the_loads_rows_and_reads_only_their_files(
    pipeline: sl.Pipeline,
) -> None:
    merge(pipeline, items(0, 100, "x"))
    merge(pipeline, items(100, 200, "y"))  # the nested rows of new ids: a file of their own
    merge(pipeline, items(150, 160, "z"))

    metrics = last_merge(pipeline, "t__tags")
    # Source: the 10 root ids the root commit replaced (markers) and the load's 20 nested
    # rows, not every root id of the table.
    assert metrics["numSourceRows"] == 10 + 20
    assert metrics["numTargetRowsDeleted"] == 20
    assert metrics["numTargetRowsInserted"] == 20
    # Only the file holding the replaced ids' nested rows is rewritten (x's is skipped).
    assert metrics["numTargetFilesRemoved"] == 1
    assert metrics["numTargetRowsCopied"] == 200 - 20
    tags = sorted(row["value"] for row in delta_rows(pipeline, "t__tags"))
    expected = [*items(0, 100, "x"), *items(100, 150, "y"), *items(150, 160, "z"), *items(160, 200, "y")]
    assert tags == sorted(tag for item in expected for tag in item["tags"])


def test_a_nested_merge_after_a_root_commit_of_every_load_row_reads_no_root_row(
    pipeline: sl.Pipeline,
) -> None:
    """The root's commit wrote every root row of the load and nothing has committed to the
    root since: the nested MERGE takes the load's nested rows as they are, without reading
    the root to find which of them have their root row there."""
    merge(pipeline, items(0, 100, "x"))
    before = len(executed_plans(pipeline.spark))
    merge(pipeline, items(90, 110, "y"))
    joins = [plan for plan in executed_plans(pipeline.spark)[before:] if "LeftSemi" in plan]
    assert joins == []
    tags = sorted(row["value"] for row in delta_rows(pipeline, "t__tags"))
    assert tags == sorted(tag for item in [*items(0, 90, "x"), *items(90, 110, "y")] for tag in item["tags"])


def test_a_merge_bounds_its_commits_by_the_key_ranges_its_staging_write_observed(
    pipeline: sl.Pipeline,
) -> None:
    """The range of the load's keys (the root's ``id``, the nested rows' root ids) is taken
    by the write that staged them: the only range still asked of the engine is that of the
    root ids the root commit removed, read from the root table's own files."""
    merge(pipeline, items(0, 100, "x"))
    before = len(executed_plans(pipeline.spark))
    merge(pipeline, items(90, 110, "y"))
    ranges = [plan for plan in executed_plans(pipeline.spark)[before:] if "nulls0" in plan]
    assert len(ranges) == 1, ranges
    table_files = f"{pipeline.dataset_uri}/t/part-"
    assert table_files in ranges[0]
    metrics = last_merge(pipeline, "t__tags")
    assert metrics["numTargetRowsDeleted"] == 20 and metrics["numTargetRowsInserted"] == 40
    assert sorted(row["id"] for row in delta_rows(pipeline, "t")) == list(range(110))


def test_a_nested_merge_after_a_root_commit_that_left_rows_out_keeps_only_their_nested_rows(
    pipeline: sl.Pipeline,
) -> None:
    """A key twice in the load: the root keeps one of its rows, and the nested rows of the
    other (whose root row was never written) stay out of the nested table."""
    merge(pipeline, items(0, 10, "x"))
    twice = [*items(5, 8, "y"), {"id": 6, "v": "z", "tags": ["z6a", "z6b"]}]
    merge(pipeline, twice)
    roots = {row["id"]: row for row in delta_rows(pipeline, "t")}
    kept = roots[6]["v"]
    assert kept in ("y", "z")
    tags = sorted(row["value"] for row in delta_rows(pipeline, "t__tags"))
    expected = [*items(0, 5, "x"), *items(5, 6, "y"), *items(7, 8, "y"), *items(8, 10, "x")]
    expected.append({"tags": [f"{kept}6a", f"{kept}6b"]})
    assert tags == sorted(tag for item in expected for tag in item["tags"])
    by_id = {row["_sparkload_id"]: row["id"] for row in delta_rows(pipeline, "t")}
    assert {by_id[row["_sparkload_root_id"]] for row in delta_rows(pipeline, "t__tags")} == set(range(10))


def test_a_load_writes_files_of_about_the_target_size_where_the_engine_ignores_it(
    pipeline: sl.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """delta-spark takes no ``target_file_size``: the rows per file come from the package
    (its rows and the bytes they take there), so a merge later rewrites narrow files."""
    target = 64 * 1024
    monkeypatch.setattr(table, "TARGET_FILE_SIZE", target)
    # Values that do not compress: the files' size follows the rows.
    rows = [{"id": i, "v": os.urandom(48).hex()} for i in range(6000)]
    pipeline.run(rows, table_name="wide", write_disposition="merge", primary_key="id")

    folder = Path(pipeline.dataset_uri) / "wide"
    sizes = [file.stat().st_size for file in folder.glob("*.parquet")]
    assert len(sizes) >= 5, sizes  # about 6,000 × 100 bytes / 64 KiB
    assert max(sizes) < 1.5 * target, sizes
    assert len(delta_rows(pipeline, "wide")) == 6000
