"""sparkload's log lines: the level a user sets, and where lines go when nothing else takes them.

The level comes from ``SPARKLOAD_LOG_LEVEL``, else dlt's ``RUNTIME__LOG_LEVEL`` (or
``[runtime] log_level`` in ``.sparkload/config.toml``): sparkload's own name wins, so a
worker whose environment sets ``RUNTIME__LOG_LEVEL`` for its dlt pipelines can still give
sparkload another level. Nothing set: the ``sparkload`` logger is left as the user's logging
has it (Python's default shows warnings only).

No ``logging.basicConfig``, no change to the root logger or to ``propagate``: sparkload adds
a handler to its own logger that writes one line to stderr only when no handler of the
user's would take the record. A script without logging set up gets the lines; a script or
an Airflow task with logging set up gets them once, through its own handlers and format.
"""

from __future__ import annotations

import logging
import os
import sys

from sparkload.config import get_config_value
from sparkload.exceptions import ConfigValueError

SPARKLOAD_LOGGER = "sparkload"
PROGRESS_LOGGER = "sparkload.progress"
LOG_LEVEL_ENV = "SPARKLOAD_LOG_LEVEL"
RUNTIME_LOG_LEVEL_KEY = "runtime.log_level"  # env RUNTIME__LOG_LEVEL, [runtime] log_level
ONE_LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class StderrUnlessHandled(logging.Handler):
    """Writes a record as one line to stderr, unless another handler on its way up to the
    root (one the user installed) takes it: those print it, in their format.

    The stream is looked up at each record, so a redirected ``sys.stderr`` (a notebook's,
    pytest's) gets the line, as with ``logging.lastResort``."""

    def __init__(self, fmt: str = ONE_LINE_FORMAT) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(fmt))

    def emit(self, record: logging.LogRecord) -> None:
        if _printer(record) is not self:
            return
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def _printer(record: logging.LogRecord) -> logging.Handler | None:
    """Which of sparkload's handlers prints ``record``: None when a handler of the user's on
    the record's way up (walked as ``Logger.callHandlers`` walks it) takes it, else the
    highest of sparkload's there, so that one line is written, never two."""
    printer: logging.Handler | None = None
    logger: logging.Logger | None = logging.getLogger(record.name)
    while logger is not None:
        for handler in logger.handlers:
            if record.levelno < handler.level:
                continue
            if not isinstance(handler, StderrUnlessHandled):
                return None
            printer = handler
        if not logger.propagate:
            break
        logger = logger.parent
    return printer


def _installed(logger: logging.Logger, fmt: str) -> StderrUnlessHandled:
    """The logger's ``StderrUnlessHandled``, added the first time."""
    for handler in logger.handlers:
        if isinstance(handler, StderrUnlessHandled):
            return handler
    handler = StderrUnlessHandled(fmt)
    logger.addHandler(handler)
    return handler


def progress_logger() -> logging.Logger:
    """The logger ``progress="log"`` writes to, with its stderr line for scripts without
    logging set up."""
    logger = logging.getLogger(PROGRESS_LOGGER)
    _installed(logger, ONE_LINE_FORMAT)
    return logger


def configured_log_level() -> int | None:
    """The level the user set for sparkload's logs (see the module's doc), or None."""
    raw = os.environ.get(LOG_LEVEL_ENV)
    where = LOG_LEVEL_ENV
    if not raw:
        raw = get_config_value(RUNTIME_LOG_LEVEL_KEY)
        where = "RUNTIME__LOG_LEVEL ([runtime] log_level)"
    if raw is None or str(raw).strip() == "":
        return None
    name = str(raw).strip().upper()
    if name == "WARN":
        name = "WARNING"
    if name not in _LEVELS:
        raise ConfigValueError(
            f"{where} must be one of {', '.join(_LEVELS)}, got {raw!r}", key=where.split(" ")[0]
        )
    return int(logging.getLevelName(name))


class _Applied:
    """The level sparkload set on its logger, and the one it found there before."""

    level: int | None = None
    found: int = logging.NOTSET


def apply_log_level() -> None:
    """Give the ``sparkload`` logger the level the user set now, with its one-line stderr
    handler; with none set (any more), leave it, or put back what it had, as found."""
    level = configured_log_level()
    logger = logging.getLogger(SPARKLOAD_LOGGER)
    if level is None:
        if _Applied.level is not None:
            logger.setLevel(_Applied.found)
            _Applied.level = None
        return
    if _Applied.level is None:
        _Applied.found = logger.level
    _installed(logger, ONE_LINE_FORMAT)
    logger.setLevel(level)
    _Applied.level = level
