"""Run the ``sparkload`` command as users run it: the installed console script, in a
process of its own (with its own embedded engine where a command needs one)."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

# Where the installer put the console script of the environment running the tests.
COMMAND = Path(sysconfig.get_path("scripts")) / "sparkload"


def sparkload(*args: Any, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert COMMAND.exists(), f"no console script at {COMMAND}: install the package (pip install -e .)"
    return subprocess.run(
        [str(COMMAND), *(str(a) for a in args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=dict(os.environ, RUST_LOG="error"),
    )


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def failed(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``error: ...`` line a failing command prints on stderr."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]
