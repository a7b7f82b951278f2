"""The python of a virtualenv with SQLMesh, installed on first use.

tests/sqlmesh_diff drives SQLMesh's own scheduler in it (tests/sqlmesh_diff/sqlmesh_oracle.py)
as the oracle sparkload's time intervals are compared against; SQLMesh never shares an
environment with sparkload.

- ``SPARKLOAD_SQLMESH_PYTHON`` names a python that already has SQLMesh: it is used as is and
  nothing is installed into it.
- ``SPARKLOAD_SQLMESH_VENV`` puts the virtualenv somewhere else than
  ``benchmarks/_work/sqlmesh-venv``.

The install runs under the same exclusive lock and completion marker as dlt's virtualenv
(benchmarks/dlt_env.py, whose helpers this module uses), so two callers at once never see a
half-installed SQLMesh.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

# SQLMesh's scheduler is the oracle: a new release may change what it loads, so the version
# is pinned and moved on purpose. duckdb is the engine of the oracle's throwaway project.
SQLMESH_REQUIREMENT = "sqlmesh==0.236.*"
DUCKDB_REQUIREMENT = "duckdb>=1.0"
DEFAULT_VENV = Path(__file__).resolve().parent / "_work" / "sqlmesh-venv"


def _dlt_env() -> ModuleType:
    # benchmarks/ is no package: dlt_env.py is loaded from its file, as the tests load it.
    path = Path(__file__).resolve().parent / "dlt_env.py"
    spec = importlib.util.spec_from_file_location("dlt_env", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sqlmesh_venv() -> Path:
    """Where the virtualenv with SQLMesh lives (``SPARKLOAD_SQLMESH_VENV`` or the default)."""
    return Path(os.environ.get("SPARKLOAD_SQLMESH_VENV") or DEFAULT_VENV).resolve()


def python_with_sqlmesh() -> str:
    """The python of a virtualenv with SQLMesh and duckdb, installing it if missing."""
    named = os.environ.get("SPARKLOAD_SQLMESH_PYTHON")
    if named:
        return named
    env = _dlt_env()
    venv = sqlmesh_venv()
    python = venv / "bin" / "python"
    wanted = [SQLMESH_REQUIREMENT, DUCKDB_REQUIREMENT]
    if env._missing(venv, wanted):
        with env._exclusive(venv.with_name(venv.name + ".lock")):
            # Another process may have installed it while this one waited for the lock.
            installed = env._installed(venv)
            if SQLMESH_REQUIREMENT not in installed:
                env._create(venv)
                installed = []
            for requirement in env._missing(venv, wanted):
                env._pip_install(python, requirement)
                installed.append(requirement)
                env._write_marker(venv, installed)
    return str(python)


if __name__ == "__main__":
    print(python_with_sqlmesh())
