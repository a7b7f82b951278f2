"""S1 with dlt, for comparison with sparkload_s1.py (the same data, the same JSON line).

dlt 1.31's filesystem destination offers only the upsert, insert-only and cdc merge
strategies for Delta tables, so with the default destination (filesystem, table_format
"delta") the first load fails and the runner prints {"error": ...} and exits 1. With
--duckdb it runs dlt's scd2 on its duckdb destination instead: a reference for dlt's scd2
cost, not a Delta Lake comparison (needs `pip install duckdb` in dlt's virtualenv).

    python benchmarks/dlt_s1.py WORK_DIR [ROWS] [--duckdb]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import dlt
from workload import S1_CHANGE_EVERY, S1_ROWS, s1_rows

SCD2 = {"disposition": "merge", "strategy": "scd2"}


def main(work: Path, rows: int, duckdb: bool) -> int:
    if duckdb:
        destination: Any = dlt.destinations.duckdb(str(work / "s1.duckdb"))
        hints: dict[str, Any] = {}
    else:
        destination = dlt.destinations.filesystem(bucket_url=str(work / "lake"))
        hints = {"table_format": "delta"}
    pipeline = dlt.pipeline(
        "bench_s1_dlt",
        destination=destination,
        pipelines_dir=str(work / "pipelines"),
        dataset_name="s1",
        dev_mode=True,
    )
    out: dict[str, Any] = {"destination": "duckdb" if duckdb else "filesystem/delta"}
    for label, change_every in (("first", None), ("second", S1_CHANGE_EVERY)):
        resource = dlt.resource(s1_rows(rows, change_every), name="s1", write_disposition=SCD2, **hints)
        started = time.perf_counter()
        try:
            pipeline.run(resource)
        except Exception as exc:
            cause = exc.__cause__ or exc
            out["error"] = f"{label} load: {type(cause).__name__}: {cause}"[:2000]
            print(json.dumps(out))
            return 1
        out[label] = time.perf_counter() - started
    with pipeline.sql_client() as client:
        table = client.make_qualified_table_name("s1")
        total, retired = client.execute_sql(f"SELECT count(*), count(_dlt_valid_to) FROM {table}")[0]
    out["rows"], out["retired"] = total, retired
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    sys.exit(main(Path(args[0]), int(args[1]) if len(args) > 1 else S1_ROWS, "--duckdb" in sys.argv))
