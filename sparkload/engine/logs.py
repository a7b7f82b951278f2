"""The engine's own logs: quiet unless the user asks for them.

Sail logs every session at INFO to stderr (its Rust logger, configured by ``RUST_LOG``); a
JVM Spark logs through log4j, and py4j logs every call it makes to Python's logging. None of
that belongs in a script's output unless asked for: ``SPARKLOAD_ENGINE_LOG_LEVEL`` (or
``[engine] log_level`` in config.toml) asks, with a level name (``debug``, ``info``,
``warning``, ``error``). A ``RUST_LOG`` the user set is Sail's own way of asking and is kept
when no engine level is set.

Sail reads ``RUST_LOG`` once, when its server starts: it is set for that moment only and
put back as it was, so no environment change outlives the start.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from sparkload.config import get_config_value
from sparkload.exceptions import EngineError

ENGINE_LOG_LEVEL_ENV = "SPARKLOAD_ENGINE_LOG_LEVEL"
_QUIET = "error"
# The level names each logger takes, by the name a user gives.
_RUST = {"debug": "debug", "info": "info", "warning": "warn", "warn": "warn", "error": "error"}
_LOG4J = {"debug": "DEBUG", "info": "INFO", "warning": "WARN", "warn": "WARN", "error": "ERROR"}
_PYTHON = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING}
# The JVM engine's Python-side logger (every py4j call at DEBUG, its callback server at INFO).
_PY4J_LOGGER = "py4j"


def engine_log_level() -> str | None:
    """The level the user asked the engine's logs at (lower case), or None: keep them quiet."""
    raw = os.environ.get(ENGINE_LOG_LEVEL_ENV) or get_config_value("engine.log_level")
    if raw is None or str(raw).strip() == "":
        return None
    level = str(raw).strip().lower()
    if level not in _RUST:
        raise EngineError(
            f"{ENGINE_LOG_LEVEL_ENV} ([engine] log_level) must be one of debug, info, warning, error; "
            f"got {raw!r}"
        )
    return level


@contextlib.contextmanager
def sail_log_filter() -> Iterator[None]:
    """``RUST_LOG`` while the embedded Sail server starts: the engine level asked for, else
    the user's own ``RUST_LOG``, else errors only; as it was afterwards."""
    level = engine_log_level()
    found = os.environ.get("RUST_LOG")
    if level is None and found is not None:
        yield
        return
    os.environ["RUST_LOG"] = _RUST[level] if level is not None else _QUIET
    try:
        yield
    finally:
        if found is None:
            os.environ.pop("RUST_LOG", None)
        else:
            os.environ["RUST_LOG"] = found


def quiet_jvm(session: Any) -> None:
    """A JVM session sparkload started: log4j at the engine level asked for (Spark's own
    default, warnings, otherwise), and py4j's Python logger at warnings unless asked for or
    set by the user."""
    level = engine_log_level()
    if level is not None:
        session.sparkContext.setLogLevel(_LOG4J[level])
    py4j = logging.getLogger(_PY4J_LOGGER)
    if level is not None:
        py4j.setLevel(_PYTHON.get(level, logging.ERROR))
    elif py4j.level == logging.NOTSET:
        # Otherwise a script that logs at INFO gets a line for every call into the JVM.
        py4j.setLevel(logging.WARNING)
