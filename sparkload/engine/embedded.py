"""The embedded engine: one Sail Spark Connect server per Python process.

Sail runs inside this process (no JVM), so start-up costs well under a second. Every
pipeline in the process shares the one server; it stops when the interpreter exits.
Being in this process, it builds its S3 client from this process's environment when it
first touches a bucket: ``engine/object_store.py`` completes those settings beforehand.

A run may start the server in a thread of its own (``start_in_background``) as it begins,
so the start overlaps what the run does before it needs the engine (importing PySpark's
client, first of all); whoever then needs the address waits for that start.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Any

from sparkload.engine.logs import sail_log_filter
from sparkload.exceptions import EngineError

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_server: Any = None
_remote_url: str | None = None
# The thread starting the server in the background, while it runs.
_starting: threading.Thread | None = None


def embedded_remote_url() -> str:
    """Start the embedded Sail server once and return its ``sc://`` address."""
    global _server, _remote_url
    with _lock:
        if _remote_url is not None:
            return _remote_url
        try:
            from pysail.spark import SparkConnectServer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EngineError(
                "The embedded engine needs the 'local' extra: pip install 'sparkload[local]' "
                "(or choose another Spark: spark=, SPARKLOAD_SPARK_REMOTE or SPARKLOAD_SPARK_MASTER; "
                "see docs/engines.md)."
            ) from exc
        # Sail logs every session at INFO to stderr: quiet unless asked for (engine/logs.py).
        with sail_log_filter():
            server = SparkConnectServer(ip="127.0.0.1", port=0)
            server.start(background=True)
        _, port = server.listening_address
        _server = server
        _remote_url = f"sc://127.0.0.1:{port}"
        atexit.register(_stop)
        logger.info("started embedded Sail Spark Connect server at %s", _remote_url)
        return _remote_url


def start_in_background() -> None:
    """Start the server in a thread of its own, unless it runs or is starting already; the
    caller goes on meanwhile. ``embedded_remote_url()`` waits for that start; if it failed,
    it starts the server again there, so the error is raised where it always was (in the
    run, as the same error)."""
    global _starting
    with _lock:
        if _remote_url is not None or _starting is not None:
            return
        _starting = threading.Thread(target=_start_for_later, name="sparkload-engine-start", daemon=True)
        _starting.start()


def is_starting_or_started() -> bool:
    """Whether the server's start is under way in the background, or the server runs.
    Read without the lock, which the start holds until the server listens."""
    return _starting is not None or _remote_url is not None


def _start_for_later() -> None:
    global _starting
    try:
        embedded_remote_url()
    except Exception:
        # Not lost: the caller's own start raises it (see start_in_background).
        logger.debug("embedded server did not start in the background", exc_info=True)
    finally:
        with _lock:
            _starting = None


def _stop() -> None:
    global _server, _remote_url
    with _lock:
        if _server is not None:
            try:
                _server.stop()
            except Exception:  # pragma: no cover - best effort at interpreter exit
                logger.debug("embedded server did not stop cleanly", exc_info=True)
        _server = None
        _remote_url = None
