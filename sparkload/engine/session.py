"""Pick the SparkSession a pipeline runs on.

Order: an explicit ``spark=`` argument (a SparkSession or an ``sc://`` URL), then the
``SPARKLOAD_SPARK_REMOTE`` environment variable, then ``engine.remote`` in config.toml,
then the embedded Sail server.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from sparkload.config import get_config_value
from sparkload.engine.embedded import embedded_remote_url
from sparkload.exceptions import EngineError

# Every timestamp sparkload writes is UTC; the session must not shift them to local time.
SESSION_CONF = {"spark.sql.session.timeZone": "UTC"}


def resolve_spark(spark: Any = None) -> Any:
    """Return a SparkSession for ``spark`` (a session, an ``sc://`` URL, or None)."""
    if spark is not None and not isinstance(spark, str):
        _configure(spark)
        return spark
    url = spark or os.environ.get("SPARKLOAD_SPARK_REMOTE") or get_config_value("engine.remote")
    if not url:
        url = embedded_remote_url()
    return _connect(str(url))


# One session per Spark Connect URL. PySpark's getOrCreate() would hand back whatever
# session is active, even one connected to another server.
_sessions: dict[str, Any] = {}


def _connect(url: str) -> Any:
    if not url.startswith("sc://"):
        raise EngineError(f"a remote Spark must be a Spark Connect URL starting with sc://, got {url!r}")
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise EngineError(
            "PySpark is not installed: pip install 'sparkload[local]' (or pyspark-client)"
        ) from exc
    session = _sessions.get(url)
    if session is None:
        _let_pyspark_connect_from_inline_code()
        builder = SparkSession.builder.remote(url)
        for key, value in SESSION_CONF.items():
            builder = builder.config(key, value)
        session = builder.create()
        _sessions[url] = session
    _configure(session)
    return session


def _let_pyspark_connect_from_inline_code() -> None:
    """Under ``python -c``, PySpark's Connect client takes the run for its own doctests and
    looks for a JVM Spark home, and pyspark-client (which has none) then exits the process.
    Its module folder is a Spark home for that check (and is the real one of a full pyspark)."""
    main = sys.modules.get("__main__")
    uninitialized = getattr(main, "__spec__", None) is None and not hasattr(main, "__file__")
    if uninitialized and not hasattr(sys, "ps1") and "SPARK_HOME" not in os.environ:
        import pyspark

        os.environ["SPARK_HOME"] = os.path.dirname(os.path.abspath(pyspark.__file__))


def _configure(session: Any) -> None:
    for key, value in SESSION_CONF.items():
        session.conf.set(key, value)


def release_session(url: str) -> None:
    """Stop and forget the session to ``url`` (before its server goes away: PySpark's exit
    hook would otherwise keep retrying a dead server)."""
    session = _sessions.pop(url, None)
    if session is not None:
        session.stop()
