"""The Spark jobs of sparkload's loads on a JVM Spark, each with the line of sparkload that
started it and its wall time: W1's first and second load (``--rows``, 100,000 by default)
and three one-row appends into one table (the first creates it).

    SPARKLOAD_SPARK_MASTER=local[2] python benchmarks/jvm_jobs.py WORK [--rows N] [--append-only]

Jobs are read from the JVM's status store, each named by the innermost lines of sparkload
that were running when its Py4J call was made (Spark's ``callSite.short`` property, set
before every call from sparkload's code).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workload import w1_rows

import sparkload as sl

_SPARKLOAD = str(Path(sl.__file__).parent) + "/"
_setting = threading.local()


def name_jobs_by_sparkload_lines(spark: Any) -> None:
    """Before each Py4J call made from sparkload's code, name the jobs it may start after
    the innermost three sparkload frames on the stack."""
    from py4j.java_gateway import JavaMember

    call = JavaMember.__call__
    context = spark.sparkContext._jsc

    def named(self: Any, *args: Any) -> Any:
        if not getattr(_setting, "on", False):
            frames = [f for f in traceback.extract_stack()[:-1] if f.filename.startswith(_SPARKLOAD)]
            if frames:
                site = " < ".join(
                    f"{f.filename[len(_SPARKLOAD) :]}:{f.lineno} {f.name}" for f in reversed(frames[-3:])
                )
                _setting.on = True
                try:
                    context.setLocalProperty("callSite.short", site)
                finally:
                    _setting.on = False
        return call(self, *args)

    JavaMember.__call__ = named


def jobs_since(spark: Any, known: int) -> list[tuple[str, str, float]]:
    """(call site, description, seconds) of the jobs after the first ``known``, oldest first."""
    store = spark.sparkContext._jsc.sc().statusStore()
    listed = store.jobsList(None)
    jobs = sorted((listed.apply(i) for i in range(listed.length())), key=lambda job: job.jobId())
    out = []
    for job in jobs[known:]:
        started, ended = job.submissionTime(), job.completionTime()
        seconds = (
            (ended.get().getTime() - started.get().getTime()) / 1000
            if started.isDefined() and ended.isDefined()
            else float("nan")
        )
        description = job.description().get() if job.description().isDefined() else ""
        out.append((_short(str(job.name())), _short(description), seconds))
    return out


def _short(site: str) -> str:
    return site.replace(str(Path(sl.__file__).parent.parent) + "/", "")


def phase(spark: Any, label: str, step: Callable[[], object], counted: list[int]) -> None:
    started = time.perf_counter()
    step()
    took = time.perf_counter() - started
    new = jobs_since(spark, counted[0])
    counted[0] += len(new)
    print(f"  {label}: {len(new)} jobs, {took:.1f} s")
    for site, description, seconds in new:
        print(f"    {seconds:6.2f} s  {site}{'  [' + description + ']' if description else ''}")


def load(pipeline: Any, label: str, data: object, counted: list[int], **hints: Any) -> None:
    spark = pipeline.spark
    print(f"{label}:")
    started = time.perf_counter()
    phase(spark, "run", lambda: pipeline.run(data, **hints), counted)
    print(f"  total {time.perf_counter() - started:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work", type=Path)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--append-only", action="store_true")
    args = parser.parse_args()
    pipeline = sl.pipeline(
        "jvm_jobs", destination=sl.destinations.delta(str(args.work / "lake")), pipelines_dir=args.work / "pl"
    )
    spark = pipeline.spark
    name_jobs_by_sparkload_lines(spark)
    counted = [len(jobs_since(spark, 0))]
    if not args.append_only:
        w1 = dict(table_name="w1", primary_key="id", write_disposition="merge")
        load(pipeline, f"W1 first ({args.rows} rows)", w1_rows(args.rows, 0), counted, **w1)
        second = max(args.rows // 100, 1)
        load(pipeline, f"W1 second ({second} rows)", w1_rows(second, args.rows - second // 2), counted, **w1)
    for n in range(3):
        load(
            pipeline,
            f"one-row append {n}",
            [{"id": n, "v": f"v{n}"}],
            counted,
            table_name="one",
            write_disposition="append",
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
