"""Run W1 with sparkload and with dlt side by side, and W2 with sparkload; print a table.

    python benchmarks/run.py [--skip-dlt] [--skip-w2] [--repeat N]

dlt is installed on first use into benchmarks/_work/dlt-venv (dlt[deltalake] 1.31), so
the two libraries never share an environment. Each run is a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"
DLT_VENV = WORK / "dlt-venv"
DLT_REQUIREMENT = "dlt[deltalake,filesystem]==1.31.*"


def _python_with_dlt() -> str:
    python = DLT_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(DLT_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", DLT_REQUIREMENT], check=True)
    return str(python)


def _run(python: str, script: str, *args: str) -> tuple[dict[str, float], int]:
    """Run a runner in a fresh process; returns its JSON line and its peak RSS in bytes."""
    with tempfile.TemporaryDirectory(dir=WORK) as work:
        env = dict(os.environ, PYTHONPATH=str(HERE))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        out = subprocess.run(
            [python, str(HERE / script), work, *args], env=env, check=True, capture_output=True, text=True
        )
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        # ru_maxrss of children is the largest of any child so far: only a new maximum is exact.
        peak = peak_kib * 1024 if peak_kib > before else -1
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1]
        return json.loads(line), peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-dlt", action="store_true")
    parser.add_argument("--skip-w2", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)

    for attempt in range(args.repeat):
        ours, _ = _run(sys.executable, "sparkload_w1.py")
        print(
            f"W1 sparkload: first {ours['first']:.2f}s, second {ours['second']:.2f}s, rows {ours['rows']:,}"
        )
        if not args.skip_dlt:
            theirs, _ = _run(_python_with_dlt(), "dlt_w1.py")
            print(
                f"W1 dlt:       first {theirs['first']:.2f}s, second {theirs['second']:.2f}s, "
                f"rows {theirs['rows']:,}"
            )
            print(
                f"W1 ratio (dlt / sparkload): first {theirs['first'] / ours['first']:.1f}x, "
                f"second {theirs['second'] / ours['second']:.1f}x"
            )
        if attempt + 1 < args.repeat:
            continue
    if not args.skip_w2:
        w2, peak = _run(sys.executable, "sparkload_w2.py")
        peak_text = f"{peak / 2**30:.2f} GiB" if peak > 0 else "not measured (an earlier child was larger)"
        print(f"W2 sparkload: {w2['rows']:,} rows appended in {w2['seconds']:.1f}s, peak RSS {peak_text}")
    shutil.rmtree(WORK / "tmp", ignore_errors=True)


if __name__ == "__main__":
    main()
