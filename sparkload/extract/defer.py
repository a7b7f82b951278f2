"""dlt's deferred items: ``@sl.defer`` and the pool that evaluates them.

A function decorated with ``@sl.defer`` returns, when called, a deferred item: a call not
made yet. A resource or transformer yields it (typically one per parent item, for calls
that wait on an API); the extractor evaluates deferred items in a pool of threads, several
at once, and writes what each returns (a dict, a list of rows, an Arrow table, …) as the
resource's items. As in dlt, any callable a resource yields is evaluated this way, and a
transformer fed by the resource receives what the call returned, never the call itself.
"""

from __future__ import annotations

import collections
import contextvars
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, ParamSpec, TypeGuard, TypeVar

from sparkload.extract.items import iterate_any
from sparkload.extract.mark import MarkedItem

# dlt's ``extract.workers``: the threads evaluating deferred items of one extraction.
DEFERRED_WORKERS = 5
# dlt's ``max_parallel_items``: deferred items of one resource submitted and not yet written;
# a resource yielding more waits for the oldest, so results never pile up in memory.
MAX_IN_FLIGHT = 20

P = ParamSpec("P")
R = TypeVar("R")


class Deferred(Generic[R]):
    """A call of a ``@sl.defer`` function, made when the extractor evaluates it."""

    __slots__ = ("_call",)

    def __init__(self, call: Callable[[], R]) -> None:
        self._call = call

    def __call__(self) -> R:
        return self._call()

    def __repr__(self) -> str:
        return f"<deferred {self._call!r}>"


def defer(func: Callable[P, R]) -> Callable[P, Callable[[], R]]:
    """dlt's ``@dlt.defer``: ``func(...)`` returns a deferred item instead of calling ``func``;
    the extractor calls it in its thread pool and takes what it returns as items."""

    @functools.wraps(func)
    def deferred(*args: P.args, **kwargs: P.kwargs) -> Callable[[], R]:
        return Deferred(functools.partial(func, *args, **kwargs))

    return deferred


def is_deferred(item: object) -> TypeGuard[Callable[[], object]]:
    """Whether ``item`` is evaluated in the pool rather than written: any callable but a
    class (dlt submits every callable item)."""
    return callable(item) and not isinstance(item, type)


def result_pages(
    result: object, finish: Callable[[Iterator[object]], Iterator[object]], mark: MarkedItem | None = None
) -> Iterator[object]:
    """The pages a deferred call's ``result`` makes, sent on by ``finish`` through the rest
    of its resource's pipe (``Resource.finish_deferred``): a list stays one page, as dlt hands
    it to a transformer, anything else is a page per item; None makes none. With ``mark``
    (the mark of the item that was deferred), each page carries it unless marked itself."""
    if result is None:
        return
    if isinstance(result, list) or type(result) is tuple:
        page = list(finish(iter(result)))
        pages: Iterator[object] = iter((page,) if page else ())
    else:
        pages = finish(iterate_any(result))
    for made in pages:
        yield made if mark is None or isinstance(made, MarkedItem) else mark.with_data(made)


class DeferredItems:
    """The deferred items of one resource, submitted to a shared pool and handed back in
    the order they were yielded (dlt writes them as they finish; a table's rows are the
    same either way, and this order makes the staged files repeatable).

    Each entry carries a ``tag`` (the mark of the item that was deferred) to go with its
    result."""

    def __init__(self, pool: Callable[[], ThreadPoolExecutor]) -> None:
        self._pool = pool
        self._pending: collections.deque[tuple[Future[object], MarkedItem | None]] = collections.deque()

    def submit(self, call: Callable[[], object], tag: MarkedItem | None = None) -> None:
        # The call sees the extraction's context (resource state, config) as dlt's does.
        future = self._pool().submit(contextvars.copy_context().run, call)
        self._pending.append((future, tag))

    @property
    def full(self) -> bool:
        return len(self._pending) >= MAX_IN_FLIGHT

    def ready(self) -> Iterator[tuple[object, MarkedItem | None]]:
        """``(result, tag)`` of the oldest items that have finished, without waiting."""
        while self._pending and self._pending[0][0].done():
            yield self._result()

    def oldest(self) -> tuple[object, MarkedItem | None]:
        """``(result, tag)`` of the oldest item, waiting for it."""
        return self._result()

    def __bool__(self) -> bool:
        return bool(self._pending)

    def cancel(self) -> None:
        """Drop items not started yet (a failed extraction writes nothing more)."""
        while self._pending:
            self._pending.popleft()[0].cancel()

    def _result(self) -> tuple[object, MarkedItem | None]:
        future, tag = self._pending.popleft()
        # Raises the deferred call's own exception; the extractor names the resource.
        return future.result(), tag
