"""A JVM Spark the user set up: used when active, refused before extract without Delta Lake.
Each case starts a JVM of its own (a session's Delta set-up is fixed when its JVM starts),
so this folder runs only with ``--engine=spark`` (``nox -s spark``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import deltalake

RUN = """
import sys
from pyspark.sql import SparkSession
import sparkload as sl
from sparkload.exceptions import EngineError

def rows():
    yield {"id": 1, "v": "x"}
    yield {"id": 2, "v": "y"}

builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
"""


def run_script(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # The user's own session decides: no engine chosen through the environment.
    env = {
        k: v for k, v in os.environ.items() if k not in ("SPARKLOAD_SPARK_MASTER", "SPARKLOAD_SPARK_REMOTE")
    }
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(RUN) + textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=600, env=env
    )


def test_a_session_without_delta_is_refused_before_extract_saying_how_to_fix_it(tmp_path: Path) -> None:
    done = run_script(
        """
        spark = builder.getOrCreate()
        def never():
            raise AssertionError("extraction started before the engine was checked")
            yield {}
        pipeline = sl.pipeline("p", destination=sl.destinations.delta(sys.argv[1] + "/lake"),
                               pipelines_dir=sys.argv[1] + "/pl", spark=spark)
        try:
            pipeline.run(never(), table_name="t")
        except EngineError as exc:
            print("REFUSED", exc)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "REFUSED this Spark session has no Delta Lake" in done.stdout
    for advice in ("pip install 'sparkload[spark]'", "configure_spark_with_delta_pip", "Databricks"):
        assert advice in done.stdout
    assert not (tmp_path / "lake").exists() or not any((tmp_path / "lake").rglob("_delta_log"))


def test_the_active_session_is_used_when_no_engine_is_named(tmp_path: Path) -> None:
    """A notebook's or a spark-submit job's ``spark``: sparkload runs on it and leaves its
    settings as they were."""
    done = run_script(
        """
        from delta import configure_spark_with_delta_pip
        from sparkload.engine.jvm import DELTA_SESSION_CONF
        for key, value in DELTA_SESSION_CONF.items():
            builder = builder.config(key, value)
        spark = configure_spark_with_delta_pip(builder).getOrCreate()
        spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
        pipeline = sl.pipeline("p", destination=sl.destinations.delta(sys.argv[1] + "/lake"),
                               pipelines_dir=sys.argv[1] + "/pl")
        pipeline.run(rows(), table_name="t", write_disposition="merge", primary_key="id")
        print("SAME", pipeline.spark is spark, spark.conf.get("spark.sql.session.timeZone"))
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SAME True Asia/Tokyo" in done.stdout
    table = deltalake.DeltaTable(str(tmp_path / "lake" / "p_dataset" / "t")).to_pyarrow_table()
    assert sorted(table.to_pylist(), key=lambda r: r["id"])[0]["v"] == "x"
    assert table.sort_by("id").column("v").to_pylist() == ["x", "y"]
