"""The run context: what a resource sees of the pipeline extracting it.

The pipeline opens an :func:`extraction` around each package it extracts; resources (and
incrementals, interval arguments and config lookups inside them) read the state, the
windows and the clock from here, and ``sl.current`` reads the same values for users.
Everything lives in context variables, so threads started through
``contextvars.copy_context()`` (parallelized resources, side-by-side work) see their
caller's run.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import datetime
from collections.abc import Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from sparkload.common.state_record import PipelineState, SourceState
from sparkload.common.time import Window, now
from sparkload.exceptions import SparkloadError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class PipelineView(Protocol):
    """What a resource may ask of a pipeline: its name, its committed state and its engine
    (a SparkSession, for sources that read through the engine)."""

    @property
    def spark(self) -> SparkSession: ...

    @property
    def pipeline_name(self) -> str: ...

    @property
    def state(self) -> PipelineState: ...

    @property
    def local_state(self) -> PipelineState: ...


_pipeline: contextvars.ContextVar[PipelineView | None] = contextvars.ContextVar(
    "sparkload_pipeline", default=None
)
_state: contextvars.ContextVar[PipelineState | None] = contextvars.ContextVar("sparkload_state", default=None)
# The time window each interval resource loads in this package, by resource name.
_windows: contextvars.ContextVar[Mapping[str, Window] | None] = contextvars.ContextVar(
    "sparkload_windows", default=None
)
# The run's clock (its ``execution_time``).
_clock: contextvars.ContextVar[datetime.datetime | None] = contextvars.ContextVar(
    "sparkload_clock", default=None
)
# What one extraction computes once and reuses (by key), such as a transformer's arguments
# from config, read for its first item only.
_scratch: contextvars.ContextVar[dict[Hashable, dict[str, object]] | None] = contextvars.ContextVar(
    "sparkload_scratch", default=None
)
_source: contextvars.ContextVar[str | None] = contextvars.ContextVar("sparkload_source", default=None)
_resource: contextvars.ContextVar[str | None] = contextvars.ContextVar("sparkload_resource", default=None)
# The source whose function is running: resources made inside it take its name as their
# config section (``sources.<source>.<resource>``).
_defining_source: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "sparkload_defining_source", default=None
)
# The pipeline made last in this process: ``sl.current.pipeline()`` outside a run, as in dlt.
_last_made: list[PipelineView | None] = [None]


def remember_pipeline(pipeline: PipelineView) -> None:
    """Record ``pipeline`` as the one made last (``sl.pipeline(...)`` calls this)."""
    _last_made[0] = pipeline


@contextlib.contextmanager
def extraction(
    pipeline: PipelineView,
    state: PipelineState,
    windows: Mapping[str, Window] | None = None,
    clock: datetime.datetime | None = None,
) -> Iterator[None]:
    """Make ``pipeline``, the state being extracted, the interval resources' windows and the
    run's clock visible to resources."""
    tokens = (_pipeline.set(pipeline), _state.set(state), _windows.set(windows), _clock.set(clock))
    scratch = _scratch.set({})
    try:
        yield
    finally:
        _pipeline.reset(tokens[0])
        _state.reset(tokens[1])
        _windows.reset(tokens[2])
        _clock.reset(tokens[3])
        _scratch.reset(scratch)


@contextlib.contextmanager
def defining_source(source_name: str) -> Iterator[None]:
    """Name the source whose function is running while it makes its resources."""
    token = _defining_source.set(source_name)
    try:
        yield
    finally:
        _defining_source.reset(token)


def defining_source_name() -> str | None:
    """The source whose function is running, or None."""
    return _defining_source.get()


@contextlib.contextmanager
def resource_scope(source_name: str, resource_name: str) -> Iterator[None]:
    """Name the source and resource being extracted, for ``source_state``/``resource_state``."""
    tokens = (_source.set(source_name), _resource.set(resource_name))
    try:
        yield
    finally:
        _source.reset(tokens[0])
        _resource.reset(tokens[1])


def execution_time() -> datetime.datetime:
    """The running extraction's ``execution_time`` (now, outside a run)."""
    return _clock.get() or now()


def interval_window(resource_name: str) -> Window | None:
    """The window an interval resource loads in the package being extracted (or None)."""
    return (_windows.get() or {}).get(resource_name)


def extraction_scratch(key: Hashable) -> dict[str, object]:
    """A dict the running extraction keeps under ``key`` (a fresh one outside a run)."""
    scratch = _scratch.get()
    if scratch is None:
        return {}
    return scratch.setdefault(key, {})


def extracting_pipeline() -> PipelineView | None:
    """The pipeline whose extraction is running, or None."""
    return _pipeline.get()


def active_pipeline() -> PipelineView:
    """The pipeline that is running, or else the one made last in this process."""
    active = _pipeline.get() or _last_made[0]
    if active is None:
        raise SparkloadError("no pipeline is active: create one with sl.pipeline(...)")
    return active


def state() -> PipelineState:
    """The whole pipeline state as it will be committed with this load."""
    current = _state.get()
    if current is None:
        raise SparkloadError("pipeline state is available only while a pipeline extracts")
    return current


def source_state() -> dict[str, Any]:
    """State shared by the resources of the source being extracted; in a source function's
    body, or a resource iterated by hand, the source's state as last committed (a copy)."""
    source = _source.get()
    if source is None:
        raise SparkloadError(
            "source_state() is available only inside a running resource (or a source "
            "function's body, or a resource iterated by hand)"
        )
    sources: dict[str, Any] = state().setdefault("sources", {})
    own: dict[str, Any] = sources.setdefault(source, {})
    return own


def detached_state(source_name: str) -> PipelineState | None:
    """The state a source function's body or a resource iterated outside a run sees, as in
    dlt: ``source_name``'s state as the pipeline made last committed it (empty without
    one), as a copy, since no load commits what is written to it. None inside a run (or
    another such scope), whose state stays."""
    if _state.get() is not None:
        return None
    committed: SourceState = {}
    last = _last_made[0]
    if last is not None:
        # The working directory's copy: reading it starts no engine (a source is often
        # made before the pipeline first runs, and outside the pipeline's run lock).
        committed = last.local_state.get("sources", {}).get(source_name, {})
    return {"sources": {source_name: copy.deepcopy(committed)}}


@contextlib.contextmanager
def state_scope(state: PipelineState | None, source_name: str, resource_name: str | None) -> Iterator[None]:
    """Make ``state`` (from ``detached_state``) the one ``source_state``/``resource_state``
    read, for ``source_name`` and ``resource_name``; nothing changes when it is None."""
    if state is None:
        yield
        return
    tokens = (_state.set(state), _source.set(source_name), _resource.set(resource_name))
    try:
        yield
    finally:
        _state.reset(tokens[0])
        _source.reset(tokens[1])
        _resource.reset(tokens[2])


def resource_name() -> str | None:
    """The name of the resource being extracted (None outside one)."""
    return _resource.get()


def resource_state(resource_name: str | None = None) -> dict[str, Any]:
    """State private to the resource being extracted (or to ``resource_name``)."""
    name = resource_name or _resource.get()
    if name is None:
        raise SparkloadError("resource_state() is available only inside a running resource")
    resources: dict[str, Any] = source_state().setdefault("resources", {})
    own: dict[str, Any] = resources.setdefault(name, {})
    return own
