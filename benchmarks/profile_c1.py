"""Where a C1 run's time goes: every Spark Connect round trip (plan analysis, action,
command) of one ``pipeline.run`` of N columns, timed and attributed to sparkload's calling
function.

    python benchmarks/profile_c1.py WORK_DIR COLUMNS

Prints the pipeline's steps, then one line per round trip and a sum per caller.
"""

from __future__ import annotations

import collections
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql.connect.client.core import SparkConnectClient
from workload import c1_rows

import sparkload as sl

CALLS: list[tuple[str, str, float]] = []


def _caller() -> str:
    """The innermost sparkload frames that led to the round trip."""
    frames = [f for f in traceback.extract_stack() if "/sparkload/" in f.filename]
    return " < ".join(f"{Path(f.filename).stem}.{f.name}:{f.lineno}" for f in reversed(frames[-3:]))


def _timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            label = f"{name}({kwargs.get('method', args[1:2])})" if name == "_analyze" else name
            CALLS.append((label, _caller(), time.perf_counter() - started))

    return wrapper


def main(work: Path, columns: int) -> None:
    for name in ("_analyze", "_execute_and_fetch", "execute_command"):
        setattr(SparkConnectClient, name, _timed(name, getattr(SparkConnectClient, name)))
    pipeline = sl.pipeline(
        "prof_c1", destination=sl.destinations.delta(work / "lake"), pipelines_dir=work / "p", dev_mode=True
    )
    _ = pipeline.spark
    CALLS.clear()
    started = time.perf_counter()
    pipeline.run(sl.resource(c1_rows(columns), name="c1", write_disposition="append"))
    print(f"run: {time.perf_counter() - started:.1f}s")
    for timing in pipeline.last_trace.timings:
        print(f"  {timing.step}: {timing.seconds:.1f}s")
    per_caller: dict[str, float] = collections.defaultdict(float)
    for label, caller, seconds in CALLS:
        print(f"{seconds:7.2f}s {label:28} {caller}")
        per_caller[caller] += seconds
    print("-- by caller")
    for caller, seconds in sorted(per_caller.items(), key=lambda kv: -kv[1]):
        print(f"{seconds:7.2f}s {caller}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
