"""One pipeline step (extract, normalize, load) run under its timing, progress and errors.

Invariants every step keeps through ``pipeline_step``:

- a failure (any ``Exception``) first runs the step's cleanup, then is raised wrapped in
  ``PipelineStepFailed(step, load_id, cause, advice)``; a ``BaseException`` that is not an
  ``Exception`` (a KeyboardInterrupt) passes unwrapped and without cleanup, as it always did;
- the progress display, when the step shows one, is started before and finished after the
  step, whether it failed or not;
- the step's time is added to the trace only when it succeeded.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from sparkload.exceptions import PipelineStepFailed
from sparkload.pipeline.load_info import StepTiming
from sparkload.pipeline.progress import Progress
from sparkload.pipeline.trace import PipelineTrace


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
) -> Iterator[None]:
    """Run the body as ``step`` of the package ``load_id`` (None: before there is one).

    ``trace``: where the step's time goes (None: not timed); ``progress``: the display
    the step shows (None: none); ``cleanup``: what a failure removes (a half-written
    package); ``advice``: the sentence a failure's message ends with, by its cause.
    """
    started = time.perf_counter()
    if progress is not None:
        progress.start(step)
    try:
        yield
    except Exception as exc:
        if cleanup is not None:
            cleanup()
        raise PipelineStepFailed(step, load_id, exc, advice(exc)) from exc
    finally:
        if progress is not None:
            progress.finish(step)
    if trace is not None:
        trace.add(StepTiming(step, time.perf_counter() - started))
