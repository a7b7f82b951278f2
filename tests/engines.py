"""The engines the behaviour tests run on, chosen with ``pytest --engine=NAME``.

- ``embedded``: the Sail server inside the test process (the default);
- ``spark``: Apache Spark on the JVM with delta-spark (``local[2]``), started by sparkload
  from ``SPARKLOAD_SPARK_MASTER`` (needs the ``spark`` extra instead of ``local``);
- ``connect``: a Sail Spark Connect server in another process, reached by ``sc://`` URL;
- ``cluster``: the same server in Sail's local-cluster mode (driver and worker actors);
- ``spark-connect``: Apache Spark's own Spark Connect server on the JVM with delta-spark,
  in another process (needs the ``spark`` extra, whose PySpark brings the server's jars).

The engine is chosen through the environment, so the subprocesses that crash tests start
run on it too. A test that shows an engine's limit is marked with ``engine_limit``: a
strict xfail naming the limit, never a skip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jvm_class_archive
import pytest
from servers import free_port

ENGINES = ("embedded", "spark", "connect", "cluster", "spark-connect")
# Engines that are a server in another process, reached by an sc:// URL.
REMOTE_ENGINES = ("connect", "cluster", "spark-connect")
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
    if engine in REMOTE_ENGINES:
        return {"SPARKLOAD_SPARK_REMOTE": os.environ["SPARKLOAD_TEST_REMOTE"]}
    return {}


def _choose(engine: str) -> None:
    if engine not in ENGINES:
        raise pytest.UsageError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    _current[0] = engine
    os.environ["SPARKLOAD_TEST_ENGINE"] = engine


def prepare_workers(engine: str) -> None:
    """Called once in pytest-xdist's controller, before its workers start: the workers
    each start the engine themselves (``start``), and the one thing they would share is
    Ivy's jar cache (``~/.ivy2``), which two JVMs resolving at once can corrupt. So the
    Delta jars are resolved here, by one JVM, and the workers' JVMs find them remembered
    (``sparkload.engine.jvm``) and ask Ivy nothing."""
    _choose(engine)
    if engine == "spark":
        from delta import configure_spark_with_delta_pip

        from sparkload.engine import jvm

        if jvm._resolved_jars(jvm._delta_packages(configure_spark_with_delta_pip)) is None:
            # In a process of its own, so that its JVM is gone before the workers start.
            start = "from sparkload.engine.jvm import jvm_session; jvm_session('local[1]', {}).stop()"
            subprocess.run([sys.executable, "-c", start], check=True)


def start(engine: str) -> None:
    """Called once per test run (per pytest-xdist worker): starts the engine's server where
    it has one."""
    _choose(engine)
    if engine in REMOTE_ENGINES:
        process, url = _start_server(engine)
        _server.append(process)
        os.environ["SPARKLOAD_TEST_REMOTE"] = url
    # For the whole process too, not only inside each test: module-scoped fixtures start
    # subprocesses before any test's own settings apply.
    os.environ.update(environment(engine))
    if engine == "spark":
        _start_own_jvm()


def _start_own_jvm() -> None:
    """The test process's own JVM, which runs every in-process test, started now while the
    optimizing JIT can be given to it alone (tests/jvm_class_archive.py). Its output goes to
    a log file, as it would to the capture of the test that started it."""
    from sparkload.engine.session import session_for

    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"spark-jvm-{os.getpid()}.log"
    with jvm_class_archive.optimizing_jit(), log.open("ab") as output:
        kept = [os.dup(1), os.dup(2)]
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
        try:
            session_for(JVM_MASTER)
        finally:
            os.dup2(kept[0], 1)
            os.dup2(kept[1], 2)
            for fd in kept:
                os.close(fd)


def _start_server(engine: str) -> tuple[subprocess.Popen[bytes], str]:
    if engine == "spark-connect":
        return start_spark_connect_server()
    mode = {"SAIL_MODE": "local-cluster"} if engine == "cluster" else {}
    return start_sail_server({**mode, **remote_object_store()})


def remote_object_store() -> dict[str, str]:
    """The object store a Sail server in another process writes buckets to: a server reads
    its S3 settings from its own environment, as one deployed beside a bucket does, so they
    are given at its start. The S3 API server of the bucket tests (``s3_server``) is started
    at this endpoint when a test needs it."""
    pytest.register_assert_rewrite("s3_server")  # imported here before pytest loads it as a plugin
    from s3_server import ACCESS_KEY, REGION, SECRET_KEY

    endpoint = f"http://127.0.0.1:{free_port()}"
    os.environ["SPARKLOAD_TEST_S3_ENDPOINT"] = endpoint
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_CONDITIONAL_PUT": "etag",
    }


def stop() -> None:
    """Stop the engine's server, after the session to it: PySpark's exit hook would
    otherwise retry a dead server for minutes before the test process can end."""
    if _server:
        from sparkload.engine.session import release_session

        release_session(os.environ["SPARKLOAD_TEST_REMOTE"])
    for process in _server:
        process.terminate()
        process.wait(timeout=30)
    _server.clear()


def sail_command() -> list[str]:
    sail = shutil.which("sail", path=str(Path(sys.executable).parent)) or shutil.which("sail")
    if sail is None:
        raise RuntimeError("the sail command is not installed (pip install 'sparkload[local]')")
    return [sail, "spark", "server", "--ip", "127.0.0.1"]


def start_spark_connect_server() -> tuple[subprocess.Popen[bytes], str]:
    """Apache Spark's Spark Connect server (local[2]) with Delta Lake, in a JVM of its own,
    and Hadoop's S3A for the bucket tests: hadoop-aws of PySpark's Hadoop and ``fs.s3a.*``
    for the S3 API server's endpoint, given at its start as a server deployed beside a
    bucket is given them (the same settings a JVM that sparkload starts gets)."""
    import pyspark

    from sparkload.engine.jvm import DELTA_SESSION_CONF
    from sparkload.engine.jvm_cluster import hadoop_version, s3a_settings

    home = os.path.dirname(os.path.abspath(pyspark.__file__))
    jars = (
        f"io.delta:delta-spark_{'.'.join(pyspark.__version__.split('.')[:2])}_2.13:{delta_version()}",
        f"org.apache.hadoop:hadoop-aws:{hadoop_version()}",
    )
    port = free_port()
    settings = {
        **DELTA_SESSION_CONF,
        **s3a_settings(remote_object_store()),
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        # Small local tables: Spark's 200 shuffle partitions and Delta's 50 snapshot
        # partitions would make every statement hundreds of empty tasks.
        "spark.sql.shuffle.partitions": "4",
        "spark.databricks.delta.snapshotPartitions": "2",
    }
    command = [f"{home}/bin/spark-submit", "--master", "local[2]", "--packages", ",".join(jars)]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    command += ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "spark-internal"]
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"spark-connect-{port}.log"), "wb")  # noqa: SIM115
    with jvm_class_archive.optimizing_jit():
        process = subprocess.Popen(command, env=dict(os.environ, SPARK_HOME=home), stdout=log, stderr=log)
    return process, wait_for_port(process, port, command, 180)


def delta_version() -> str:
    from importlib.metadata import version

    return version("delta-spark")


def start_sail_server(
    extra_env: dict[str, str] | None = None, wrap: list[str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """A Sail Spark Connect server in a process of its own on a free loopback port (run
    under ``wrap``, a command prefix, if given), and its URL once it accepts connections."""
    port = free_port()
    env = dict(os.environ, RUST_LOG="error", **(extra_env or {}))
    command = [*(wrap or []), *sail_command(), "--port", str(port)]
    process = subprocess.Popen(command, env=env)
    return process, wait_for_port(process, port, command, 60)


@contextlib.contextmanager
def sail_server_hiding(folder: Path) -> Iterator[str]:
    """The URL of a Sail server in a mount namespace of its own, where ``folder`` is an empty
    tmpfs: it runs, but the files this process writes there are not there for it (as a
    cluster's executors do not see the driver's disk). Stopped, with its session, on exit."""
    from sparkload.engine.session import release_session

    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c"]
    wrap.append(f'mount -t tmpfs none "{folder}" && exec "$0" "$@"')
    process, url = start_sail_server(wrap=wrap)
    try:
        yield url
    finally:
        release_session(url)
        process.terminate()
        process.wait(timeout=30)


def wait_for_port(process: subprocess.Popen[bytes], port: int, command: list[str], seconds: float) -> str:
    """The server's ``sc://`` URL once it accepts connections on ``port``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {command}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return f"sc://127.0.0.1:{port}"
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the server did not start within {seconds:g} s: {command}")
