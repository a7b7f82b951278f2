"""What a JVM Spark that sparkload starts pays once rather than per start or per load: the
Delta jars' resolution, Python workers (none), the engine check (none on a local master)
and the row scans that the commit log answers. The cases start JVMs of their own, so this
folder runs only with ``--engine=spark`` (``nox -s spark``): two, one after the other
(``two_starts``), the second finding the jars the first resolved and making the loads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import deltalake
import pytest

START = """
import sys
import sparkload as sl

pipeline = sl.pipeline("p", destination=sl.destinations.delta(sys.argv[1] + "/lake"),
                       pipelines_dir=sys.argv[1] + "/pl")
conf = pipeline.spark.sparkContext.getConf()
print("PACKAGES", conf.get("spark.jars.packages", ""))
print("JARS", conf.get("spark.jars", ""))
print("PYTHON", conf.get("spark.pyspark.python", ""), conf.get("spark.pyspark.driver.python", ""))
"""

LOADS = """
import logging
import sys
import sparkload as sl

logging.basicConfig(stream=sys.stdout, format="LOG %(name)s %(message)s")
logging.getLogger("sparkload.load.loader").setLevel(logging.DEBUG)
pipeline = sl.pipeline("p", destination=sl.destinations.delta(sys.argv[1] + "/lake"),
                       pipelines_dir=sys.argv[1] + "/pl")
tracker = pipeline.spark.sparkContext.statusTracker()
conf = pipeline.spark.sparkContext.getConf()
print("PACKAGES", conf.get("spark.jars.packages", ""))
print("JARS", conf.get("spark.jars", ""))
print("JOBS AT START", len(tracker.getJobIdsForGroup(None)))
for start in (0, 1):
    rows = [{"id": i, "v": f"v{start}", "tags": ["a", "b"]} for i in range(start, start + 2)]
    pipeline.run(rows, table_name="t", write_disposition="merge", primary_key="id")
print("PYTHON", pipeline.spark.sparkContext.getConf().get("spark.pyspark.python", "(unset)"))
"""


def run_child(
    code: str, tmp_path: Path, *, empty_cache: bool = False, **variables: str
) -> subprocess.CompletedProcess[str]:
    """``code`` in a process of its own on a JVM sparkload starts (``local[1]``). With
    ``empty_cache``, the child's cache is a folder of its own under ``tmp_path``, so its JVM
    resolves the Delta jars with Ivy; otherwise it takes the jars the run already resolved
    (tests/engines.py), as a user's second start does, and saves that resolution."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARKLOAD_SPARK_REMOTE", "PYSPARK_PYTHON")}
    env.update(SPARKLOAD_SPARK_MASTER="local[1]", **variables)
    if empty_cache:
        env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    work = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    return subprocess.run(
        [sys.executable, str(script), str(work)], capture_output=True, text=True, timeout=900, env=env
    )


def printed(done: subprocess.CompletedProcess[str], label: str) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith(label + " "))[len(label) + 1 :]


class TwoStarts:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.first = run_child(START, tmp_path, empty_cache=True)
        self.cache_after_first = (tmp_path / "cache" / "sparkload" / "delta-jars.json").is_file()
        # Python workers made impossible: PYSPARK_PYTHON names no program.
        self.second = run_child(
            LOADS, tmp_path, empty_cache=True, PYSPARK_PYTHON=str(tmp_path / "no-such-python")
        )


@pytest.fixture(scope="module")
def two_starts(tmp_path_factory: pytest.TempPathFactory) -> TwoStarts:
    """A JVM start with an empty cache, then a second start that makes two merge loads."""
    return TwoStarts(tmp_path_factory.mktemp("two_starts"))


def test_the_delta_jars_resolved_by_one_start_are_given_to_the_next_and_workers_run_this_python(
    two_starts: TwoStarts,
) -> None:
    first, second = two_starts.first, two_starts.second
    assert first.returncode == 0, first.stderr[-3000:]
    assert printed(first, "PACKAGES").startswith("io.delta:delta-spark")
    assert printed(first, "PYTHON") == f"{sys.executable} {sys.executable}"
    assert two_starts.cache_after_first

    assert second.returncode == 0, second.stderr[-3000:]
    assert printed(second, "PACKAGES") == ""  # no Ivy resolution
    jars = printed(second, "JARS").split(",")
    assert any("delta-spark" in jar for jar in jars)
    assert all(Path(jar.removeprefix("file:")).is_file() for jar in jars)


def test_a_merge_load_runs_no_python_worker_no_engine_check_and_no_scan_for_its_rows(
    two_starts: TwoStarts,
) -> None:
    """With Python workers made impossible (PYSPARK_PYTHON names no program, which sparkload
    leaves as the user chose it), two merge loads with nested rows still commit: nothing
    starts a worker. The local JVM runs no job before the first load (no engine check), and
    'already committed?' is answered from the MERGE commits' userMetadata."""
    done = two_starts.second
    assert done.returncode == 0, done.stderr[-3000:]
    assert printed(done, "JOBS AT START") == "0"
    assert printed(done, "PYTHON") == "(unset)"
    assert "looking for rows of load" not in done.stdout
    (dataset,) = two_starts.tmp_path.glob("run*/lake/p_dataset")
    rows = deltalake.DeltaTable(str(dataset / "t")).to_pyarrow_table().sort_by("id").to_pylist()
    assert [(row["id"], row["v"]) for row in rows] == [(0, "v0"), (1, "v1"), (2, "v1")]
    tags = deltalake.DeltaTable(str(dataset / "t__tags")).to_pyarrow_table()
    assert tags.num_rows == 6
