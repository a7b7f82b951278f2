"""Steps applied to a resource's items after they leave the generator (add_map & co.)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sparkload.extract.defer import is_deferred
from sparkload.extract.mark import MarkedItem

STEP_KINDS = ("map", "filter", "yield_map")


@dataclasses.dataclass(frozen=True)
class Step:
    kind: str
    # What it returns depends on ``kind``: the new item (map), a verdict (filter) or the
    # items to go on with (yield_map).
    func: Callable[[object], Any]


def apply_steps(items: Iterator[object], steps: tuple[Step, ...]) -> Iterator[object]:
    """Run every item through ``steps`` in order; a map returning None drops the item."""
    if not steps:
        return items  # no wrapper on the hot path
    return _apply(items, steps)


def _apply(items: Iterable[object], steps: tuple[Step, ...]) -> Iterator[object]:
    for item in items:
        if type(item) is MarkedItem:
            yield from _run_marked(item, steps)
        else:
            yield from _run(item, steps, 0)


def _run_marked(marked: MarkedItem, steps: tuple[Step, ...]) -> Iterator[object]:
    """As dlt does: the steps run on what was marked (each row of a marked list) and what
    they make keeps the mark."""
    data = marked.data
    if isinstance(data, list) or type(data) is tuple:
        kept = [produced for row in data for produced in _run(row, steps, 0)]
        if kept:
            yield marked.with_data(kept)
        return
    for produced in _run(data, steps, 0):
        yield marked.with_data(produced)


def _run(item: object, steps: tuple[Step, ...], start: int) -> Iterator[object]:
    if is_deferred(item):
        # A deferred call (``sl.defer``) is no item yet: the steps see what it returns,
        # when the extractor has it (``Resource.finish_deferred``), as in dlt.
        yield item
        return
    for index in range(start, len(steps)):
        step = steps[index]
        if step.kind == "map":
            item = step.func(item)
            if item is None:
                return
        elif step.kind == "filter":
            if not step.func(item):
                return
        else:  # yield_map: one item in, any number out; the rest of the steps see each
            for produced in step.func(item):
                yield from _run(produced, steps, index + 1)
            return
    yield item
