"""The Spark jobs a one-row append into an existing table runs on a JVM Spark, once the
session is up: each staged Parquet folder is read with the schema normalize kept beside its
files, not by a job reading the files' footers, and a small file of flat records has its
schema found, its rows written as Parquet and profiled in this process, not by jobs of the
engine's. Runs with ``--engine=spark``; both cases run in one process of their own (a JVM
start each would cost more than the cases), the job counts first, each in a folder of its
own."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import NamedTuple

import deltalake
import pytest
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


TYPED = """
pipeline = sl.pipeline("p", destination=sl.destinations.delta(sys.argv[1] + "/typed/lake"),
                       pipelines_dir=sys.argv[1] + "/typed/pl")
pipeline.run([{"id": 1, "ts": "2024-01-01T00:00:00+00:00", "n": 5}], table_name="t",
             columns={"n": {"nullable": False}})
pipeline.run([{"id": 2, "ts": "2024-01-02T00:00:00+00:00", "n": 6}], table_name="t")
for n, row in ((3, {"id": 3, "ts": "not a time", "n": 7}), (4, {"id": 4, "ts": "2024-01-04T00:00:00+00:00"})):
    try:
        pipeline.run([row], table_name="t", columns={"n": {"nullable": False}})
    except Exception as exc:
        print("REFUSED", n, type(exc.__cause__).__name__, str(exc.__cause__).replace(chr(10), " "))
    pipeline.drop_pending_packages()
"""


class Appended(NamedTuple):
    done: subprocess.CompletedProcess[str]
    folder: Path


@pytest.fixture(scope="module")
def appended(tmp_path_factory: pytest.TempPathFactory) -> Appended:
    """Both cases' scripts, one after the other, on one JVM start."""
    folder = tmp_path_factory.mktemp("appended")
    return Appended(run_child(APPENDS + TYPED, folder), folder)


def test_a_one_row_append_into_an_existing_table_runs_one_job(appended: Appended) -> None:
    """The second and third appends each run the Delta write alone: the JSON schema is
    found at extract by this process, which also writes the staged Parquet and takes the
    profile from the rows it wrote (no read of a staged folder's footers either)."""
    done = appended.done
    assert done.returncode == 0, done.stderr[-3000:]
    assert [printed(done, f"JOBS {n}") for n in (1, 2)] == ["1", "1"]
    # The first creates the table and the state table: two Delta writes, each followed by
    # a job of no stages that Delta runs itself when it creates a table. Which engine the
    # session is needs no job: a classic session is Apache Spark's.
    assert printed(done, "JOBS 0") == "4"
    table = deltalake.DeltaTable(str(appended.folder / "run0" / "lake" / "p_dataset" / "t"))
    rows = table.to_pyarrow_table().sort_by("id").to_pylist()
    assert [(row["id"], row["v"]) for row in rows] == [(0, "v0"), (1, "v1"), (2, "v2")]


def test_small_appends_written_by_this_process_are_typed_and_checked_as_before(appended: Appended) -> None:
    """Appends of a few flat rows take this process's write and profile: a timestamp in a
    string is typed into the table's timestamp column, text for that column is refused as
    a destructive change, and a row without a NOT NULL column is refused."""
    done = appended.done
    assert done.returncode == 0, done.stderr[-3000:]
    text = printed(done, "REFUSED 3")
    assert text.startswith("DestructiveChangeError") and "'ts'" in text, text
    missing = printed(done, "REFUSED 4")
    assert "'n'" in missing and "NULL" in missing.upper(), missing
    table = deltalake.DeltaTable(str(appended.folder / "run0" / "typed" / "lake" / "p_dataset" / "t"))
    rows = table.to_pyarrow_table().sort_by("id").to_pylist()
    assert [row["id"] for row in rows] == [1, 2]
    assert [str(row["ts"]) for row in rows] == ["2024-01-01 00:00:00+00:00", "2024-01-02 00:00:00+00:00"]
    assert [row["n"] for row in rows] == [5, 6]
