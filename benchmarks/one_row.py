"""The one-row run in a new process: ``pipeline.run([{"id": 1}], table_name="t")`` on the
embedded engine, in N fresh interpreters one after another, each into a new folder.

Prints, per process and then as min / median over the N, the wall time of the whole
process and where it went:

- ``start``: from the process's spawn to the script's first line (the interpreter's start);
- ``import``: ``import sparkload``;
- ``pipeline``: ``sl.pipeline(...)``;
- ``run``: ``pipeline.run(...)``;
- ``atexit``: the script's end to the last ``atexit`` handler's end (the embedded server's
  stop, PySpark's hooks);
- ``exit``: the last ``atexit`` handler to the process's end (the interpreter's finalization).

Usage: ``python benchmarks/one_row.py [N] [--checkout PATH ...]``; with several checkouts
(the code before and after a change) their processes alternate, one of each in turn, so a
shared machine's load falls on both alike. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PHASES = ("start", "import", "pipeline", "run", "atexit", "exit")

# The child: each mark is a wall-clock time (time.time(), comparable across processes).
# Its atexit handler is registered first, so it runs last of all.
_CHILD = """
import time
_marks = {"first_line": time.time()}
import atexit, json, sys

def _report():
    _marks["atexit_done"] = time.time()
    sys.stdout.write(json.dumps(_marks) + "\\n")
    sys.stdout.flush()

atexit.register(_report)
import sparkload as sl
_marks["imported"] = time.time()
pipeline = sl.pipeline(
    "one_row", destination=sl.destinations.delta("lake"), pipelines_dir="pipelines",
    dataset_name="ds", progress=None,
)
_marks["pipeline"] = time.time()
pipeline.run([{"id": 1}], table_name="t")
_marks["run"] = time.time()
"""


def one_process(checkout: Path) -> dict[str, float]:
    """Run the one-row script once in a fresh interpreter; the seconds of each phase."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKLOAD_")}
    env.update(PYTHONPATH=str(checkout), RUST_LOG="error")
    with tempfile.TemporaryDirectory(prefix="one_row_") as work:
        script = Path(work) / "one_row_child.py"
        script.write_text(_CHILD)
        spawned = time.time()
        result = subprocess.run(
            [sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True, check=False
        )
        ended = time.time()
    if result.returncode != 0:
        raise SystemExit(f"the one-row run failed in {checkout}:\n{result.stderr}")
    marks = json.loads(result.stdout.strip().splitlines()[-1])
    return {
        "wall": ended - spawned,
        "start": marks["first_line"] - spawned,
        "import": marks["imported"] - marks["first_line"],
        "pipeline": marks["pipeline"] - marks["imported"],
        "run": marks["run"] - marks["pipeline"],
        "atexit": marks["atexit_done"] - marks["run"],
        "exit": ended - marks["atexit_done"],
    }


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _row(label: str, values: dict[str, float]) -> str:
    return f"{label:<28} wall {values['wall']:6.2f} s  " + "  ".join(
        f"{phase} {values[phase]:5.2f}" for phase in PHASES
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=5, help="processes per checkout")
    parser.add_argument(
        "--checkout",
        action="append",
        type=Path,
        help="a checkout whose sparkload to run (repeatable; default: this one)",
    )
    args = parser.parse_args()
    checkouts = [c.resolve() for c in (args.checkout or [Path(__file__).resolve().parent.parent])]
    print(f"load average (1/5/15 min) before: {_load()}", flush=True)
    results: dict[Path, list[dict[str, float]]] = {c: [] for c in checkouts}
    for index in range(args.n):
        for checkout in checkouts:
            timing = one_process(checkout)
            results[checkout].append(timing)
            print(_row(f"{checkout.name} #{index + 1}", timing) + f"  (load {_load()})", flush=True)
    print(f"load average (1/5/15 min) after: {_load()}")
    for checkout, timings in results.items():
        for name, pick in (("min", min), ("median", statistics.median)):
            summary = {key: pick(t[key] for t in timings) for key in ("wall", *PHASES)}
            print(_row(f"{checkout.name} {name}", summary))


if __name__ == "__main__":
    main()
