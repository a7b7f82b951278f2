"""One pipeline step (extract, normalize, load) run under its timing, progress and errors.

Invariants every step keeps through ``pipeline_step``:

- a failure (any ``Exception``) first runs the step's cleanup, then is raised wrapped in
  ``PipelineStepFailed(step, load_id, cause, advice)``; a ``BaseException`` that is not an
  ``Exception`` (a KeyboardInterrupt) passes unwrapped and without cleanup, as it always did;
- the progress display, when the step shows one, is started before and finished after the
  step, whether it failed or not;
- the step is recorded in the trace (when given) with its start, end, seconds and status,
  ok or failed (an interrupt too); a step that is not ``timed`` is recorded only when it
  fails (its work is part of the steps that follow).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator

from sparkload.exceptions import PipelineStepFailed
from sparkload.pipeline.progress import Progress
from sparkload.pipeline.trace import FAILED, PipelineTrace, TraceStep, utc_now

logger = logging.getLogger(__name__)


def _no_advice(error: Exception) -> str:
    return ""


@contextlib.contextmanager
def pipeline_step(
    step: str,
    load_id: str | None,
    *,
    trace: PipelineTrace | None = None,
    progress: Progress | None = None,
    cleanup: Callable[[], None] | None = None,
    advice: Callable[[Exception], str] = _no_advice,
    timed: bool = True,
) -> Iterator[TraceStep]:
    """Run the body as ``step`` of the package ``load_id`` (None: before there is one).

    ``trace``: where the step is recorded (None: nowhere); ``progress``: the display
    the step shows (None: none); ``cleanup``: what a failure removes (a half-written
    package); ``advice``: the sentence a failure's message ends with, by its cause;
    ``timed``: False for work that prepares the steps that follow, recorded only if it fails.

    The body gets the step's record, to fill in ``tables`` with what it knows of each table.
    """
    record = TraceStep(step, load_id, utc_now())
    started = time.perf_counter()
    if progress is not None:
        progress.start(step, load_id)
    try:
        yield record
    except BaseException as exc:
        record.status = FAILED
        if isinstance(exc, Exception):
            if cleanup is not None:
                cleanup()
            raise PipelineStepFailed(step, load_id, exc, advice(exc)) from exc
        raise
    finally:
        record.seconds = time.perf_counter() - started
        record.finished_at = utc_now()
        if trace is not None and (timed or record.status == FAILED):
            trace.add_step(record)
        if progress is not None:
            progress.finish(step, record.status == FAILED)
    if load_id is not None:  # without one, the "step" only checked the arguments
        logger.info("%s of load package %s took %.2fs", step, load_id, record.seconds)
