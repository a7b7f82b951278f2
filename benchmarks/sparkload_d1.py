"""D1 with sparkload: a Spark DataFrame of N rows made on the engine (``spark.range`` with a
text, a double and a struct column) loaded with one ``pipeline.run(df, table_name=...)``.
The DataFrame is staged by the engine, never collected: the process's peak RSS should not
grow with N (the embedded engine runs in this process, so its memory is counted too).

Prints one JSON line: {"rows": N, "seconds": s, "peak_rss": bytes, "rss_engine_started": bytes}.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

from pyspark.sql import functions as F

import sparkload as sl

KIB = 1024  # ru_maxrss is in KiB on Linux


def main(work: Path, rows: int) -> None:
    pipeline = sl.pipeline(
        "bench_d1",
        destination=sl.destinations.delta(work / "lake"),
        pipelines_dir=work / "pipelines",
        dev_mode=True,
    )
    spark = pipeline.spark  # the engine's start-up is not part of a load
    started_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KIB
    frame = spark.range(rows).select(
        F.col("id"),
        (F.col("id") % 1000).alias("customer_id"),
        F.concat(F.lit("customer-"), F.col("id").cast("string")).alias("name"),
        (F.col("id") * 0.25).alias("amount"),
        F.struct((F.col("id") % 7).alias("weekday"), F.lit("EUR").alias("currency")).alias("meta"),
    )
    started = time.perf_counter()
    info = pipeline.run(frame, table_name="d1")
    seconds = time.perf_counter() - started
    assert info.row_counts == {"d1": rows}, info.row_counts
    assert pipeline.table("d1").count() == rows
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KIB
    print(json.dumps({"rows": rows, "seconds": seconds, "peak_rss": peak, "rss_engine_started": started_rss}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000)
