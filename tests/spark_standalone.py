"""A real Apache Spark standalone cluster on 127.0.0.1: a Master and two Workers started from
PySpark's own jars (``bin/spark-class`` in the installed ``pyspark``, its folder as SPARK_HOME).

``spark_standalone`` (one per test session) starts the Master on a free port, then two
Workers of one core and 1 GiB each (on 127.0.0.2 and 127.0.0.3), and waits until the
Master's JSON status page lists two ALIVE workers. Each Worker runs in a mount namespace of
its own (``unshare --mount``) in which a fresh tmpfs covers pytest's base temporary folder:
every test's working folder is in it, and so, for the cluster's lifetime, are the driver's
own temporary files (``TMPDIR``, Python's ``tempfile`` and the driver JVM's local folders
are pointed there). An executor cannot open any file the driver wrote there, as on a real
cluster, whose executors do not share the driver's disk. The rest of the disk stays shared,
``/tmp`` included: a checkout under ``/tmp`` keeps its virtualenv, whose PySpark holds the
``spark-class`` each Worker starts from. Only the network is shared beyond that, so the
executors reach the driver and a bucket server on 127.0.0.1. Needs root (to mount) and the
``spark`` extra.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import engines
import pytest

from sparkload.engine.object_store import SINGLE_DRIVER_LOG_STORE
from sparkload.engine.session import release_session, session_for

if TYPE_CHECKING:
    from s3_server import S3Bucket

HOST = "127.0.0.1"
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"


@dataclasses.dataclass(frozen=True)
class StandaloneCluster:
    master_url: str  # spark://127.0.0.1:PORT
    status_url: str  # the Master's web UI, whose /json/ lists the workers
    # The folder hidden from the executors: every test's tmp_path is inside it.
    hidden_folder: str

    def alive_workers(self) -> int:
        return _alive_workers(self.status_url)


def spark_home() -> str:
    """PySpark's own folder: its ``jars`` and ``bin/spark-class`` make a Spark home."""
    try:
        import pyspark
    except ImportError:  # pragma: no cover - depends on the install
        pytest.fail("the standalone cluster needs PySpark with its jars: pip install 'sparkload[spark]'")
    home = os.path.dirname(os.path.abspath(pyspark.__file__))
    if not os.path.exists(os.path.join(home, "bin", "spark-class")):
        pytest.fail(f"{home} has no bin/spark-class: install pyspark (not pyspark-client)")
    return home


def _alive_workers(status_url: str) -> int:
    try:
        with urllib.request.urlopen(f"{status_url}/json/", timeout=2) as answer:
            status = json.load(answer)
    except (OSError, urllib.error.URLError, ValueError):
        return 0
    return sum(1 for worker in status.get("workers", []) if worker.get("state") == "ALIVE")


