"""The settings a local JVM session that sparkload starts is given for loads of one
machine's size (docs/engines.md, "Tuning a JVM session"), and a user's own session left
with the settings its owner gave it. Runs with ``--engine=spark``."""

from __future__ import annotations

import os
from pathlib import Path

from test_jvm_lean import run_child

import sparkload as sl

TUNED = (
    "spark.sql.shuffle.partitions",
    "spark.databricks.delta.snapshotPartitions",
    "spark.sql.adaptive.enabled",
)

# The settings made on the session (at its start or since), not Spark's defaults.
PRINT_TUNED = f"""
made = pipeline.spark._jsparkSession.sessionState().conf().getAllConfs()
for key in {TUNED!r}:
    print("SETTING", key, made.apply(key) if made.contains(key) else "(unset)")
"""

USERS = """
import sys
from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession
import sparkload as sl
from sparkload.engine.jvm import DELTA_SESSION_CONF

builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for key, value in DELTA_SESSION_CONF.items():
    builder = builder.config(key, value)
spark = configure_spark_with_delta_pip(builder).getOrCreate()
pipeline = sl.pipeline("p", destination=sl.destinations.delta(sys.argv[1] + "/lake"),
                       pipelines_dir=sys.argv[1] + "/pl", spark=spark)
pipeline.run([{"id": 1}], table_name="t", write_disposition="merge", primary_key="id")
"""


def settings(code: str, tmp_path: Path, **variables: str) -> dict[str, str]:
    done = run_child(code + PRINT_TUNED, tmp_path, **variables)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.split(" ", 2) for line in done.stdout.splitlines() if line.startswith("SETTING ")]
    return {key: value for _, key, value in lines}


def test_a_local_session_sparkload_starts_has_its_partitions_sized_to_the_machine(
    pipeline: sl.Pipeline,
) -> None:
    """The test process's own JVM session is one sparkload started for ``local[2]``
    (tests/engines.py): read here, where a process of its own would pay a JVM start. A
    test that left these settings changed would fail it too."""
    made = pipeline.spark._jsparkSession.sessionState().conf().getAllConfs()
    cores = os.cpu_count() or 2
    assert {key: made.apply(key) if made.contains(key) else "(unset)" for key in TUNED} == {
        "spark.sql.shuffle.partitions": str(2 * cores),
        "spark.databricks.delta.snapshotPartitions": str(cores),
        "spark.sql.adaptive.enabled": "false",
    }


def test_a_session_the_user_passes_keeps_the_settings_its_owner_gave_it(tmp_path: Path) -> None:
    assert settings(USERS, tmp_path) == {
        "spark.sql.shuffle.partitions": "(unset)",
        "spark.databricks.delta.snapshotPartitions": "(unset)",
        "spark.sql.adaptive.enabled": "(unset)",
    }
