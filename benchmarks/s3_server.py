"""An S3 API server on 127.0.0.1 for the bucket benchmarks: moto's server mode in a process
(``moto[server]``, in sparkload's test extra), with one bucket.

It answers as S3 does, including conditional PUTs, but it is a Python process on the same
machine: its times are a floor for a bucket's latency, not a production store's.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from lake import BUCKET_VARIABLE

HOST = "127.0.0.1"
BUCKET = "bench-lake"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _wait_until_answering(endpoint: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{endpoint}/", timeout=1):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto_server did not answer at {endpoint}")


def environment(endpoint: str) -> dict[str, str]:
    """The runners' settings for the bucket: the standard AWS variables (sparkload, Sail,
    delta-rs, pyarrow) and dlt's names for them (its filesystem destination)."""
    keys = {
        "AWS_ACCESS_KEY_ID": "bench-key",
        "AWS_SECRET_ACCESS_KEY": "bench-secret",
        "AWS_REGION": "us-east-1",
    }
    dlt_prefix = "DESTINATION__FILESYSTEM__CREDENTIALS__"
    return {
        **keys,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        BUCKET_VARIABLE: f"s3://{BUCKET}",
        f"{dlt_prefix}AWS_ACCESS_KEY_ID": keys["AWS_ACCESS_KEY_ID"],
        f"{dlt_prefix}AWS_SECRET_ACCESS_KEY": keys["AWS_SECRET_ACCESS_KEY"],
        f"{dlt_prefix}REGION_NAME": keys["AWS_REGION"],
        f"{dlt_prefix}ENDPOINT_URL": endpoint,
    }


@contextlib.contextmanager
def bucket(log_folder: Path) -> Iterator[dict[str, str]]:
    """A running server with an empty bucket; yields the runners' environment for it."""
    # The running interpreter's own moto first: a moto_server found first on PATH may be
    # another install's, whose answers differ (an older one fails multipart uploads).
    own_bin = str(Path(sys.executable).parent)
    executable = shutil.which("moto_server", path=own_bin) or shutil.which("moto_server") or "moto_server"
    endpoint = f"http://{HOST}:{_free_port()}"
    with (log_folder / "moto_server.log").open("wb") as log:
        process = subprocess.Popen(
            [executable, "-H", HOST, "-p", endpoint.rsplit(":", 1)[1]], stdout=log, stderr=subprocess.STDOUT
        )
        try:
            _wait_until_answering(endpoint, process)
            request = urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT")
            urllib.request.urlopen(request, timeout=10).close()
            yield environment(endpoint)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
