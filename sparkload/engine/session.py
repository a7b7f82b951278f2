"""Pick the SparkSession a pipeline runs on.

Order: an explicit ``spark=`` argument (a SparkSession, an ``sc://`` Spark Connect URL or a
JVM master URL such as ``local[2]``), then ``SPARKLOAD_SPARK_REMOTE`` (an ``sc://`` URL),
then ``SPARKLOAD_SPARK_MASTER`` (a master URL), then ``[engine] remote`` / ``[engine] master``
in config.toml, then the active SparkSession (a Databricks notebook's ``spark``, a
``spark-submit`` job's), then the embedded Sail server.
"""

from __future__ import annotations

import atexit
import gc
import importlib.util
import logging
import os
import sys
import threading
from typing import Any

from sparkload.config import get_config_value
from sparkload.engine import connect, jvm, jvm_cluster
from sparkload.engine.embedded import embedded_remote_url, start_in_background
from sparkload.engine.settings import SESSION_CONF
from sparkload.exceptions import EngineError

logger = logging.getLogger(__name__)

_lock = threading.Lock()
# Sessions sparkload made, by URL. PySpark's getOrCreate() would hand back whatever session
# is active, even one connected to another server.
_sessions: dict[str, Any] = {}


def resolve_spark(spark: Any = None) -> Any:
    """Return a SparkSession for ``spark`` (a session, a URL, or None)."""
    if spark is not None and not isinstance(spark, str):
        return spark
    _let_pyspark_connect_from_inline_code()
    url = _configured_url(spark)
    if url:
        return session_for(url)
    if _embedded_engine_chosen(url):
        # Its server starts while PySpark's Connect client is imported below (embedded.py).
        start_in_background()
    # Two threads importing one module at once can each see it half made (Python's import
    # lock gives the second a partly initialised module to avoid a deadlock): the client
    # this thread is about to import must first be whole, if a run began importing it.
    _wait_for_client_import()
    active = _active_session()
    if active is not None:
        return active
    return session_for(embedded_remote_url())


def _wait_for_client_import() -> None:
    """Wait for ``start_engine_early``'s import of PySpark's Connect client, if it runs."""
    with _lock:
        importing = _client_import
    if importing is not None and importing is not threading.current_thread():
        importing.join()


def start_engine_early(spark: Any = None) -> None:
    """Begin starting the engine ``resolve_spark(spark)`` will return, when that is the
    embedded one: its server and the import of PySpark's Connect client each in a thread of
    their own, so that a run's extract and the engine's start overlap. Nothing is raised
    here: a start that failed is made again, and fails, where the engine is resolved."""
    if not starts_early(spark):
        return
    _let_pyspark_connect_from_inline_code()
    start_in_background()
    global _client_import
    with _lock:
        if _client_import is None and "pyspark.sql.connect.session" not in sys.modules:
            _client_import = threading.Thread(
                target=_import_connect_client, name="sparkload-client-import", daemon=True
            )
            _client_import.start()


# The thread importing PySpark's Connect client ahead of the first session (once a process).
_client_import: threading.Thread | None = None


def _import_connect_client() -> None:
    """Import what ``connect.connect`` imports, so the engine's resolution finds it loaded."""
    try:
        import grpc  # noqa: F401
        import pyspark.sql.connect.client  # noqa: F401
        import pyspark.sql.connect.session  # noqa: F401
    except Exception:
        # Not lost: the engine's resolution imports these again and raises what fails.
        logger.debug("PySpark's Connect client was not imported in the background", exc_info=True)


def _configured_url(spark: str | None) -> str | None:
    """The engine URL the run was given: ``spark=``, the environment, then config.toml."""
    url = (
        spark
        or os.environ.get("SPARKLOAD_SPARK_REMOTE")
        or os.environ.get("SPARKLOAD_SPARK_MASTER")
        or get_config_value("engine.remote")
        or get_config_value("engine.master")
    )
    return str(url) if url else None


def _embedded_engine_chosen(url: str | None) -> bool:
    """Whether the engine will be the embedded one: no URL configured and no session of the
    user's can exist (``_active_session`` would find none)."""
    return not url and not _user_session_imported()


def starts_early(spark: Any = None) -> bool:
    """Whether ``start_engine_early(spark)`` starts the engine: the embedded one only, told
    without resolving it. Every other engine is resolved where a run takes its lock, as
    before, so that its checks (a bucket it cannot reach, a server that does not answer)
    fail the run first, with their own errors."""
    if spark is not None and not isinstance(spark, str):
        return False
    return _embedded_engine_chosen(_configured_url(spark))


