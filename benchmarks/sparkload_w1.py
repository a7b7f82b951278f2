"""W1 with sparkload: first merge load of 1,000,000 rows, then 10,000 rows half overlapping.

Prints one JSON line: {"engine_start": seconds, "first": seconds, "second": seconds, "rows": n}.
The engine is the one sparkload picks from the environment: the embedded one by default,
a JVM Spark with ``SPARKLOAD_SPARK_MASTER=local[2]`` (see docs/engines.md). The lake is in
the working folder, or in the bucket run.py names for its bucket cases (lake.py).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from lake import lake
from workload import FIRST_LOAD, SECOND_LOAD, SECOND_START, w1_rows

import sparkload as sl


def main(work: Path) -> None:
    pipeline = sl.pipeline(
        "bench_w1",
        destination=sl.destinations.delta(lake(work)),
        pipelines_dir=work / "pipelines",
        dev_mode=True,
    )
    started = time.perf_counter()
    _ = pipeline.spark  # the engine's start-up is not part of a load: reported on its own
    timings = {"engine_start": time.perf_counter() - started}
    for label, count, start in (("first", FIRST_LOAD, 0), ("second", SECOND_LOAD, SECOND_START)):
        resource = sl.resource(w1_rows(count, start), name="w1", primary_key="id", write_disposition="merge")
        started = time.perf_counter()
        pipeline.run(resource)
        timings[label] = time.perf_counter() - started
    timings["rows"] = pipeline.table("w1").count()
    print(json.dumps(timings))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
