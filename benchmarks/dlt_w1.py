"""W1 with dlt (filesystem destination, Delta table format), for comparison.

Runs in its own virtualenv with dlt installed. Prints one JSON line like sparkload_w1.py.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import deltalake
import dlt
from lake import lake
from workload import FIRST_LOAD, SECOND_LOAD, SECOND_START, w1_rows


def main(work: Path) -> None:
    pipeline = dlt.pipeline(
        "bench_w1_dlt",
        destination=dlt.destinations.filesystem(bucket_url=lake(work)),
        pipelines_dir=str(work / "pipelines"),
        dataset_name="w1",
        dev_mode=True,
    )
    timings = {}
    for label, count, start in (("first", FIRST_LOAD, 0), ("second", SECOND_LOAD, SECOND_START)):
        resource = dlt.resource(
            w1_rows(count, start),
            name="w1",
            primary_key="id",
            write_disposition="merge",
            table_format="delta",
        )
        started = time.perf_counter()
        pipeline.run(resource)
        timings[label] = time.perf_counter() - started
    table = deltalake.DeltaTable(f"{lake(work)}/{pipeline.dataset_name}/w1")
    timings["rows"] = table.to_pyarrow_dataset().count_rows()
    print(json.dumps(timings))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
