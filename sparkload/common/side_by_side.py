"""Run independent pieces of engine work side by side in threads.

A Spark Connect call spends most of its time waiting for the engine, and a load has many
small, independent calls (one per table); running them side by side overlaps those waits.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def run_side_by_side(
    tasks: Sequence[Callable[[], T]],
    max_workers: int,
    name: str,
    alongside: Callable[[], object] | None = None,
) -> list[T]:
    """The results of ``tasks``, in their order. Every task runs to its end even when
    another fails; then the first failure (in task order) is raised. Each thread sees the
    caller's context variables.

    ``alongside`` (work that stays in the calling thread) runs there while the tasks run in
    theirs; its failure is raised once every task has ended, ahead of theirs."""
    if alongside is None and len(tasks) <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name) as pool:
        futures = [pool.submit(contextvars.copy_context().run, task) for task in tasks]
        if alongside is not None:
            alongside()
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error
    return [future.result() for future in futures]
