"""M1 with sparkload: 10,000,000 flat rows merged on id, then a timed merge of 10,000 changed rows.

The first load yields pyarrow Tables of 1,000,000 rows (Python dicts for 10M rows would time
the generator more than the loader); the merged batch is 10,000 Python dicts, half updates of
the last ids and half new ids. Prints one JSON line: {"first": s, "merge": s, "rows": n,
"updated": n, "commit": {...what the merge commit did, from the Delta log...}}.

    python benchmarks/sparkload_m1.py WORK_DIR [ROWS]

The lake is in WORK_DIR, or in the bucket run.py names for its bucket cases (lake.py).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from delta_stats import last_commit, table_summary
from lake import lake
from workload import M1_CHANGED, M1_ROWS, m1_changes, m1_tables

import sparkload as sl


def main(work: Path, rows: int) -> None:
    pipeline = sl.pipeline(
        "bench_m1",
        destination=sl.destinations.delta(lake(work)),
        pipelines_dir=work / "pipelines",
        dev_mode=True,
    )
    _ = pipeline.spark  # the engine's start-up is not part of a load
    out: dict[str, object] = {}
    started = time.perf_counter()
    pipeline.run(sl.resource(m1_tables(rows), name="m1", primary_key="id", write_disposition="merge"))
    out["first"] = time.perf_counter() - started
    uri = f"{pipeline.dataset_uri}/m1"
    out["after_first"] = table_summary(uri)

    started = time.perf_counter()
    pipeline.run(
        sl.resource(m1_changes(rows, M1_CHANGED), name="m1", primary_key="id", write_disposition="merge")
    )
    out["merge"] = time.perf_counter() - started
    out["commit"] = last_commit(uri)
    table = pipeline.table("m1")
    out["rows"] = table.count()
    out["updated"] = table.filter("name LIKE 'changed%'").count()
    print(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else M1_ROWS)
