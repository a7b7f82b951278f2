"""Run resources and stream their items into the staged files of a load package."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import functools
import itertools
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import orjson

from sparkload.common.context import resource_scope
from sparkload.common.naming import RESERVED_TABLE_PREFIX, normalize_table_name
from sparkload.common.side_by_side import run_side_by_side
from sparkload.exceptions import (
    ExtractError,
    SparkloadError,
    UnreadableFileError,
    UnsupportedItemError,
)
from sparkload.extract import frame_files
from sparkload.extract.defer import DEFERRED_WORKERS, DeferredItems, is_deferred, result_pages
from sparkload.extract.hints import TableHints
from sparkload.extract.items import is_arrow, is_pandas, is_spark_dataframe, iterate_any, to_arrow
from sparkload.extract.jobs import ExtractedTable, ExtractJob, every_entry
from sparkload.extract.load_hints import load_hints
from sparkload.extract.mark import MarkedItem
from sparkload.extract.serialize import batch_serializer, check_tags, dumps_row, dumps_rows, explain_failure
from sparkload.extract.spark_frames import check_session, staged_columns
from sparkload.extract.storage import EngineFiles, ImportedFileError, TableFiles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Items that are not dicts but values, each loaded as a row {"value": item}, as dlt does
# (numpy scalars too, told by their module).
SCALAR_ITEMS = (str, int, float, decimal.Decimal, datetime.date, datetime.time, uuid.UUID, bytes, list, tuple)
SCALAR_COLUMN = "value"

# Rows serialized by one orjson call on the hot path: enough that the per-call cost vanishes,
# few enough that the batch's dicts (and their nested dicts and lists) die young. Rows held
# any longer survive Python's youngest garbage collection and are promoted, and the older
# generations' collections, which walk every object of the process, then took more time
# than the serializing (W1: extract 2.5 s with 1,000-row batches, 1.1 s with 200).
_BATCH = 200
# Rows between two progress reports and two checks for a failed sibling resource.
_REPORT_EVERY = 10_000
# Threads for parallelized resources (dlt's default number of extract workers).
_PARALLEL_WORKERS = 5


class ExtractProgress(Protocol):
    """What the extractor tells a progress display (the pipeline's ``Progress``)."""

    def total(self, count: int | None) -> None:
        """The rows expected in all, as far as known (None: not known)."""

    def items(self, count: int) -> None:
        """The rows written so far."""


class _Cancelled(Exception):
    """Raised inside a parallelized resource's thread once another resource has failed."""


@dataclasses.dataclass
class _ResourceRun:
    """One resource's hints while it is extracted, as marks change them (``sl.mark``), and
    the tables its items went to.

    The resource itself is left as declared: as in dlt, hints a mark applies last for the rest
    of this run only."""

    name: str
    hints: TableHints
    # Hints of single tables (dlt's table variants), by normalized table name.
    variants: dict[str, TableHints] = dataclasses.field(default_factory=dict)
    # The files of each table by the name the resource gave; cleared when a mark changes the
    # hints, so each table's hints are computed again at its next item (dlt does the same).
    routes: dict[str, TableFiles] = dataclasses.field(default_factory=dict)

    @property
    def static_table(self) -> str | None:
        """The table every unmarked item goes to, or None when the name is computed per item."""
        name = self.hints.table_name
        return None if callable(name) else (name if name is not None else self.name)

    def table_of(self, item: object) -> str:
        name = self.hints.table_name
        if name is None:
            return self.name
        return str(name(item)) if callable(name) else name

    def hints_of(self, table: str) -> TableHints:
        """The hints table ``table`` (a normalized name) is written with."""
        return self.variants.get(table, self.hints)

    def apply(self, marked: MarkedItem) -> None:
        """Take the hints ``marked`` brings: the resource's from now on, or one table's."""
        assert marked.hints is not None
        if marked.create_table_variant:
            table = normalize_table_name(str(marked.hints["table_name"]))
            # A new variant starts from the resource's hints (dlt drops a table name computed
            # per item from them: a variant's name is fixed).
            base = self.variants.get(table) or dataclasses.replace(self.hints, table_name=None)
            self.variants[table] = base.merge(**marked.hints)
        else:
            self.hints = self.hints.merge(**marked.hints)
        self.routes.clear()


class Extractor:
    """Writes every item of the resources of its jobs into ``extracted_dir``.

    ``spark`` gives the pipeline's SparkSession (starting the engine if need be): Spark
    DataFrame items are written by it. ``engine_files`` says where the engine reads the
    files (by default, where they are written)."""

    def __init__(
        self,
        extracted_dir: Path,
        progress: ExtractProgress | None = None,
        on_file_closed: Callable[[str, Path], None] | None = None,
        spark: Callable[[], SparkSession] | None = None,
        engine_files: EngineFiles | None = None,
    ) -> None:
        self.extracted_dir = extracted_dir
        self._engine_files = engine_files
        self._spark = spark
        self.tables: dict[str, ExtractedTable] = {}
        self._files: dict[str, TableFiles] = {}  # by normalized table name
        self._runs: dict[int, _ResourceRun] = {}  # by id() of the resource's ExtractJob
        self._progress = progress
        self._on_file_closed = on_file_closed
        # The rows the resources' data holds, summed as each resource starts; None once one
        # does not know (a generator, a transformer): then the display has no total.
        self._expected_rows: int | None = 0
        self._files_lock = threading.Lock()
        # Set when a resource failed: parallelized resources still running stop at their
        # next batch instead of running to the end for nothing.
        self._failed = threading.Event()
        # Deferred items (``sl.defer``) waiting to be written, by id() of the ExtractJob, and
        # the pool evaluating them (started at the first one).
        self._deferred: dict[int, DeferredItems] = {}
        self._deferred_pool: ThreadPoolExecutor | None = None
        self._deferred_lock = threading.Lock()

    def run(self, jobs: list[ExtractJob]) -> dict[str, ExtractedTable]:
        """Run every resource of ``jobs``: parallelized ones (dlt's ``parallelized=True``)
        each in a thread of their own, the others one after the other in this thread."""
        # Each thread sees this extraction's context (pipeline, state, windows).
        parallel = [
            functools.partial(self._extract_in_turn, [entry]) for entry in jobs if entry.resource.parallelized
        ]
        in_this_thread = [entry for entry in jobs if not entry.resource.parallelized]
        try:
            run_side_by_side(
                parallel,
                _PARALLEL_WORKERS,
                "extract",
                alongside=functools.partial(self._extract_in_turn, in_this_thread),
            )
        finally:
            if self._deferred_pool is not None:
                # After a failure nothing more is written: calls not started are dropped.
                self._deferred_pool.shutdown(wait=True, cancel_futures=True)
            for files in self._files.values():
                files.close()
        for name, files in self._files.items():
            self.tables[name].rows = files.rows
        self._report_rows()  # the exact count: the last report was up to a batch behind
        return self.tables

    def _extract_in_turn(self, entries: list[ExtractJob]) -> None:
        """``entries`` one after the other, until one fails here or in another thread; a
        resource cancelled for another's failure ends quietly, so that failure is the one
        raised."""
        try:
            for entry in entries:
                self._extract_or_stop(entry)
        except _Cancelled:
            pass

    def _extract_or_stop(self, entry: ExtractJob) -> None:
        try:
            self._extract(entry)
        except BaseException:
            self._failed.set()
            raise

    def _check_not_cancelled(self) -> None:
        if self._failed.is_set():
            raise _Cancelled()

    def _extract(self, entry: ExtractJob, items: Iterator[object] | None = None) -> None:
        """Write ``entry``'s items: all of them (``items`` None: a pass over the resource),
        or those of one parent page (a transformer fed from its parent's pass)."""
        resource = entry.resource
        whole_pass = items is None
        with resource_scope(entry.source_name, resource.name), _named_failures(resource.name):
            if items is None:
                if entry.children:
                    # Its transformers' rows are counted too, and nobody knows them up front.
                    self._expect_rows(None)
                    items = resource.iter_pages()
                else:
                    items = resource.iter_items(on_size=self._expect_rows)
            try:
                if entry.children:
                    self._write_pages(entry, items)
                else:
                    self._write_items(entry, items)
            finally:
                # A resource stopped early (an error, a cancelled parallel run) runs its
                # generator's cleanup now, not whenever the error is garbage collected.
                close = getattr(items, "close", None)
                if close is not None:
                    close()
            if whole_pass:
                self._write_deferred(entry)
        if whole_pass:
            # Transformers fed page by page keep their deferred items in flight across the
            # pages; their parent's pass is over, so what is still running is written now.
            for child in every_entry(entry.children):
                name = child.resource.name
                with resource_scope(child.source_name, name), _named_failures(name):
                    self._write_deferred(child)

    def _write_pages(self, entry: ExtractJob, pages: Iterator[object]) -> None:
        """A parent shared with transformers: write each page, then hand it to them."""
        position = 0
        for page in pages:
            mark = page if type(page) is MarkedItem else None
            if mark is None or mark.file_import is None:
                call = page if mark is None else mark.data
                if is_deferred(call):
                    # Written, and handed to the transformers, when the pool has its result
                    # (``_write_result``), as dlt's transformers get what the call returned.
                    self._defer(entry, call, mark)
                    position += 1
                    continue
            items = page if isinstance(page, list) else [page]
            if not entry.feeds_only:
                self._write_items(entry, iter(items), position)
            position += len(items)
            if type(page) is MarkedItem and page.file_import is not None:
                continue  # a file is loaded as it is; there is no item to transform
            for child in entry.children:
                if isinstance(page, MarkedItem):
                    # dlt hands a transformer what was marked, and the mark goes on with the
                    # transformer's items.
                    produced = child.resource.iter_items_from(iter((page.data,)))
                    self._extract(child, _marked_as(page, produced))
                else:
                    self._extract(child, child.resource.iter_items_from(iter((page,))))

    def _write_items(self, entry: ExtractJob, items: Iterator[object], start: int = 0) -> None:
        resource = entry.resource
        run = self._run_of(entry)
        static_table = run.static_table
        position = start
        if static_table is not None:
            items, position = self._write_leading_dicts(entry, static_table, items, position)
        for item in items:
            if type(item) is dict:
                table = static_table or run.table_of(item)
                self._write_dict(self._files_for(table, entry), resource.name, position, item)
            elif type(item) is MarkedItem:
                self._write_marked(entry, position, item)
                static_table = run.static_table  # a mark may have renamed the resource's table
            elif is_deferred(item):
                self._defer(entry, item, None)
                static_table = run.static_table  # a result written meanwhile may carry a mark
            elif item is not None:
                self._write_other(entry, static_table, position, item)
            position += 1
            self._check_not_cancelled()
            if position % _REPORT_EVERY == 0:
                self._report_rows()

    def _write_dict(self, files: TableFiles, resource: str, position: int, item: dict[str, object]) -> None:
        files.write_line(self._dumps_slow(resource, position, item))

    @staticmethod
    def _dumps_slow(resource: str, position: int, item: dict[str, object]) -> bytes:
        try:
            return dumps_row(item)
        except (TypeError, orjson.JSONEncodeError) as exc:
            raise explain_failure(resource, position, item, exc) from None

    def _write_leading_dicts(
        self, entry: ExtractJob, table: str, items: Iterator[object], position: int
    ) -> tuple[Iterator[object], int]:
        """The hot path: a run of plain dicts for one table, serialized a batch at a time.

        Returns the rest of ``items`` (from the first non-dict on) and its position.
        """
        files = self._files_for(table, entry)
        while True:
            # Taken by islice in C: no Python loop per item.
            batch = list(itertools.islice(items, _BATCH))
            rest: list[object] = []
            if len(set(map(type, batch))) > 1 or (batch and type(batch[0]) is not dict):
                first_other = next(i for i, item in enumerate(batch) if type(item) is not dict)
                batch, rest = batch[:first_other], batch[first_other:]
            # Every item of the batch is a dict now (the first other item and those after it
            # were split off above).
            rows = cast("list[dict[str, object]]", batch)
            lines = dumps_rows(rows)
            if lines is None:
                files.write_lines(self._dump_each(entry, rows, position))
            else:
                files.write_block(lines, len(batch))
            if position // _REPORT_EVERY != (position + len(batch)) // _REPORT_EVERY:
                self._check_not_cancelled()
                self._report_rows()
            position += len(batch)
            if rest:
                return itertools.chain(rest, items), position
            if len(batch) < _BATCH:
                return iter(()), position

    def _dump_each(self, entry: ExtractJob, rows: list[dict[str, object]], position: int) -> list[bytes]:
        """The lines of ``rows`` one by one, for a batch ``dumps_rows`` passed on: the rows
        that need a closer look get it, and a value that cannot be written is named."""
        serializer = batch_serializer()
        # Locals, not attribute lookups, in the loop below: it runs once per row.
        dumps, default, options = serializer.dumps, serializer.default, serializer.options
        find, count, tag_count = serializer.find, serializer.count, serializer.tag_count
        backslash, null, nul_string = serializer.backslash, serializer.null, serializer.nul_string
        holds_special_float, dumps_escaped = serializer.holds_special_float, serializer.dumps_escaped
        opens_like_json = serializer.opens_like_json
        lines: list[bytes] = []
        append = lines.append
        for item in rows:
            before = tag_count[0]
            try:
                line = dumps(item, default=default, option=options)
                # orjson writes NaN and infinities as null: only then look at the floats.
                nulls = count(line, null)
                if (nulls and holds_special_float(item, nulls)) or opens_like_json(line):
                    line = dumps_escaped(item)
                elif find(line, backslash) != -1 and find(line, nul_string) != -1:
                    line = check_tags(item, line, before)
            except orjson.JSONEncodeError:
                line = self._dumps_slow(entry.resource.name, position, item)
            except TypeError as exc:
                raise explain_failure(entry.resource.name, position, item, exc) from None
            append(line)
            position += 1
        return lines

    def _write_other(self, entry: ExtractJob, static_table: str | None, position: int, item: object) -> None:
        row = _as_row(entry.resource.name, position, item)
        files = self._files_for(static_table or self._run_of(entry).table_of(row), entry)
        self._write_row(files, entry.resource.name, position, row)

    def _write_marked(self, entry: ExtractJob, position: int, marked: MarkedItem) -> None:
        """A marked item (a row, a list of rows, a table) to its table, as dlt dispatches it:
        to the table the mark names, unless the resource computes a table name per item
        (dlt then ignores the mark's name); hints a mark brings apply from this item on."""
        if marked.file_import is None and is_deferred(marked.data):
            # The mark goes with the result, and its hints apply when the result is written.
            self._defer(entry, marked.data, marked)
            return
        run = self._run_of(entry)
        table = marked.table_name
        if marked.hints:
            run.apply(marked)
            if marked.create_table_variant:
                table = str(marked.hints["table_name"])
        if run.static_table is None:
            table = None
        if marked.file_import is not None:
            self._import_file(entry, marked)
            return
        data = marked.data
        for item in data if isinstance(data, list) or type(data) is tuple else (data,):
            if item is None:
                continue
            row = _as_row(entry.resource.name, position, item)
            files = self._files_for(table or run.table_of(row), entry)
            self._write_row(files, entry.resource.name, position, row)

    def _import_file(self, entry: ExtractJob, marked: MarkedItem) -> None:
        """Stage the file ``marked`` points at (``sl.mark.with_file_import``) as the rows of
        the resource's table, as it is."""
        assert marked.file_import is not None
        source = marked.file_import.path
        table = self._run_of(entry).static_table
        if table is None:
            raise ExtractError(
                entry.resource.name,
                f"the file {source} cannot be imported: the resource computes its table name "
                "from each item, and a file is not an item; give it a table name",
            )
        try:
            self._files_for(table, entry).import_file(source, marked.file_import.file_format)
        except ImportedFileError as exc:
            raise ExtractError(entry.resource.name, f"sl.mark.with_file_import: {exc}") from exc
        self._report_rows()

    # -- deferred items (sl.defer) ------------------------------------------------------------
    def _defer(self, entry: ExtractJob, call: Callable[[], object], mark: MarkedItem | None) -> None:
        """Submit ``call`` to the pool and write whatever has finished meanwhile; at most
        ``MAX_IN_FLIGHT`` of a resource's calls wait at once."""
        pending = self._deferred_of(entry)
        if pending.full:
            self._write_result(entry, *pending.oldest())
        pending.submit(call, mark)
        for result, tag in pending.ready():
            self._write_result(entry, result, tag)

    def _write_deferred(self, entry: ExtractJob) -> None:
        """Wait for ``entry``'s deferred items still running and write their results."""
        pending = self._deferred.get(id(entry))
        while pending:
            self._write_result(entry, *pending.oldest())
            self._check_not_cancelled()

    def _write_result(self, entry: ExtractJob, result: object, mark: MarkedItem | None) -> None:
        """A deferred call's result as items of the resource (None: nothing, as in dlt)."""
        if result is None:
            return
        if entry.children:
            # as pages, which its transformers get too, as in dlt
            self._write_pages(entry, result_pages(result, entry.resource.finish_deferred, mark))
            return
        items = entry.resource.finish_deferred(iterate_any(result))
        self._write_items(entry, items if mark is None else _marked_as(mark, items))

    def _deferred_of(self, entry: ExtractJob) -> DeferredItems:
        pending = self._deferred.get(id(entry))
        if pending is None:
            pending = self._deferred[id(entry)] = DeferredItems(self._pool)
        return pending

    def _pool(self) -> ThreadPoolExecutor:
        with self._deferred_lock:
            if self._deferred_pool is None:
                self._deferred_pool = ThreadPoolExecutor(
                    DEFERRED_WORKERS, thread_name_prefix="sparkload-deferred"
                )
            return self._deferred_pool

    def _write_row(self, files: TableFiles, resource: str, position: int, row: object) -> None:
        """A row made by ``_as_row`` (a dict, or an Arrow table or pandas frame) to ``files``."""
        if type(row) is dict:
            self._write_dict(files, resource, position, row)
            return
        if is_spark_dataframe(row):
            self._write_spark(files, resource, row)
            return
        try:
            table = to_arrow(row)
        except Exception as exc:
            raise ExtractError(
                resource, f"item {position} cannot be converted to Arrow: {exc}", position=position
            ) from exc
        files.write_arrow(table)
        self._report_rows()  # a table or frame is many rows at once

    def _write_spark(self, files: TableFiles, resource: str, frame: DataFrame) -> None:
        """A Spark DataFrame, staged by the engine (its rows never come to this process)."""
        if self._spark is None:
            raise ExtractError(resource, "a Spark DataFrame item needs a pipeline's engine to be written")
        check_session(resource, frame, self._spark())
        try:
            files.write_spark(frame.select(*staged_columns(resource, frame.schema)))
        except (SparkloadError, _Cancelled):
            raise
        except Exception as exc:
            unreadable = frame_files.unreadable_file(frame)
            if unreadable is None:
                raise
            raise UnreadableFileError(resource, unreadable.file, unreadable.kind, unreadable.error) from exc
        self._report_rows()

    # -- progress ---------------------------------------------------------------------------
    def _expect_rows(self, rows: int | None) -> None:
        """A resource started whose data holds ``rows`` (None: not known up front)."""
        if self._expected_rows is None:
            return
        self._expected_rows = None if rows is None else self._expected_rows + rows
        if self._progress is not None:
            self._progress.total(self._expected_rows)

    def _report_rows(self) -> None:
        """Tell the display how many rows are written so far: the staged files' own counts,
        so Arrow tables, frames and imported files count by their rows. Called once per
        batch of rows or per table, never per row."""
        if self._progress is not None:
            self._progress.items(sum(files.rows for files in list(self._files.values())))

    def _run_of(self, entry: ExtractJob) -> _ResourceRun:
        run = self._runs.get(id(entry))
        if run is None:
            run = self._runs[id(entry)] = _ResourceRun(entry.resource.name, entry.resource.hints)
        return run

    def _files_for(self, table: str, entry: ExtractJob) -> TableFiles:
        routes = self._run_of(entry).routes
        files = routes.get(table)
        if files is not None:
            return files
        with self._files_lock:
            files = routes[table] = self._new_files_for(table, entry)
            return files

    def _new_files_for(self, table: str, entry: ExtractJob) -> TableFiles:
        name = normalize_table_name(table)
        if name.startswith(RESERVED_TABLE_PREFIX):
            raise ExtractError(
                entry.resource.name,
                f"table name {table!r} ({name!r}) starts with {RESERVED_TABLE_PREFIX!r}, which "
                "sparkload keeps for its own tables (the pipeline state); choose another table_name",
            )
        extracted = self.tables.get(name)
        # A table takes the hints of the resource that fills it first; that resource's marks
        # may change them (the table is routed here again after each change).
        if extracted is None or extracted.resource == entry.resource.name:
            table_hints = self._run_of(entry).hints_of(name)
            nesting = entry.max_table_nesting
            hints = load_hints(table_hints, entry.root_key, nesting, entry.schema_contract)
            if extracted is None:
                self.tables[name] = ExtractedTable(name, entry.resource.name, hints)
            else:
                extracted.hints = hints
        files = self._files.get(name)
        if files is None:
            listener = None
            if self._on_file_closed is not None:
                notify = self._on_file_closed
                listener = lambda path, name=name: notify(name, path)  # noqa: E731
            files = TableFiles(self.extracted_dir / name, listener, self._engine_files)
            self._files[name] = files
        return files


@contextlib.contextmanager
def _named_failures(resource: str) -> Iterator[None]:
    """A failure inside as an ``ExtractError`` naming ``resource`` (sparkload's own errors
    already say what and where: config, hints, bad items)."""
    try:
        yield
    except (SparkloadError, _Cancelled):
        raise
    except Exception as exc:
        raise ExtractError(resource, f"{type(exc).__name__}: {exc}") from exc


def _as_row(resource: str, position: int, item: object) -> object:
    """A yielded item other than None as what a table takes: a dict, or an Arrow table,
    pandas frame (converted when written) or Spark DataFrame (written by the engine)."""
    if isinstance(item, dict):
        return dict(item) if type(item) is not dict else item  # a dict subclass (OrderedDict, ...)
    if is_arrow(item) or is_pandas(item) or is_spark_dataframe(item):
        return item
    if isinstance(item, SCALAR_ITEMS) or type(item).__module__ == "numpy":
        # dlt loads a value that is not a dict as a row with one column, "value" (a list or
        # tuple as a nested table of its items).
        return {SCALAR_COLUMN: item}
    raise UnsupportedItemError(
        resource,
        f"item {position} is a {type(item).__name__}; a resource must yield "
        "dicts, values (numbers, strings, dates, lists ...), Arrow tables, pandas "
        "DataFrames or Spark DataFrames",
        position=position,
    )


def _marked_as(mark: MarkedItem, items: Iterator[object]) -> Iterator[object]:
    """``items`` each with ``mark`` (those marked themselves keep their own)."""
    try:
        for item in items:
            yield item if isinstance(item, MarkedItem) else mark.with_data(item)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
