"""Spark Connect URLs: checked, redacted for messages, and connected to within a deadline.

PySpark's Connect client retries inside session creation, so a wrong URL would hang for
minutes without a word. The server is first reached with a plain TCP connection, then
over gRPC, and the first call is given what is left of the deadline.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.parse
from typing import Any

from sparkload.config import get_config_value
from sparkload.exceptions import EngineError

DEFAULT_CONNECT_TIMEOUT = 10.0
_PARAMETER_SEPARATOR = ";"


def redact_url(url: str) -> str:
    """The URL with every parameter value, user name and password replaced by ``***``:
    safe to print. ``sc://host:15002/;token=abc`` → ``sc://host:15002/;token=***``."""
    base, _, parameters = url.partition(_PARAMETER_SEPARATOR)
    try:
        parsed = urllib.parse.urlsplit(base)
        host = parsed.hostname or ""
        port = f":{parsed.port}" if parsed.port else ""
    except ValueError:
        return "<an unparsable URL>"
    user = "***@" if parsed.username or parsed.password else ""
    query = "?***" if parsed.query else ""
    path = "/" if parsed.path else ""
    redacted = f"{parsed.scheme}://{user}{host}{port}{path}{query}"
    names = [p.split("=", 1)[0] for p in parameters.split(_PARAMETER_SEPARATOR) if p]
    return redacted + "".join(f";{name}=***" for name in names)


def connect_timeout() -> float:
    """Seconds a Spark Connect server has to answer: ``SPARKLOAD_SPARK_CONNECT_TIMEOUT`` or
    ``[engine] connect_timeout``, 10 by default."""
    raw = os.environ.get("SPARKLOAD_SPARK_CONNECT_TIMEOUT") or get_config_value("engine.connect_timeout")
    if raw is None:
        return DEFAULT_CONNECT_TIMEOUT
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise EngineError(f"engine connect_timeout must be a number of seconds, got {raw!r}") from None
    if seconds <= 0:
        raise EngineError(f"engine connect_timeout must be positive, got {seconds}")
    return seconds


def host_and_port(url: str) -> tuple[str, int]:
    """The server's address in an ``sc://`` URL (Spark Connect's default port is 15002)."""
    parsed = urllib.parse.urlsplit(url.partition(_PARAMETER_SEPARATOR)[0])
    if parsed.scheme != "sc" or not parsed.hostname:
        raise EngineError(
            f"a remote Spark must be a Spark Connect URL like sc://host:15002, got {redact_url(url)}"
        )
    try:
        port = parsed.port or 15002
    except ValueError:
        raise EngineError(f"the Spark Connect URL {redact_url(url)} has no valid port") from None
    return parsed.hostname, port


def connect(url: str, settings: dict[str, str], timeout: float | None = None) -> Any:
    """A Spark Connect session to ``url`` whose server answered within ``timeout`` seconds."""
    host, port = host_and_port(url)
    seconds = connect_timeout() if timeout is None else timeout
    shown = redact_url(url)
    started = time.monotonic()
    try:
        socket.create_connection((host, port), timeout=seconds).close()
    except OSError as exc:
        reason = "no answer" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        raise EngineError(
            f"cannot reach the Spark Connect server at {shown} within {seconds:g} s ({reason}); "
            "check the URL and that the server is running"
        ) from None
    _wait_for_grpc(url, shown, seconds - (time.monotonic() - started), seconds)
    left = max(seconds - (time.monotonic() - started), 0.1)
    return _first_answer(url, shown, settings, left, seconds)


def _wait_for_grpc(url: str, shown: str, left: float, seconds: float) -> None:
    """Wait until the server speaks gRPC (HTTP/2) on the channel PySpark would use. Checked
    here, not by PySpark's first call: that call retries for minutes while holding the lock
    every new session takes, so one wrong URL would stall all later ones."""
    import grpc
    from pyspark.sql.connect.client import DefaultChannelBuilder

    channel = DefaultChannelBuilder(url).toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=max(left, 0.1))
    except grpc.FutureTimeoutError:
        raise EngineError(_no_answer(shown, seconds)) from None
    finally:
        channel.close()


def _no_answer(shown: str, seconds: float) -> str:
    return (
        f"the Spark Connect server at {shown} accepted a connection but did not answer within "
        f"{seconds:g} s; is it a Spark Connect server? (SPARKLOAD_SPARK_CONNECT_TIMEOUT sets the wait)"
    )


def _first_answer(url: str, shown: str, settings: dict[str, str], left: float, seconds: float) -> Any:
    """Create the session and make one call in a thread that is given ``left`` seconds."""
    outcome: dict[str, Any] = {}

    def create() -> None:
        try:
            from pyspark.sql import SparkSession

            builder = SparkSession.builder.remote(url)
            for key, value in settings.items():
                builder = builder.config(key, value)
            session = builder.create()
            session.conf.get("spark.sql.session.timeZone")  # the first round trip
            outcome["session"] = session
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    # A daemon thread: a server that never answers must not keep the process alive.
    worker = threading.Thread(target=create, name="sparkload-connect", daemon=True)
    worker.start()
    worker.join(left)
    if worker.is_alive():
        raise EngineError(_no_answer(shown, seconds))
    if "error" in outcome:
        cause = outcome["error"]
        raise EngineError(
            f"the Spark Connect server at {shown} refused the session: "
            f"{type(cause).__name__}: {scrub(str(cause), url)}"
        ) from None
    return outcome["session"]


def scrub(text: str, url: str) -> str:
    """``text`` with ``url`` and each of its parameter values replaced, for messages that
    quote what another library said about the URL."""
    text = text.replace(url, redact_url(url))
    for parameter in url.partition(_PARAMETER_SEPARATOR)[2].split(_PARAMETER_SEPARATOR):
        value = parameter.partition("=")[2]
        if value:
            text = text.replace(value, "***")
    return text
