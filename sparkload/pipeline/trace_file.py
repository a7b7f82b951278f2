"""``trace.json`` in a pipeline's working directory: the trace of its last run.

Written when a run starts (so that a run killed outright leaves a trace that says it never
finished) and when it ends, by returning or by an exception. Each write is atomic (a temp
file renamed over the old one), so a reader sees a whole trace, the last or the one before.
"""

from __future__ import annotations

import logging
from pathlib import Path

import orjson

from sparkload.common.local_files import write_atomically
from sparkload.pipeline.trace import PipelineTrace

TRACE_FILE = "trace.json"

logger = logging.getLogger(__name__)


def trace_json(trace: PipelineTrace) -> bytes:
    """The trace as the file holds it (and ``sparkload pipeline <name> trace --json`` prints)."""
    return orjson.dumps(trace.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str)


def save_trace(working_dir: Path, trace: PipelineTrace) -> None:
    write_atomically(working_dir / TRACE_FILE, trace_json(trace))


def read_trace(working_dir: Path) -> PipelineTrace | None:
    """The saved trace; None when there is none, or it cannot be read (a trace is a record of
    the past: a damaged one is reported in the log, not raised from ``pipeline.last_trace``)."""
    path = working_dir / TRACE_FILE
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return PipelineTrace.from_dict(orjson.loads(content))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        logger.warning(
            "the trace %s cannot be read (%s: %s); it is replaced by the next run's",
            path,
            type(exc).__name__,
            exc,
        )
        return None
