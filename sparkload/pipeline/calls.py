"""How the Pipeline's steps are called: one run of a pipeline at a time (``locked``), each
recorded in a trace (``traced``, ``untraced`` for a plan), and what run(), plan() and
extract() are told besides the data (``RunArguments``, ``TimeBound``)."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeAlias, TypeVar

from sparkload.common.time import as_utc, now
from sparkload.extract.hints import TableHintArgs
from sparkload.pipeline import lineage
from sparkload.pipeline.logs import apply_log_level
from sparkload.pipeline.parts import PipelineParts
from sparkload.pipeline.trace import PipelineTrace
from sparkload.pipeline.trace_file import save_trace

logger = logging.getLogger(__name__)

# The order in which extract(), normalize() and load() called one by one add up to one
# trace; "run" comes first because a run always starts a trace of its own.
_STEP_ORDER = ("run", "extract", "normalize", "load")

# A bound of run()'s and plan()'s ``start``/``end``: a datetime (pendulum's too), a date, or
# either as ISO text (read by ``extract.intervals.Span.of``).
TimeBound: TypeAlias = "datetime.date | str"


def new_load_id() -> str:
    # Wall-clock based like dlt's, so ids sort in creation order; not the execution_time,
    # which tests fix and two runs may share.
    return f"{time.time():.6f}"


_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")
_Self = TypeVar("_Self", bound=PipelineParts)
# A method of the Pipeline, as the decorators below take and return it.
_Method: TypeAlias = "Callable[Concatenate[_Self, _Params], _Result]"


def locked(
    method: _Method[_Self, _Params, _Result], *, engine_first: bool = True
) -> _Method[_Self, _Params, _Result]:
    """Run ``method`` holding the pipeline's run lock (one run of a pipeline at a time);
    the engine is ready before it begins, unless ``engine_first`` is False."""

    @functools.wraps(method)
    def locked(self: _Self, *args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        apply_log_level()  # as set now: a notebook may have changed it since the last run
        with self._lock.held(), self._session_scope(wait_for_engine=engine_first):
            return method(self, *args, **kwargs)

    return locked


def locked_engine_later(method: _Method[_Self, _Params, _Result]) -> _Method[_Self, _Params, _Result]:
    """``locked`` for a method that starts the engine as it begins and waits for it, outside
    its steps, only where it first needs it (run() and extract())."""
    return locked(method, engine_first=False)


def traced(call: str) -> Callable[[_Method[_Self, _Params, _Result]], _Method[_Self, _Params, _Result]]:
    """Record ``method`` (``call``: run, extract, normalize or load) in a trace, saved in the
    working directory when it starts and when it ends, by returning or by an exception.
    Called from another traced method (run calls load), it adds to that one's trace."""

    def decorate(method: _Method[_Self, _Params, _Result]) -> _Method[_Self, _Params, _Result]:
        @functools.wraps(method)
        def traced(self: _Self, *args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
            if self._running_trace is not None:
                return method(self, *args, **kwargs)
            trace = _next_trace(self, call)
            self._running_trace = self._last_trace = trace
            _save_trace(self, trace)
            run_lineage = lineage.started(self, call, args, kwargs)
            try:
                result = method(self, *args, **kwargs)
            except BaseException as exc:
                trace.finish(exc)
                raise
            else:
                trace.finish()
                return result
            finally:
                self._running_trace = None
                _save_trace(self, trace)
                lineage.finished(run_lineage, trace)

        return traced

    return decorate


def untraced(method: _Method[_Self, _Params, _Result]) -> _Method[_Self, _Params, _Result]:
    """Run ``method`` (a plan) without a trace of its own: the steps it runs are not a run,
    and the trace of the last run stays the last trace."""

    @functools.wraps(method)
    def untraced(self: _Self, *args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        if self._running_trace is not None:
            return method(self, *args, **kwargs)
        self._running_trace = PipelineTrace(self.pipeline_name)
        try:
            return method(self, *args, **kwargs)
        finally:
            self._running_trace = None

    return untraced


def _next_trace(pipeline: PipelineParts, call: str) -> PipelineTrace:
    """The trace a traced method starts: a new one, but extract, normalize and load called
    in that order add up to one trace, as in dlt, as long as each succeeds."""
    previous = pipeline._last_trace
    continues = (
        previous is not None
        and previous.error is None
        and previous.calls[-1:] in (["extract"], ["normalize"])
        and _STEP_ORDER.index(call) > _STEP_ORDER.index(previous.calls[-1])
    )
    trace = previous if continues and previous is not None else PipelineTrace(pipeline.pipeline_name)
    trace.start(call)
    return trace


def _save_trace(pipeline: PipelineParts, trace: PipelineTrace) -> None:
    try:
        save_trace(pipeline.working_dir, trace)
    except OSError as exc:
        # The trace is a record of the run: not being able to write it does not fail one.
        logger.warning("pipeline '%s': the trace could not be saved: %s", pipeline.pipeline_name, exc)


@dataclasses.dataclass
class RunArguments:
    """What run(), plan() and extract() are told besides the data."""

    table_name: str | None
    hints: TableHintArgs
    execution_time: datetime.datetime | str | None

    def __post_init__(self) -> None:
        # One clock for the whole call: every batch and the plan see the same time. Any
        # form a user passes (pendulum's DateTime, a naive or aware datetime, ISO text)
        # becomes one aware stdlib UTC datetime here.
        self.clock = (
            as_utc(self.execution_time, "execution_time") if self.execution_time is not None else now()
        )
