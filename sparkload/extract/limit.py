"""``add_limit``: stop a resource after so many pages (or rows) or seconds, as dlt does.

dlt counts what reaches the *end* of the resource's pipe, after maps, filters and the
incremental: a page every item of which was filtered out does not count, and the page that
reaches the limit is passed on whole. The generator is then never resumed, so a generator
that fetches a page from an API per yield makes no request for a page nobody will use.

Here pages are split into items right after the generator, so the two ends of the pipe
share one ``PageLimit``: the splitter numbers the pages (and counts the empty ones, which
dlt counts too but which send no item down the pipe); the end of the pipe counts the pages
(or rows) its items came from and, once the limit is reached, tells the splitter to stop
after the page it is on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import TypeGuard


@dataclasses.dataclass
class PageLimit:
    """A limit of ``max_items`` pages (rows with ``count_rows``) or ``max_time`` seconds."""

    max_items: int | None = None
    max_time: float | None = None
    count_rows: bool = False

    @property
    def unlimited(self) -> bool:
        return self.max_items is None and self.max_time is None

    def start(self) -> LimitRun:
        return LimitRun(self)


class LimitRun:
    """One iteration's count: what the splitter and the end of the pipe share."""

    def __init__(self, limit: PageLimit) -> None:
        self.limit = limit
        self.page = 0  # number of the page the splitter is on
        self.count = 0
        self.stop = False  # the limit was reached: no page after the current one
        self._counted_page = 0
        self._started = time.monotonic()

    def split(self, pages: Iterator[object]) -> Iterator[object]:
        """The items of each page (a list, a list subclass such as a REST page, or a tuple, is
        a page of items); the generator is not resumed once the limit is reached, and is
        closed when the split ends (exhausted, stopped or closed itself)."""
        try:
            if self.limit.max_items == 0:
                return  # dlt: a limit of 0 lets nothing through
            if self.limit.unlimited:
                # The common case, once per item: no page numbering, and only an incremental
                # (``stop_after_page``) to stop at.
                for page in pages:
                    if type(page) is dict:
                        yield page
                    elif _is_page(page):
                        yield from page
                    else:
                        yield page
                    if self.stop:
                        return
                return
            for page in pages:
                self.page += 1
                if _is_page(page):
                    if not page and not self.limit.count_rows:
                        self._count(1)  # dlt counts an empty page as a yield
                    yield from page
                else:
                    yield page
                if self.stop:
                    return
        finally:
            _close(pages)

    def stop_after_page(self) -> None:
        """Pull no page after the one being split: the rest of it still goes down the pipe
        (an incremental whose ``row_order`` says no more rows can come in range, as dlt closes
        the generator but processes the page at hand)."""
        self.stop = True

    def counted(self, items: Iterator[object]) -> Iterator[object]:
        """The items that reach the end of the pipe, counted; sets ``stop`` at the limit."""
        for item in items:
            if self.limit.count_rows:
                self._count(1)
            elif self.page != self._counted_page:
                self._counted_page = self.page
                self._count(1)
            yield item

    def count_page(self, page: object) -> None:
        """Count a whole page reaching the end of the pipe."""
        self._count(len(page) if self.limit.count_rows and _is_page(page) else 1)

    def _count(self, n: int) -> None:
        self.count += n
        max_items, max_time = self.limit.max_items, self.limit.max_time
        if max_items is not None and self.count >= max_items:
            self.stop = True
        if max_time is not None and time.monotonic() - self._started > max_time:
            self.stop = True


def limit_pages(pages: Iterator[object], limit: PageLimit) -> Iterator[object]:
    """Whole pages (a transformer's parent passes pages on unsplit), counted as dlt does at the
    end of the pipe; stops right after the page that reaches the limit."""
    run = limit.start()
    try:
        if limit.max_items == 0:
            return
        for page in pages:
            run.count_page(page)
            yield page
            if run.stop:
                return
    finally:
        _close(pages)


def _close(iterator: object) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def _is_page(item: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    return isinstance(item, list) or type(item) is tuple
