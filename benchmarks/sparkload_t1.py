"""T1 with sparkload: a source of 20 merge resources of 100 rows with a nested list (40
tables), run three times in one process: the first run creates the tables, the next two merge.

Prints one JSON line: {"first": seconds, "merges": [seconds, seconds], "steps": {...}}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import sparkload as sl

RESOURCES = 20
ROWS = 100


def t1_source(run: int) -> list[Any]:
    return [
        sl.resource(
            [{"id": i + 1000 * run, "v": f"x{i}", "tags": [1, 2]} for i in range(ROWS)],
            name=f"t{k}",
            primary_key="id",
            write_disposition="merge",
        )
        for k in range(RESOURCES)
    ]


def main(work: Path) -> None:
    pipeline = sl.pipeline(
        "bench_t1",
        destination=sl.destinations.delta(work / "lake"),
        pipelines_dir=work / "pipelines",
        dev_mode=True,
    )
    _ = pipeline.spark  # the engine's start-up is not part of a load
    seconds = []
    for run in range(3):
        started = time.perf_counter()
        pipeline.run(t1_source(run))
        seconds.append(time.perf_counter() - started)
    assert pipeline.table("t0").count() == 3 * ROWS
    print(json.dumps({"first": seconds[0], "merges": seconds[1:]}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
