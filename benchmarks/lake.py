"""Where a benchmark runner puts its lake: a local folder, or a bucket for the bucket runs.

run.py's bucket cases (B1) start an S3 API server and name a bucket in
``SPARKLOAD_BENCH_BUCKET`` with the standard AWS variables (and dlt's names for the same
settings) in the runners' environment; each run then writes under a folder of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

BUCKET_VARIABLE = "SPARKLOAD_BENCH_BUCKET"


def lake(work: Path) -> str:
    """The lake's folder or URL for a run whose working folder is ``work``."""
    bucket = os.environ.get(BUCKET_VARIABLE)
    return f"{bucket}/{work.name}/lake" if bucket else str(work / "lake")