def session_for(url: str) -> Any:
    """sparkload's own session for a Spark Connect or JVM master URL (one per URL)."""
    with _lock:
        session = _sessions.get(url)
        if session is None:
            if url.startswith("sc://"):
                session = connect.connect(url, SESSION_CONF)
            elif jvm.is_master_url(url):
                # A cluster's master or a local one: the same S3A settings and hadoop-aws,
                # so that a bucket destination works on either.
                session = jvm_cluster.s3a_session(url, SESSION_CONF)
            else:
                raise EngineError(
                    "spark must be a SparkSession, a Spark Connect URL (sc://host:15002) or a JVM "
                    f"master URL (local[2], spark://host:7077, yarn), got {connect.redact_url(url)}"
                )
            _sessions[url] = session
            _collect_once_at_exit()
        return session


_exit_hook_registered = False


def _collect_once_at_exit() -> None:
    """Register, once a process, ``_freeze_before_finalization`` to run at exit."""
    global _exit_hook_registered
    if not _exit_hook_registered:
        atexit.register(_freeze_before_finalization)
        _exit_hook_registered = True


def _freeze_before_finalization() -> None:
    """Collect the garbage once, then freeze what is left, so the interpreter's finalization
    does not traverse it again. A process with PySpark's client loaded (pandas, pyarrow,
    numpy, gRPC, protobuf: some 110,000 objects the collector tracks) spent most of its
    exit in the full collections the finalization repeats while it clears the modules:
    1.0-3 s on a loaded machine, 0.3-0.6 s with this, its one collection included
    (docs/performance.md). Garbage that exists now is finalized here, while every module is
    still whole; what the finalization frees is freed as before, by reference counts."""
    gc.collect()
    gc.freeze()


def is_own_session(spark: Any) -> bool:
    """Whether sparkload made ``spark`` (and may keep its settings as it needs them)."""
    return any(spark is session for session in _sessions.values())


def _active_session() -> Any:
    """The session the user's code made, if any: a classic one (a notebook's or a job's) or
    a Spark Connect one; never one sparkload made for another URL."""
    if "pyspark.sql" not in sys.modules:
        return None  # nobody made a session without importing PySpark
    found: list[Any] = []
    # PySpark's own getActiveSession() looks for a JVM Spark home when no Connect session is
    # marked active, and without one exits the process; ask each kind of session directly.
    if importlib.util.find_spec("pyspark.core") is not None:
        from pyspark import SparkContext

        if SparkContext._active_spark_context is not None:
            from pyspark.sql import SparkSession

            found.append(SparkSession.getActiveSession())
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # a classic PySpark without the Connect client's packages
        pass
    else:
        found.append(ConnectSession.getActiveSession())
    return next((s for s in found if s is not None and not is_own_session(s)), None)


def _user_session_imported() -> bool:
    """Whether the user's code may have made a session, told without importing anything: a
    classic session needs an active SparkContext, a Spark Connect one the Connect session
    module imported."""
    classic = sys.modules.get("pyspark.core.context")
    if classic is not None and classic.SparkContext._active_spark_context is not None:
        return True
    return "pyspark.sql.connect.session" in sys.modules


def _let_pyspark_connect_from_inline_code() -> None:
    """Under ``python -c``, PySpark's Connect client takes the run for its own doctests and
    looks for a JVM Spark home, and pyspark-client (which has none) then exits the process.
    Its module folder is a Spark home for that check (and is the real one of a full pyspark)."""
    main = sys.modules.get("__main__")
    uninitialized = getattr(main, "__spec__", None) is None and not hasattr(main, "__file__")
    if uninitialized and not hasattr(sys, "ps1") and "SPARK_HOME" not in os.environ:
        import pyspark

        os.environ["SPARK_HOME"] = os.path.dirname(os.path.abspath(pyspark.__file__))


# Sessions stopped by release_session, kept until the process ends. PySpark's Spark Connect
# session closes, in __del__, the thread pool every session shares for releasing results;
# a session in a reference cycle (its catalog refers back to it) is freed by the cyclic GC
# at any moment, and when that moment falls inside the same pool's submit() the process
# deadlocks on the pool's lock. A stopped session never freed never gets there.
_stopped: list[Any] = []


def release_session(url: str) -> None:
    """Stop and forget the session to ``url`` (before its server goes away: PySpark's exit
    hook would otherwise keep retrying a dead server)."""
    with _lock:
        session = _sessions.pop(url, None)
        if session is not None:
            _stopped.append(session)
    if session is not None:
        session.stop()
