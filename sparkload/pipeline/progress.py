"""The progress a pipeline shows for each step: a tqdm bar, log lines, or nothing.

- extract counts the rows written, with the total when the resources' data knows it up
  front (a list, an Arrow table, a pandas frame; see ``extract.items.rows_known_up_front``);
- normalize and load tick once per table, naming it.

The extractor reports once per 10,000 rows (``extract.extractor._REPORT_EVERY``), and a
display does no more than a subtraction and a clock read per report, so progress costs
nothing per row. ``tqdm.auto`` draws a widget in a notebook (with ipywidgets) and a text
bar elsewhere; it is imported only when a bar is asked for.

A pipeline's ``progress`` is ``"tqdm"``, ``"log"``, None, or what ``tqdm(...)`` and
``log(...)`` here return: dlt's ``dlt.progress.tqdm(...)`` and ``dlt.progress.log(...)``
collectors, with their arguments, so a dlt script passing one runs after its import is
changed (``sl.progress.tqdm(colour="yellow")``). dlt's ``enlighten`` and
``alive_progress`` need packages sparkload does not depend on, and are refused by name.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import NoReturn, Protocol, TextIO

from sparkload.pipeline.logs import ONE_LINE_FORMAT, progress_logger

# dlt's other progress names, which would need packages sparkload does not depend on.
_DLT_ONLY_MODES = ("enlighten", "alive_progress")
# Seconds between two "log" lines while a step runs (dlt's LogCollector logs every second).
LOG_PERIOD = 1.0
_OFFERED = (
    "'tqdm' (a bar; a widget in a notebook), 'log' (lines on stderr or your logging), "
    "sl.progress.tqdm(...), sl.progress.log(...) or None"
)


class TqdmProgress:
    """A tqdm bar per step, made with these keyword arguments of tqdm's (``colour``,
    ``ncols``, ``file``, ``leave`` ...)."""

    def __init__(self, **tqdm_kwargs: object) -> None:
        self.tqdm_kwargs = tqdm_kwargs

    def display(self, step: str, load_id: str | None) -> _Display:
        return _Bar(step, self.tqdm_kwargs)

    def __repr__(self) -> str:
        return f"sl.progress.tqdm({', '.join(f'{k}={v!r}' for k, v in self.tqdm_kwargs.items())})"


class LogProgress:
    """Log lines: to ``logger`` (a ``logging.Logger``, at ``log_level`` and as its level
    lets through; a text stream, written as is; None: sparkload's ``sparkload.progress``
    logger, which writes to stderr when no handler of the user's takes the line), at most
    one every ``log_period`` seconds while rows are extracted, one per table."""

    def __init__(
        self,
        log_period: float = LOG_PERIOD,
        logger: logging.Logger | TextIO | None = None,
        log_level: int = logging.INFO,
    ) -> None:
        self.log_period = log_period
        self.logger = logger
        self.log_level = log_level

    def display(self, step: str, load_id: str | None) -> _Display:
        return _Lines(step, load_id, self)

    def __repr__(self) -> str:
        return f"sl.progress.log(log_period={self.log_period!r})"


def tqdm(single_bar: bool = False, **tqdm_kwargs: object) -> TqdmProgress:
    """dlt's ``dlt.progress.tqdm``: a bar per step. sparkload draws one bar a step
    whatever ``single_bar`` says (dlt's second bar per resource has no counterpart)."""
    return TqdmProgress(**tqdm_kwargs)


def log(
    log_period: float = LOG_PERIOD,
    logger: logging.Logger | TextIO | None = None,
    log_level: int = logging.INFO,
    dump_system_stats: bool = True,
) -> LogProgress:
    """dlt's ``dlt.progress.log``: log lines (see ``LogProgress``). ``dump_system_stats``
    is accepted and does nothing: sparkload logs no memory or CPU figures, as dlt without
    psutil. Unlike dlt's (stdout), the lines go to stderr when ``logger`` is None."""
    return LogProgress(log_period, logger, log_level)


def enlighten(*args: object, **kwargs: object) -> NoReturn:
    """dlt's ``dlt.progress.enlighten``: refused (sparkload does not depend on enlighten)."""
    _refuse_dlt_only("enlighten")


def alive_progress(*args: object, **kwargs: object) -> NoReturn:
    """dlt's ``dlt.progress.alive_progress``: refused (sparkload does not depend on it)."""
    _refuse_dlt_only("alive_progress")


def _refuse_dlt_only(name: str) -> NoReturn:
    raise ValueError(f"progress={name!r} is one of dlt's displays, not sparkload's; use {_OFFERED}")


# What a pipeline's ``progress=`` takes (anything else is refused by ``progress_style``).
ProgressArg = str | TqdmProgress | LogProgress | None


def progress_style(mode: ProgressArg) -> TqdmProgress | LogProgress | None:
    """What shows progress for a pipeline's ``progress=mode``, or a ValueError that lists
    what sparkload shows."""
    if mode is None or isinstance(mode, (TqdmProgress, LogProgress)):
        return mode
    if isinstance(mode, str):
        if mode == "tqdm":
            return TqdmProgress()
        if mode == "log":
            return LogProgress()
        if mode in _DLT_ONLY_MODES:
            _refuse_dlt_only(mode)
    raise ValueError(f"progress must be {_OFFERED}; got {mode!r}")


class _Display(Protocol):
    """One step's display, from its start to its end."""

    def total(self, count: int | None) -> None: ...

    def items(self, count: int) -> None: ...

    def table(self, name: str) -> None: ...

    def finish(self, failed: bool) -> None: ...


class Progress:
    """The display of a pipeline's steps in the mode the user chose (see ``progress_style``).

    ``start`` and ``finish`` come from ``pipeline_step``; in between, extract reports
    ``total`` and ``items`` (rows), normalize and load report ``total`` and ``table``."""

    def __init__(self, mode: ProgressArg) -> None:
        self.style = progress_style(mode)
        self._display: _Display | None = None
        # normalize finishes its tables in threads side by side
        self._lock = threading.Lock()

    def start(self, step: str, load_id: str | None = None) -> None:
        if self.style is not None:
            self._display = self.style.display(step, load_id)

    def total(self, count: int | None) -> None:
        """Rows (extract) or tables (normalize, load) expected in all; None: not known."""
        if self._display is not None:
            self._display.total(count)

    def items(self, count: int) -> None:
        """The rows extracted so far (called once per 10,000 rows, not per row)."""
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


class _DisplayHandle(Protocol):
    """What ``_Bar`` uses of the handle IPython's ``display(..., display_id=True)`` returns."""

    def update(self, obj: object) -> None: ...


class _Bar:
    """A tqdm bar (``tqdm.auto``: a notebook widget where one can be drawn)."""

    def __init__(self, step: str, tqdm_kwargs: dict[str, object]) -> None:
        from tqdm.auto import tqdm as make_bar

        extract = step == "extract"
        settings = {
            "unit": " rows" if extract else " tables",
            "unit_scale": extract,  # 2.00M rows, not 2000000
            "dynamic_ncols": True,
            **tqdm_kwargs,
        }
        notebook = _draws_a_widget(make_bar)
        if notebook:
            settings.setdefault("display", False)  # shown below, where it can be shown again
        self._bar = make_bar(desc=step, **settings)
        self._shown: _DisplayHandle | None = None
        if notebook and settings["display"] is False and hasattr(self._bar, "container"):
            from IPython.display import display

            self._shown = display(self._bar.container, display_id=True)

    def total(self, count: int | None) -> None:
        if count != self._bar.total:
            self._retotal(count)

    def items(self, count: int) -> None:
        # Parallelized resources report from their threads: a count taken a moment earlier
        # may arrive after a later one, and a bar never goes back.
        if count > self._bar.n:
            self._bar.update(count - self._bar.n)

    def table(self, name: str) -> None:
        self._bar.update(1)
        self._bar.set_postfix_str(name)  # drawn now: each table's name is seen, not the last one's

    def finish(self, failed: bool) -> None:
        if not failed and self._bar.total is not None and self._bar.n != self._bar.total:
            # Filters, limits and incremental cursors let fewer rows through than the data
            # held: the step is done, and its bar says so (a notebook's turns red otherwise).
            self._retotal(self._bar.n)
        self._bar.close()
        if self._shown is not None:
            # A notebook file keeps, beside the widget, its text as it was when displayed
            # ("extract: 0.00 rows"): what a viewer that draws no widget shows (GitHub,
            # nbconvert's HTML, a notebook run by nbclient). Shown again now, the bar's
            # output carries the final counts.
            self._shown.update(self._bar.container)

    def _retotal(self, count: int | None) -> None:
        """A new total for the bar, keeping its count and clock. ``reset`` is tqdm's one way
        to change the total that a notebook widget's bar follows too; it sets the count
        and the clock back, so they are put back after it."""
        bar = self._bar
        if count is None:
            bar.total = None  # the count goes on, without a percentage
            bar.refresh()
            return
        n, started = bar.n, bar.start_t
        bar.reset(total=count)
        bar.n = bar.last_print_n = n
        bar.start_t = started
        bar.refresh()


def _draws_a_widget(make_bar: object) -> bool:
    """Whether ``tqdm.auto`` chose its notebook widget (a notebook with ipywidgets)."""
    from tqdm.notebook import tqdm_notebook

    return isinstance(make_bar, type) and issubclass(make_bar, tqdm_notebook)


class _Lines:
    """One log line when the step starts, one per table, one every ``log_period`` seconds
    of an extract, one when it ends; on the ``sparkload.progress`` logger, which writes to
    stderr when the user's logging does not take the line."""

    def __init__(self, step: str, load_id: str | None, style: LogProgress) -> None:
        self._style = style
        self._logger = progress_logger()
        self._formatter = logging.Formatter(ONE_LINE_FORMAT)
        self._step = step
        self._total: int | None = None
        self._count = 0
        self._started = time.monotonic()
        self._logged = self._started
        self._log("%s started%s", step, f" (load package {load_id})" if load_id else "")

    def total(self, count: int | None) -> None:
        self._total = count

    def items(self, count: int) -> None:
        self._count = max(self._count, count)
        now = time.monotonic()
        if now - self._logged >= self._style.log_period:
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
        unit = "row" if self._step == "extract" else "table"
        counted = f"{self._count:,} {unit}{'' if self._count == 1 else 's'}"
        self._log("%s finished: %s in %.1fs", self._step, counted, seconds)

    def _log(self, message: str, *args: object) -> None:
        target, level = self._style.logger, self._style.log_level
        if isinstance(target, logging.Logger):
            target.log(level, message, *args)  # the user's logger, by its own rules
            return
        logger = self._logger
        record = logger.makeRecord(logger.name, level, __file__, 0, message, args, None)
        if target is None:
            # Handled directly, past the logger's level: progress="log" asked for these
            # lines, whatever level the user's logging gives sparkload's loggers.
            logger.handle(record)
        else:
            target.write(self._formatter.format(record) + "\n")
            target.flush()