def _start(command: list[str], log: Path, home: str) -> subprocess.Popen[bytes]:
    """A process in a session (and process group) of its own, so that stopping it stops the
    JVM that ``spark-class`` starts, whatever wraps it."""
    with log.open("wb") as out:
        return subprocess.Popen(
            command,
            env={**os.environ, "SPARK_HOME": home, "SPARK_NO_DAEMONIZE": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def worker_host(index: int) -> str:
    """Worker ``index``'s own loopback address (127.0.0.2, 127.0.0.3, ...): Spark takes
    executors on one host for executors sharing a disk and reads one another's shuffle
    files from it directly, which executors in mount namespaces of their own cannot; on
    addresses of their own they fetch them over the network, as on machines of their own."""
    return f"127.0.0.{index + 2}"


def _worker_command(home: str, master_url: str, hidden: str, index: int) -> list[str]:
    """A Worker in a new mount namespace where ``hidden`` is an empty tmpfs; its own work
    folder (executors' jars and logs) is made inside that tmpfs, so nothing of it is seen by
    the driver either."""
    work_dir = os.path.join(hidden, f"spark-worker-{index}")
    worker = [
        os.path.join(home, "bin", "spark-class"),
        "org.apache.spark.deploy.worker.Worker",
        "--host",
        worker_host(index),
        "--cores",
        str(WORKER_CORES),
        "--memory",
        WORKER_MEMORY,
        "--webui-port",
        str(engines.free_port()),
        "--work-dir",
        work_dir,
        master_url,
    ]
    script = 'mount -t tmpfs sparkload-executor-tmp "$1" && mkdir -p "$2" && shift 2 && exec "$@"'
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("the standalone cluster needs unshare (util-linux) to hide the driver's disk")
    return [
        unshare,
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        script,
        "sh",
        hidden,
        work_dir,
        *worker,
    ]


@contextlib.contextmanager
def running_cluster(log_folder: Path, hidden: str, timeout: float = 120.0) -> Iterator[StandaloneCluster]:
    """A Master and WORKERS Workers, stopped on the way out."""
    if os.geteuid() != 0:
        pytest.fail("the standalone cluster's workers mount a tmpfs in a namespace of their own: run as root")
    home = spark_home()
    port, ui_port = engines.free_port(), engines.free_port()
    master_url = f"spark://{HOST}:{port}"
    status_url = f"http://{HOST}:{ui_port}"
    master_command = [
        os.path.join(home, "bin", "spark-class"),
        "org.apache.spark.deploy.master.Master",
        "--host",
        HOST,
        "--port",
        str(port),
        "--webui-port",
        str(ui_port),
    ]
    processes = [_start(master_command, log_folder / "master.log", home)]
    try:
        for index in range(WORKERS):
            command = _worker_command(home, master_url, hidden, index)
            processes.append(_start(command, log_folder / f"worker-{index}.log", home))
        deadline = time.monotonic() + timeout
        while _alive_workers(status_url) < WORKERS:
            exited = [p.args for p in processes if p.poll() is not None]
            if exited:
                raise RuntimeError(
                    f"a process of the standalone cluster exited (logs in {log_folder}): {exited}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{WORKERS} workers were not alive within {timeout:g} s (logs in {log_folder})"
                )
            time.sleep(0.5)
        yield StandaloneCluster(master_url, status_url, hidden)
    finally:
        for process in reversed(processes):
            _stop(process)


def hidden_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """pytest's base temporary folder of this run: hidden from the executors, so no test's
    working folder, staged file or log, nor the driver's temporary files
    (``drivers_temp_folder``), is there for them. Only that folder: the virtualenv the
    Workers start from may itself be under the system's temporary folder."""
    return str(tmp_path_factory.getbasetemp().resolve())


# Where a process started on this machine puts its scratch files: Python's tempfile and most
# tools read TMPDIR; a JVM Spark driver reads SPARK_LOCAL_DIRS for its block manager and the
# files it serves to executors.
_TEMP_VARIABLES = ("TMPDIR", "SPARK_LOCAL_DIRS")


@contextlib.contextmanager
def drivers_temp_folder(folder: Path) -> Iterator[str]:
    """This process (the driver) and what it starts keep their temporary files in ``folder``
    while the cluster runs: inside the hidden folder, so a task that opened one (the UTF-8
    copies of a file source, say) would fail as it does on a real cluster, instead of
    finding it in a ``/tmp`` the executors share here."""
    saved = {variable: os.environ.get(variable) for variable in _TEMP_VARIABLES}
    saved_tempdir = tempfile.tempdir
    os.environ.update(dict.fromkeys(_TEMP_VARIABLES, str(folder)))
    tempfile.tempdir = str(folder)
    try:
        yield str(folder)
    finally:
        tempfile.tempdir = saved_tempdir
        for variable, value in saved.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    # The logs stay with the driver's side: under the hidden folder, seen from here only.
    logs = tmp_path_factory.mktemp("spark_standalone")
    driver_temp = tmp_path_factory.mktemp("driver_tmp")
    # The Workers start first, with the environment as it was: in their namespace the
    # driver's temporary folder does not exist.
    with running_cluster(logs, hidden_folder(tmp_path_factory)) as cluster, drivers_temp_folder(driver_temp):
        yield cluster


@pytest.fixture(scope="session")
def _cluster_session_released(spark_standalone: StandaloneCluster) -> Iterator[str]:
    """The master's URL; sparkload's session to it is stopped after the tests. The tests
    write each table from one driver at a time, which they state to sparkload (else it
    refuses a bucket on delta-spark's default log store, see engine/object_store.py); the
    session started with it gets the log store settings."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENGINE__DELTA_LOG_STORE", SINGLE_DRIVER_LOG_STORE)
        yield spark_standalone.master_url
        release_session(spark_standalone.master_url)


@pytest.fixture
def cluster_spark(_cluster_session_released: str, s3_bucket: S3Bucket) -> Any:  # noqa: ARG001
    """sparkload's own session on the cluster's master, started as a pipeline starts it
    (``session_for`` the ``spark://`` URL; one per URL) with the bucket server's AWS
    variables set, which its S3A settings are made from (the ``s3_server`` fixtures)."""
    return session_for(_cluster_session_released)


@pytest.fixture
def on_cluster(
    spark_standalone: StandaloneCluster, cluster_spark: Any, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """Pipelines of this test run on the cluster (``SPARKLOAD_SPARK_MASTER``)."""
    monkeypatch.setenv("SPARKLOAD_SPARK_MASTER", spark_standalone.master_url)
    return cluster_spark
