"""C1 with sparkload: 1,000 flat rows of N columns appended in one ``pipeline.run``.

Prints one JSON line: {"columns": n, "rows": n, "seconds": s, "steps": {step: seconds}}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from workload import C1_ROWS, c1_rows

import sparkload as sl


def main(work: Path, columns: int) -> None:
    pipeline = sl.pipeline(
        "bench_c1",
        destination=sl.destinations.delta(work / "lake"),
        pipelines_dir=work / "pipelines",
        dev_mode=True,
    )
    _ = pipeline.spark  # the engine's start-up is not part of a load
    started = time.perf_counter()
    info = pipeline.run(sl.resource(c1_rows(columns), name="c1", write_disposition="append"))
    seconds = time.perf_counter() - started
    steps: dict[str, float] = {}
    for timing in pipeline.last_trace.timings:
        steps[timing.step] = steps.get(timing.step, 0.0) + timing.seconds
    stored = pipeline.table("c1")
    assert info.row_counts["c1"] == C1_ROWS
    print(
        json.dumps(
            {"columns": len(stored.columns), "rows": stored.count(), "seconds": seconds, "steps": steps}
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
