"""W2: append 10,000,000 W1 rows in one run; the parent measures this process's peak RSS."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from workload import W2_ROWS, w1_rows

import sparkload as sl


def main(work: Path, rows: int) -> None:
    pipeline = sl.pipeline(
        "bench_w2",
        destination=sl.destinations.delta(work / "lake"),
        pipelines_dir=work / "pipelines",
        dev_mode=True,
    )
    started = time.perf_counter()
    info = pipeline.run(sl.resource(w1_rows(rows), name="w2", write_disposition="append"))
    print(json.dumps({"seconds": time.perf_counter() - started, "rows": info.row_counts["w2"]}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else W2_ROWS)
