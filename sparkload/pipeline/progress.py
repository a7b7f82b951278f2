"""Progress of long extracts and loads: a tqdm bar, log lines, or nothing."""

from __future__ import annotations

import logging
from typing import Any

from tqdm import tqdm

logger = logging.getLogger("sparkload.progress")


class Progress:
    def __init__(self, mode: str | None) -> None:
        if mode not in (None, "tqdm", "log"):
            raise ValueError(f"progress must be 'tqdm', 'log' or None, got {mode!r}")
        self.mode = mode
        self._bar: Any = None
        self._last_logged = 0

    def start(self, step: str) -> None:
        if self.mode == "tqdm":
            self._bar = tqdm(desc=step, unit=" items" if step == "extract" else " tables")
        elif self.mode == "log":
            logger.info("%s started", step)

    def items(self, count: int) -> None:
        """Called every few thousand items with the running count."""
        if self._bar is not None:
            self._bar.update(count - self._bar.n)
        elif self.mode == "log" and count - self._last_logged >= 100_000:
            self._last_logged = count
            logger.info("extracted %d items", count)

    def table(self, name: str) -> None:
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(name)
        elif self.mode == "log":
            logger.info("loaded table %s", name)

    def finish(self, step: str) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.mode == "log":
            logger.info("%s finished", step)
        self._last_logged = 0
