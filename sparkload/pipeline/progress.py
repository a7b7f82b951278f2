"""The progress a pipeline shows for each step: a tqdm bar, log lines, or nothing.

- extract counts the rows written, with the total when the resources' data knows it up
  front (a list, an Arrow table, a pandas frame; see ``extract.items.rows_known_up_front``);
- normalize and load tick once per table, naming it.

The extractor reports once per batch of rows (``extract.extractor._BATCH``), and a
display does no more than a subtraction and a clock read per report, so progress costs
nothing per row. ``tqdm.auto`` draws a widget in a notebook (with ipywidgets) and a text
bar elsewhere; it is imported only when a bar is asked for.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

from sparkload.pipeline.logs import progress_logger

MODES = ("tqdm", "log")
# dlt's other progress names, which would need packages sparkload does not depend on.
_DLT_ONLY_MODES = ("enlighten", "alive_progress")
# Seconds between two "log" lines while a step runs (dlt's LogCollector logs every second).
LOG_PERIOD = 1.0


def check_mode(mode: Any) -> str | None:
    """``mode`` if sparkload shows it, else a ValueError that lists what it shows."""
    if mode is None or mode in MODES:
        return mode
    offered = "'tqdm' (a bar; a widget in a notebook), 'log' (lines on stderr or your logging) or None"
    if mode in _DLT_ONLY_MODES:
        raise ValueError(f"progress={mode!r} is one of dlt's displays, not sparkload's; use {offered}")
    raise ValueError(f"progress must be {offered}, got {mode!r}")


class _Display(Protocol):
    """One step's display, from its start to its end."""

    def total(self, count: int | None) -> None: ...

    def items(self, count: int) -> None: ...

    def table(self, name: str) -> None: ...

    def finish(self, failed: bool) -> None: ...


class Progress:
    """The display of a pipeline's steps in the mode the user chose (see ``MODES``).

    ``start`` and ``finish`` come from ``pipeline_step``; in between, extract reports
    ``total`` and ``items`` (rows), normalize and load report ``total`` and ``table``."""

    def __init__(self, mode: str | None) -> None:
        self.mode = check_mode(mode)
        self._display: _Display | None = None
        # normalize finishes its tables in threads side by side
        self._lock = threading.Lock()

    def start(self, step: str, load_id: str | None = None) -> None:
        if self.mode == "tqdm":
            self._display = _Bar(step)
        elif self.mode == "log":
            self._display = _Lines(step, load_id)

    def total(self, count: int | None) -> None:
        """Rows (extract) or tables (normalize, load) expected in all; None: not known."""
        if self._display is not None:
            self._display.total(count)

    def items(self, count: int) -> None:
        """The rows extracted so far (called once per batch of rows, not per row)."""
        if self._display is not None:
            self._display.items(count)

    def table(self, name: str) -> None:
        """One more table normalized or loaded."""
        if self._display is not None:
            with self._lock:
                self._display.table(name)

    def finish(self, step: str, failed: bool = False) -> None:
        display, self._display = self._display, None
        if display is not None:
            display.finish(failed)


class _Bar:
    """A tqdm bar (``tqdm.auto``: a notebook widget where one can be drawn)."""

    def __init__(self, step: str) -> None:
        from tqdm.auto import tqdm

        self._extract = step == "extract"
        self._bar = tqdm(
            desc=step,
            unit=" rows" if self._extract else " tables",
            unit_scale=self._extract,  # 2.00M rows, not 2000000
            dynamic_ncols=True,
        )

    def total(self, count: int | None) -> None:
        if count != self._bar.total:
            self._bar.total = count
            self._bar.refresh()

    def items(self, count: int) -> None:
        self._bar.update(count - self._bar.n)

    def table(self, name: str) -> None:
        self._bar.update(1)
        self._bar.set_postfix_str(name)  # drawn now: each table's name is seen, not the last one's

    def finish(self, failed: bool) -> None:
        if not failed and self._bar.total is not None and self._bar.n != self._bar.total:
            # Filters, limits and incremental cursors let fewer rows through than the data
            # held: the step is done, and its bar says so.
            self._bar.total = self._bar.n
        self._bar.close()


class _Lines:
    """One log line when the step starts, one per table, one every ``LOG_PERIOD`` seconds
    of an extract, one when it ends; on the ``sparkload.progress`` logger, which writes to
    stderr when the user's logging does not take the line."""

    def __init__(self, step: str, load_id: str | None) -> None:
        self._logger = progress_logger()
        self._step = step
        self._total: int | None = None
        self._count = 0
        self._started = time.monotonic()
        self._logged = self._started
        self._log("%s started%s", step, f" (load package {load_id})" if load_id else "")

    def total(self, count: int | None) -> None:
        self._total = count

    def items(self, count: int) -> None:
        self._count = count
        now = time.monotonic()
        if now - self._logged >= LOG_PERIOD:
            self._logged = now
            share = f" of {self._total:,} ({100 * count // self._total}%)" if self._total else ""
            self._log("%s: %s rows%s", self._step, f"{count:,}", share)

    def table(self, name: str) -> None:
        self._count += 1
        done = "loaded" if self._step == "load" else f"{self._step}d"
        share = f" ({self._count} of {self._total})" if self._total else ""
        self._log("%s: table '%s' %s%s", self._step, name, done, share)

    def finish(self, failed: bool) -> None:
        seconds = time.monotonic() - self._started
        if failed:
            self._log("%s failed after %.1fs", self._step, seconds)
            return
        unit = "rows" if self._step == "extract" else "tables"
        self._log("%s finished: %s %s in %.1fs", self._step, f"{self._count:,}", unit, seconds)

    def _log(self, message: str, *args: Any) -> None:
        # Handled directly, past the logger's level: progress="log" asked for these lines,
        # whatever level the user's logging gives sparkload's loggers.
        logger = self._logger
        logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 0, message, args, None))
