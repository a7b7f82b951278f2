"""tests/dlt_templates runs dlt's own `dlt init` templates under dlt and under sparkload: like
tests/dlt_diff it needs dlt's virtualenv, so it runs only with --run-dlt-diff
(`nox -s dlt_diff`), and it compares tables with that harness's pieces."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
# The differential harness whose runner, canonical values and comparison are reused here.
DLT_DIFF = HERE.parent / "dlt_diff"
if str(DLT_DIFF) not in sys.path:
    sys.path.insert(0, str(DLT_DIFF))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path != HERE and not config.getoption("--run-dlt-diff"):
        return True
    return None
