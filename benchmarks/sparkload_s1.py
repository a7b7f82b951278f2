"""S1 with sparkload: SCD2 over a 1,000,000-row dimension, then a full extract with 1% changed.

First load: 1,000,000 rows {"customer_key", "c1", "c2"} with write_disposition merge/scd2
(a full extract). Second load, timed: the same extract with c1 changed in every 100th row,
so 10,000 versions are retired and 10,000 new ones inserted. Prints one JSON line:
{"first": s, "second": s, "rows": n, "retired": n, "commit": {...}}, or {"error": ...} and
exits 1 when the load fails.

    python benchmarks/sparkload_s1.py WORK_DIR [ROWS]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from delta_stats import last_commit
from workload import S1_CHANGE_EVERY, S1_ROWS, s1_rows

import sparkload as sl

SCD2 = {"disposition": "merge", "strategy": "scd2"}


def main(work: Path, rows: int) -> int:
    pipeline = sl.pipeline(
        "bench_s1",
        destination=sl.destinations.delta(work / "lake"),
        pipelines_dir=work / "pipelines",
        dev_mode=True,
    )
    _ = pipeline.spark  # the engine's start-up is not part of a load
    out: dict[str, object] = {}
    for label, change_every in (("first", None), ("second", S1_CHANGE_EVERY)):
        resource = sl.resource(s1_rows(rows, change_every), name="s1", write_disposition=SCD2)
        started = time.perf_counter()
        try:
            pipeline.run(resource)
        except Exception as exc:
            out["error"] = f"{label} load: {type(exc).__name__}: {exc}"[:2000]
            print(json.dumps(out))
            return 1
        out[label] = time.perf_counter() - started
    out["commit"] = last_commit(f"{pipeline.dataset_uri}/s1")
    table = pipeline.table("s1")
    valid_to = next(c for c in table.columns if c.endswith("valid_to"))
    out["rows"] = table.count()
    out["retired"] = table.filter(f"{valid_to} IS NOT NULL").count()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else S1_ROWS))
