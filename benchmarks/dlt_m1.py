"""M1 with dlt (filesystem destination, Delta table format), for comparison with sparkload_m1.py.

Runs in its own virtualenv with dlt installed; the same data and the same JSON line as
sparkload_m1.py. dlt's merge on a Delta table is an upsert on the primary key (delta-rs MERGE).

    python benchmarks/dlt_m1.py WORK_DIR [ROWS]
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import deltalake
import dlt
import pyarrow.compute as pc
from delta_stats import last_commit, table_summary
from lake import lake
from workload import M1_CHANGED, M1_ROWS, m1_changes, m1_tables


def main(work: Path, rows: int) -> None:
    # Arrow items get dlt's _dlt_id and _dlt_load_id like dict rows do; without them, merging
    # the dict rows of the second load fails (the Delta table lacks the non-nullable columns).
    os.environ["NORMALIZE__PARQUET_NORMALIZER__ADD_DLT_ID"] = "true"
    os.environ["NORMALIZE__PARQUET_NORMALIZER__ADD_DLT_LOAD_ID"] = "true"
    pipeline = dlt.pipeline(
        "bench_m1_dlt",
        destination=dlt.destinations.filesystem(bucket_url=lake(work)),
        pipelines_dir=str(work / "pipelines"),
        dataset_name="m1",
        dev_mode=True,
    )
    hints = {"name": "m1", "primary_key": "id", "write_disposition": "merge", "table_format": "delta"}
    out: dict[str, object] = {}
    started = time.perf_counter()
    pipeline.run(dlt.resource(m1_tables(rows), **hints))
    out["first"] = time.perf_counter() - started
    uri = f"{lake(work)}/{pipeline.dataset_name}/m1"
    out["after_first"] = table_summary(uri)

    started = time.perf_counter()
    pipeline.run(dlt.resource(m1_changes(rows, M1_CHANGED), **hints))
    out["merge"] = time.perf_counter() - started
    out["commit"] = last_commit(uri)
    dataset = deltalake.DeltaTable(uri).to_pyarrow_dataset()  # a bucket's settings: from the environment
    out["rows"] = dataset.count_rows()

    out["updated"] = dataset.count_rows(filter=pc.starts_with(pc.field("name"), "changed"))
    print(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else M1_ROWS)
