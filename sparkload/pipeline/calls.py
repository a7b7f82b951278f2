"""How the Pipeline's steps are called: one run of a pipeline at a time (``locked``), each
recorded in a trace (``traced``, ``untraced`` for a plan), and what run(), plan() and
extract() are told besides the data (``RunArguments``)."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sparkload.common.time import as_utc, now
from sparkload.extract.hints import TableHintArgs
from sparkload.pipeline.logs import apply_log_level
from sparkload.pipeline.trace import PipelineTrace

if TYPE_CHECKING:
    from sparkload.pipeline.pipeline import Pipeline


def new_load_id() -> str:
    # Wall-clock based like dlt's, so ids sort in creation order; not the execution_time,
    # which tests fix and two runs may share.
    return f"{time.time():.6f}"


_Method = TypeVar("_Method", bound=Callable[..., Any])


def locked(method: _Method) -> _Method:
    """Run ``method`` holding the pipeline's run lock (one run of a pipeline at a time)."""

    @functools.wraps(method)
    def locked(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
        apply_log_level()  # as set now: a notebook may have changed it since the last run
        with self._lock.held(), self._session_scope():
            return method(self, *args, **kwargs)

    return cast(_Method, locked)


def traced(call: str) -> Callable[[_Method], _Method]:
    """Record ``method`` (``call``: run, extract, normalize or load) in a trace, saved in the
    working directory when it starts and when it ends, by returning or by an exception.
    Called from another traced method (run calls load), it adds to that one's trace."""

    def decorate(method: _Method) -> _Method:
        @functools.wraps(method)
        def traced(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
            if self._running_trace is not None:
                return method(self, *args, **kwargs)
            trace = self._next_trace(call)
            self._running_trace = self._last_trace = trace
            self._save_trace(trace)
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
                self._save_trace(trace)

        return cast(_Method, traced)

    return decorate


def untraced(method: _Method) -> _Method:
    """Run ``method`` (a plan) without a trace of its own: the steps it runs are not a run,
    and the trace of the last run stays the last trace."""

    @functools.wraps(method)
    def untraced(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
        if self._running_trace is not None:
            return method(self, *args, **kwargs)
        self._running_trace = PipelineTrace(self.pipeline_name)
        try:
            return method(self, *args, **kwargs)
        finally:
            self._running_trace = None

    return cast(_Method, untraced)


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
