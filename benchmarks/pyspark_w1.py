"""W1 written by hand in PySpark with delta-spark: the anchor sparkload's JVM path is measured
against (the job a Spark engineer would write for the same data, without sparkload).

Each load: the rows as NDJSON (orjson) in the work folder, read by ``spark.read.json`` with
the schema given, flattened into the root table and the tags exploded into a child table
keyed by (id, pos). The first load writes both Delta tables; the second MERGEs the root on
``id`` and replaces the tags of every id it carries (a MERGE on ``id`` that deletes them,
then an append of the new ones).

With ``--infer-schema`` the job is not told the schema: it infers it over every record
once (as sparkload must), reads both tables with it and casts ``ts``'s ISO strings to
timestamps: what the same job costs when the schema is not known beforehand.

With ``--checked`` it also does, before each load's writes, the work sparkload's
guarantees ask of any design: the schema inferred over every record (a later 2.5 in an
integer field is not cut to 2), one pass that profiles the columns (values per column,
which strings hold ISO timestamps, the integers' bounds: the types come from the values)
and the distinct ids counted (a merge must know whether a key repeats). It is the least a
loader that infers its types can cost beside the anchor, however it is built.

Prints one JSON line like sparkload_w1.py's: {"engine_start", "first", "second", "rows"}.
The master is ``SPARKLOAD_SPARK_MASTER`` (``local[2]`` when unset), with the settings
sparkload gives a local session (so the two differ only in what they run).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from workload import FIRST_LOAD, SECOND_LOAD, SECOND_START, w1_rows

SCHEMA = "id BIGINT, user STRUCT<name: STRING, age: BIGINT>, amount DOUBLE, ts TIMESTAMP, tags ARRAY<STRING>"


def start(master: str) -> Any:
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    cores = os.cpu_count() or 2
    builder = (
        SparkSession.builder.master(master)
        .appName("pyspark_w1")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.shuffle.partitions", str(2 * cores))
        .config("spark.databricks.delta.snapshotPartitions", str(cores))
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_ndjson(path: Path, count: int, first: int) -> None:
    with path.open("wb") as out:
        for row in w1_rows(count, first):
            out.write(orjson.dumps(row))
            out.write(b"\n")


def load(
    spark: Any, work: Path, label: str, count: int, first: int, infer: bool = False, checked: bool = False
) -> None:
    from pyspark.sql import functions as F

    source = work / f"{label}.ndjson"
    write_ndjson(source, count, first)
    if infer or checked:
        # Not told the schema: inferred over every record once, the ISO strings then cast.
        found = spark.read.json(str(source)).schema
        rows = spark.read.schema(found).json(str(source))
        if checked:
            profile(rows)
        rows = rows.withColumn("ts", F.col("ts").cast("timestamp"))
    else:
        rows = spark.read.schema(SCHEMA).json(str(source))
    root = rows.select(
        "id",
        F.col("user.name").alias("user__name"),
        F.col("user.age").alias("user__age"),
        "amount",
        "ts",
    )
    tags = rows.select("id", F.posexplode("tags").alias("pos", "value"))
    root_path, tags_path = str(work / "lake" / "w1"), str(work / "lake" / "w1__tags")
    if label == "first":
        root.write.format("delta").mode("overwrite").save(root_path)
        tags.write.format("delta").mode("overwrite").save(tags_path)
        return
    root.createOrReplaceTempView("w1_source")
    tags.createOrReplaceTempView("w1_tags_source")
    spark.sql(
        f"MERGE INTO delta.`{root_path}` AS t USING w1_source AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(
        f"MERGE INTO delta.`{tags_path}` AS t USING (SELECT DISTINCT id FROM w1_source) AS s "
        "ON t.id = s.id WHEN MATCHED THEN DELETE"
    )
    tags.write.format("delta").mode("append").save(tags_path)


def profile(rows: Any) -> None:
    """The checks sparkload makes before it writes (see ``--checked``): one pass over the
    flattened columns, then the distinct ids."""
    from pyspark.sql import functions as F

    flat = rows.select("id", F.col("user.name").alias("name"), F.col("user.age").alias("age"), "amount", "ts")
    iso = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}"
    flat.agg(
        F.count(F.lit(1)),
        *[F.count(column) for column in flat.columns],
        *[F.sum(F.when(F.col(c).rlike(iso), 1).otherwise(0)) for c in ("name", "ts")],
        *[agg(c) for c in ("id", "age") for agg in (F.min, F.max)],
    ).collect()
    flat.select("id").distinct().count()


def main(work: Path, infer: bool = False, checked: bool = False) -> None:
    started = time.perf_counter()
    spark = start(os.environ.get("SPARKLOAD_SPARK_MASTER") or "local[2]")
    timings = {"engine_start": time.perf_counter() - started}
    for label, count, first in (("first", FIRST_LOAD, 0), ("second", SECOND_LOAD, SECOND_START)):
        started = time.perf_counter()
        load(spark, work, label, count, first, infer, checked)
        timings[label] = time.perf_counter() - started
    timings["rows"] = spark.read.format("delta").load(str(work / "lake" / "w1")).count()
    print(json.dumps(timings))


if __name__ == "__main__":
    main(Path(sys.argv[1]), infer="--infer-schema" in sys.argv[2:], checked="--checked" in sys.argv[2:])
