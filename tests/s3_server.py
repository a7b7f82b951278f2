"""A real S3 API server on 127.0.0.1 for the bucket tests: moto's server mode in a process.

``s3_server`` (one per test session) starts ``moto_server -H 127.0.0.1 -p <free port>``,
waits until it answers and stops it at the end. ``s3_bucket`` (one per test) creates a
fresh bucket by an HTTP PUT of ``/<bucket>`` and sets the standard AWS variables for the
test only, restored afterwards as monkeypatch restores them. AWS_ALLOW_HTTP is left unset:
sparkload must allow the ``http://`` endpoint itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import engines
import pytest
from servers import free_port, stop

from sparkload.engine.object_store import SINGLE_DRIVER_LOG_STORE

HOST = "127.0.0.1"
ACCESS_KEY = "sparkload-test-key"
SECRET_KEY = "sparkload-test-secret-do-not-log"
REGION = "us-east-1"
_STANDARD_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ALLOW_HTTP",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_CONDITIONAL_PUT",
)
_buckets = itertools.count()


@dataclasses.dataclass(frozen=True)
class S3Server:
    endpoint: str
    log: Path  # the server's request log: one line per request, with its answer's status
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY

    def create_bucket(self, name: str) -> None:
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200, answer.status

    def storage_options(self) -> dict[str, str]:
        """The same endpoint and keys for delta-rs (``deltalake``), an independent reader."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }


@dataclasses.dataclass(frozen=True)
class S3Bucket:
    server: S3Server
    name: str

    @property
    def url(self) -> str:
        return f"s3://{self.name}"

    def object_keys(self) -> list[str]:
        """The keys of the bucket's objects (up to 1,000: the server's first page)."""
        with urllib.request.urlopen(f"{self.server.endpoint}/{self.name}?list-type=2", timeout=10) as answer:
            listing = ElementTree.fromstring(answer.read())
        return [element.text or "" for element in listing.iter() if element.tag.endswith("}Key")]


def _wait_until_answering(endpoint: str, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode} before answering")
        try:
            with urllib.request.urlopen(f"{endpoint}/", timeout=1):
                return
        except urllib.error.HTTPError:
            return  # an HTTP answer, even an error, means it is serving
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto_server did not answer at {endpoint} within {timeout:.0f} s")


@contextlib.contextmanager
def _running_moto(
    log_folder: Path, environment: dict[str, str], port: int | None = None
) -> Iterator[S3Server]:
    # The test interpreter's own moto first: a moto_server elsewhere on PATH (another
    # Python's) may be another release, whose answers the tests were not written for.
    own_bin = str(Path(sys.executable).parent)
    executable = shutil.which("moto_server", path=own_bin) or shutil.which("moto_server")
    if executable is None:
        pytest.fail("moto_server is not installed: pip install 'sparkload[test]' (moto[server])")
    port = free_port(HOST) if port is None else port
    endpoint = f"http://{HOST}:{port}"
    log_path = log_folder / "moto_server.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [executable, "-H", HOST, "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **environment},
    )
    try:
        _wait_until_answering(endpoint, process)
        yield S3Server(endpoint, log_path)
    finally:
        stop(process)
        log.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A server that accepts any keys; at the endpoint a Sail server in another process was
    given at its start (``engines.remote_object_store``), where the engine is one."""
    reserved = os.environ.get("SPARKLOAD_TEST_S3_ENDPOINT")
    port = int(reserved.rsplit(":", 1)[1]) if reserved else None
    with _running_moto(tmp_path_factory.mktemp("moto"), {}, port) as server:
        yield server


@pytest.fixture(scope="session")
def another_s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A second server that accepts any keys, at an endpoint of its own."""
    with _running_moto(tmp_path_factory.mktemp("moto_other"), {}) as server:
        yield server


@pytest.fixture(scope="session")
def s3_server_checking_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A server that checks every request's keys against its (empty) IAM: the test keys are
    refused, as a real store refuses wrong credentials."""
    with _running_moto(tmp_path_factory.mktemp("moto_iam"), {"INITIAL_NO_AUTH_ACTION_COUNT": "0"}) as server:
        yield server


@contextlib.contextmanager
def aws_variables(server: S3Server) -> Iterator[None]:
    """The standard AWS variables for ``server``; every variable of the list is put back as
    it was afterwards, also one that sparkload set itself meanwhile (monkeypatch forgets a
    variable it deleted while it was unset)."""
    saved = {variable: os.environ.get(variable) for variable in _STANDARD_VARIABLES}
    for variable in _STANDARD_VARIABLES:
        os.environ.pop(variable, None)
    os.environ.update(
        AWS_ACCESS_KEY_ID=server.access_key,
        AWS_SECRET_ACCESS_KEY=server.secret_key,
        AWS_REGION=REGION,
        AWS_ENDPOINT_URL=server.endpoint,
    )
    try:
        yield
    finally:
        for variable, value in saved.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> Iterator[S3Bucket]:
    """A new, empty bucket, with the standard AWS variables set for this test only."""
    with aws_variables(s3_server):
        bucket = S3Bucket(s3_server, f"lake-bucket-{os.getpid()}-{next(_buckets)}")
        s3_server.create_bucket(bucket.name)
        yield bucket


@pytest.fixture
def s3_refusing_keys(s3_server_checking_keys: S3Server) -> Iterator[S3Server]:
    """The key-checking server, with the standard AWS variables (its refused keys) set for
    this test only."""
    with aws_variables(s3_server_checking_keys):
        yield s3_server_checking_keys


@pytest.fixture
def one_writer_on_the_jvm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test writes its tables from one driver, which a JVM engine is told (else it
    refuses a bucket on delta-spark's default log store: tests/jvm/test_bucket_log_store.py),
    a classic session or Apache Spark's Spark Connect server."""
    if engines.current() in ("spark", "spark-connect"):
        monkeypatch.setenv("ENGINE__DELTA_LOG_STORE", SINGLE_DRIVER_LOG_STORE)
