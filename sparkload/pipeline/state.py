"""Pipeline state: a JSON document kept in the destination and cached in the working dir.

The destination copy lives in the ``_sparkload_pipeline_state`` Delta table of the
dataset, one row per committed version, so a fresh machine resumes from it. A new version
is written only after every table of its load is committed.
"""

from __future__ import annotations

import copy
import datetime
import os
from pathlib import Path
from typing import Any

import orjson
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.load.table import DeltaTable

STATE_TABLE = "_sparkload_pipeline_state"
STATE_FILE = "state.json"
_SCHEMA = T.StructType(
    [
        T.StructField("pipeline_name", T.StringType()),
        T.StructField("version", T.LongType()),
        T.StructField("state", T.StringType()),
        T.StructField("load_id", T.StringType()),
        T.StructField("created_at", T.TimestampType()),
    ]
)


def empty_state() -> dict[str, Any]:
    return {"_state_version": 0, "sources": {}}


def read_local(working_dir: Path) -> dict[str, Any] | None:
    path = working_dir / STATE_FILE
    if not path.exists():
        return None
    return dict(orjson.loads(path.read_bytes()))


def write_local(working_dir: Path, state: dict[str, Any]) -> None:
    working_dir.mkdir(parents=True, exist_ok=True)
    path = working_dir / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(state, option=orjson.OPT_INDENT_2))
    os.replace(tmp, path)


def read_destination(spark: SparkSession, dataset_uri: str, pipeline_name: str) -> dict[str, Any] | None:
    table = DeltaTable(spark, dataset_uri, STATE_TABLE)
    if not table.exists():
        return None
    rows = (
        table.read()
        .where(F.col("pipeline_name") == F.lit(pipeline_name))
        .orderBy(F.col("version").desc())
        .limit(1)
        .collect()
    )
    return dict(orjson.loads(rows[0]["state"])) if rows else None


def write_destination(
    spark: SparkSession, dataset_uri: str, pipeline_name: str, state: dict[str, Any], load_id: str
) -> None:
    table = DeltaTable(spark, dataset_uri, STATE_TABLE)
    if table.exists() and table.committed_by("state:" + load_id) is not None:
        return  # this load's state is already there
    row = (
        pipeline_name,
        int(state["_state_version"]),
        orjson.dumps(state).decode(),
        load_id,
        datetime.datetime.now(datetime.timezone.utc),
    )
    df = spark.createDataFrame([row], _SCHEMA)
    table.writer(df, "append", "state:" + load_id).save(table.uri)


def next_version(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with its version bumped when its content differs from ``old``."""
    result = copy.deepcopy(new)
    strip = lambda s: {k: v for k, v in s.items() if k != "_state_version"}  # noqa: E731
    if strip(old) != strip(new):
        result["_state_version"] = int(old.get("_state_version", 0)) + 1
    return result
