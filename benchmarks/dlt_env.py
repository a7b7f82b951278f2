"""The python of a virtualenv with dlt, installed on first use.

The benchmarks run dlt in it side by side with sparkload, and tests/test_rest_api.py runs a
dlt script in it as the oracle sparkload's rest_api is compared against; dlt never shares an
environment with sparkload.

- ``SPARKLOAD_DLT_PYTHON`` names a python that already has dlt: it is used as is and nothing
  is installed into it.
- ``SPARKLOAD_DLT_VENV`` puts the virtualenv somewhere else than ``benchmarks/_work/dlt-venv``.

Two processes may ask at once (the benchmarks and a test run, or two test runs): the install
runs under an exclusive lock, and a virtualenv counts as installed only once a marker written
after pip succeeded says so, so a half-installed one (an install killed or failed midway) is
never used: the next caller rebuilds it from scratch.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DLT_REQUIREMENT = "dlt[deltalake,filesystem]==1.31.*"
DLT_DUCKDB_REQUIREMENT = "dlt[deltalake,filesystem,duckdb]==1.31.*"
# dlt 1.31's filesystem source reads CSV through duckdb relations' fetchmany(), which duckdb
# 2.0 removed; its extra leaves duckdb unbounded, so the release it works with is pinned.
DUCKDB_REQUIREMENT = "duckdb>=1,<2"
# Cases with Pydantic models as columns= need it beside dlt (dlt 1.31 takes pydantic 2).
PYDANTIC_REQUIREMENT = "pydantic>=2"
# dlt's `dlt init` templates run as shipped (tests/dlt_templates) need what dlt does not
# install: pandas (the dataframe template; the filesystem one's Excel reader, with openpyxl),
# SQLAlchemy (dlt's sql_database extra) and the MySQL driver the sql_database and default
# templates connect with.
TEMPLATES_REQUIREMENTS = ("pandas>=2", "openpyxl>=3", "dlt[sql-database]==1.31.*", "pymysql>=1")
DEFAULT_VENV = Path(__file__).resolve().parent / "_work" / "dlt-venv"
# Written into the virtualenv after pip succeeded: the requirements installed, one a line.
MARKER = "sparkload-installed.txt"


def dlt_venv() -> Path:
    """Where the virtualenv with dlt lives (``SPARKLOAD_DLT_VENV`` or the default)."""
    return Path(os.environ.get("SPARKLOAD_DLT_VENV") or DEFAULT_VENV).resolve()


def python_with_dlt(duckdb: bool = False, templates: bool = False) -> str:
    """The python of a virtualenv with dlt (and duckdb, and what dlt's templates import, when
    asked), installing it if missing."""
    named = os.environ.get("SPARKLOAD_DLT_PYTHON")
    if named:
        return named
    venv = dlt_venv()
    python = venv / "bin" / "python"
    wanted = [
        DLT_REQUIREMENT,
        *([DLT_DUCKDB_REQUIREMENT, DUCKDB_REQUIREMENT] if duckdb else []),
        PYDANTIC_REQUIREMENT,
        *(TEMPLATES_REQUIREMENTS if templates else ()),
    ]
    if _missing(venv, wanted):
        with _exclusive(venv.with_name(venv.name + ".lock")):
            # Another process may have installed it while this one waited for the lock.
            installed = _installed(venv)
            if DLT_REQUIREMENT not in installed:
                _create(venv)
                installed = []
            for requirement in _missing(venv, wanted):
                _pip_install(python, requirement)
                installed.append(requirement)
                _write_marker(venv, installed)
    return str(python)


def _installed(venv: Path) -> list[str]:
    try:
        return (venv / MARKER).read_text().splitlines()
    except FileNotFoundError:
        return []


def _missing(venv: Path, wanted: list[str]) -> list[str]:
    installed = _installed(venv)
    return [requirement for requirement in wanted if requirement not in installed]


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path``; the OS releases it if the process dies."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _create(venv: Path) -> None:
    # --clear: whatever an earlier, unfinished install left there is not trusted.
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, env=_clean_env())


def _pip_install(python: Path, requirement: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", requirement], check=True, env=_clean_env())


def _write_marker(venv: Path, installed: list[str]) -> None:
    # Written aside then renamed, so a reader sees the old marker or the new one, never half.
    partial = venv / f"{MARKER}.{os.getpid()}"
    partial.write_text("".join(f"{requirement}\n" for requirement in installed))
    os.replace(partial, venv / MARKER)


def _clean_env() -> dict[str, str]:
    # The caller's PYTHONPATH (a test run puts sparkload's checkout on it) has no business in
    # the environment dlt is installed into.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


if __name__ == "__main__":
    print(python_with_dlt(duckdb="--duckdb" in sys.argv[1:], templates="--templates" in sys.argv[1:]))
