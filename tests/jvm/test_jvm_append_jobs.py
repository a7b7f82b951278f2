"""The Spark jobs a one-row append into an existing table runs on a JVM Spark, once the
session is up: each staged Parquet folder is read with the schema normalize kept beside its
files, not by a job reading the files' footers, and a small file of flat records has its
schema found, its rows written as Parquet and profiled in this process, not by jobs of the
engine's. Runs with ``--engine=spark``."""

from __future__ import annotations

from pathlib import Path

import deltalake
from test_jvm_lean import printed, run_child

APPENDS = """
import sys
import sparkload as sl

pipeline = sl.pipeline("p", destination=sl.destinations.delta(sys.argv[1] + "/lake"),
                       pipelines_dir=sys.argv[1] + "/pl")
tracker = pipeline.spark.sparkContext.statusTracker()
for n in range(3):
    before = len(tracker.getJobIdsForGroup(None))
    pipeline.run([{"id": n, "v": f"v{n}"}], table_name="t", write_disposition="append")
    print("JOBS", n, len(tracker.getJobIdsForGroup(None)) - before)
"""


def test_a_one_row_append_into_an_existing_table_runs_one_job(tmp_path: Path) -> None:
    """The second and third appends each run the Delta write alone: the JSON schema is
    found at extract by this process, which also writes the staged Parquet and takes the
    profile from the rows it wrote (no read of a staged folder's footers either)."""
    done = run_child(APPENDS, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [printed(done, f"JOBS {n}") for n in (1, 2)] == ["1", "1"]
    # The first creates the table and the state table: two Delta writes, each followed by
    # a job of no stages that Delta runs itself when it creates a table. Which engine the
    # session is needs no job: a classic session is Apache Spark's.
    assert printed(done, "JOBS 0") == "4"
    table = deltalake.DeltaTable(str(tmp_path / "run0" / "lake" / "p_dataset" / "t"))
    rows = table.to_pyarrow_table().sort_by("id").to_pylist()
    assert [(row["id"], row["v"]) for row in rows] == [(0, "v0"), (1, "v1"), (2, "v2")]
