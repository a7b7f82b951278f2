"""The engines the behaviour tests run on, chosen with ``pytest --engine=NAME``.

- ``embedded``: the Sail server inside the test process (the default);
- ``spark``: Apache Spark on the JVM with delta-spark (``local[2]``), started by sparkload
  from ``SPARKLOAD_SPARK_MASTER`` (needs the ``spark`` extra instead of ``local``);
- ``connect``: a Sail Spark Connect server in another process, reached by ``sc://`` URL;
- ``cluster``: the same server in Sail's local-cluster mode (driver and worker actors).

The engine is chosen through the environment, so the subprocesses that crash tests start
run on it too. A test that shows an engine's limit is marked with ``engine_limit``: a
strict xfail naming the limit, never a skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ENGINES = ("embedded", "spark", "connect", "cluster")
JVM_MASTER = "local[2]"
_current = ["embedded"]
_server: list[subprocess.Popen[bytes]] = []


def current() -> str:
    return _current[0]


def engine_limit(*engines: str, reason: str) -> Any:
    """A strict xfail on ``engines``: the test must fail there, for the reason given."""
    return pytest.mark.xfail(current() in engines, reason=f"engine limit: {reason}", strict=True)


def environment(engine: str) -> dict[str, str]:
    """The variables that send sparkload (and the subprocesses tests start) to ``engine``."""
    if engine == "spark":
        return {"SPARKLOAD_SPARK_MASTER": JVM_MASTER}
    if engine in ("connect", "cluster"):
        return {"SPARKLOAD_SPARK_REMOTE": os.environ["SPARKLOAD_TEST_REMOTE"]}
    return {}


def start(engine: str) -> None:
    """Called once per test run: starts the engine's server where it has one."""
    if engine not in ENGINES:
        raise pytest.UsageError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    _current[0] = engine
    os.environ["SPARKLOAD_TEST_ENGINE"] = engine
    if engine in ("connect", "cluster"):
        extra = {"SAIL_MODE": "local-cluster"} if engine == "cluster" else {}
        process, url = start_sail_server(extra)
        _server.append(process)
        os.environ["SPARKLOAD_TEST_REMOTE"] = url


def stop() -> None:
    for process in _server:
        process.terminate()
        process.wait(timeout=30)
    _server.clear()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sail_command() -> list[str]:
    sail = shutil.which("sail", path=str(Path(sys.executable).parent)) or shutil.which("sail")
    if sail is None:
        raise RuntimeError("the sail command is not installed (pip install 'sparkload[local]')")
    return [sail, "spark", "server", "--ip", "127.0.0.1"]


def start_sail_server(
    extra_env: dict[str, str] | None = None, wrap: list[str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """A Sail Spark Connect server in a process of its own on a free loopback port (run
    under ``wrap``, a command prefix, if given), and its URL once it accepts connections."""
    port = free_port()
    env = dict(os.environ, RUST_LOG="error", **(extra_env or {}))
    command = [*(wrap or []), *sail_command(), "--port", str(port)]
    process = subprocess.Popen(command, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the sail server exited with {process.returncode}: {command}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"sc://127.0.0.1:{port}"
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("the sail server did not start within 60 s")
