"""What a JVM Spark that sparkload starts pays once rather than per start or per load: the
Delta jars' resolution, Python workers (none), the engine check (none on a local master)
and the row scans that the commit log answers. Each case starts JVMs of its own, so this
folder runs only with ``--engine=spark`` (``nox -s spark``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import deltalake

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
print("JOBS AT START", len(tracker.getJobIdsForGroup(None)))
for start in (0, 1):
    rows = [{"id": i, "v": f"v{start}", "tags": ["a", "b"]} for i in range(start, start + 2)]
    pipeline.run(rows, table_name="t", write_disposition="merge", primary_key="id")
print("PYTHON", pipeline.spark.sparkContext.getConf().get("spark.pyspark.python", "(unset)"))
"""


def run_child(code: str, tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARKLOAD_SPARK_REMOTE", "PYSPARK_PYTHON")}
    env.update(SPARKLOAD_SPARK_MASTER="local[1]", XDG_CACHE_HOME=str(tmp_path / "cache"), **variables)
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    work = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    return subprocess.run(
        [sys.executable, str(script), str(work)], capture_output=True, text=True, timeout=900, env=env
    )


def printed(done: subprocess.CompletedProcess[str], label: str) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith(label + " "))[len(label) + 1 :]


def test_the_delta_jars_resolved_by_one_start_are_given_to_the_next_and_workers_run_this_python(
    tmp_path: Path,
) -> None:
    first = run_child(START, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert printed(first, "PACKAGES").startswith("io.delta:delta-spark")
    assert printed(first, "PYTHON") == f"{sys.executable} {sys.executable}"
    assert (tmp_path / "cache" / "sparkload" / "delta-jars.json").is_file()

    second = run_child(START, tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert printed(second, "PACKAGES") == ""  # no Ivy resolution
    jars = printed(second, "JARS").split(",")
    assert any("delta-spark" in jar for jar in jars)
    assert all(Path(jar.removeprefix("file:")).is_file() for jar in jars)


def test_a_merge_load_runs_no_python_worker_no_engine_check_and_no_scan_for_its_rows(tmp_path: Path) -> None:
    """With Python workers made impossible (PYSPARK_PYTHON names no program, which sparkload
    leaves as the user chose it), two merge loads with nested rows still commit: nothing
    starts a worker. The local JVM runs no job before the first load (no engine check), and
    'already committed?' is answered from the MERGE commits' userMetadata."""
    done = run_child(LOADS, tmp_path, PYSPARK_PYTHON=str(tmp_path / "no-such-python"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert printed(done, "JOBS AT START") == "0"
    assert printed(done, "PYTHON") == "(unset)"
    assert "looking for rows of load" not in done.stdout
    dataset = tmp_path / "run0" / "lake" / "p_dataset"
    rows = deltalake.DeltaTable(str(dataset / "t")).to_pyarrow_table().sort_by("id").to_pylist()
    assert [(row["id"], row["v"]) for row in rows] == [(0, "v0"), (1, "v1"), (2, "v1")]
    tags = deltalake.DeltaTable(str(dataset / "t__tags")).to_pyarrow_table()
    assert tags.num_rows == 6
