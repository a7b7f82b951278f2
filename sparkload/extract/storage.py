"""Staged files of one load package: NDJSON for Python items, Parquet for Arrow and pandas.

Files rotate at a fixed size so a large resource never sits in memory and Spark can read
the parts in parallel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparkload.common.package import ARROW_DIR, JSON_DIR
from sparkload.common.tags import TAG_STRING, TAG_TIME

_FLUSH_BYTES = 4 * 1024 * 1024
# Small enough that the schema of a finished file is inferred while the next one is written.
_ROTATE_BYTES = 16 * 1024 * 1024


class TableFiles:
    """Writes the staged files of one table and counts the rows written.

    Parallelized resources filling one table write from several threads, so each write
    holds a lock (uncontended, it costs next to nothing: the hot loop writes in batches).
    """

    def __init__(self, table_dir: Path, on_file_closed: Callable[[Path], None] | None = None) -> None:
        self.table_dir = table_dir
        self._on_file_closed = on_file_closed
        self._lock = threading.Lock()
        self.rows = 0
        self._buffer = bytearray()
        self._json_file: BinaryIO | None = None
        self._json_written = 0
        self._json_parts = 0
        self._arrow_parts = 0

    def write_line(self, line: bytes) -> None:
        with self._lock:
            self._buffer += line
            self.rows += 1
            if len(self._buffer) >= _FLUSH_BYTES:
                self._flush()

    def write_lines(self, lines: list[bytes]) -> None:
        """Many lines at once: the extract hot loop batches rows to keep per-row work small."""
        with self._lock:
            self._buffer += b"".join(lines)
            self.rows += len(lines)
            if len(self._buffer) >= _FLUSH_BYTES:
                self._flush()

    def write_arrow(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        staged = stage_arrow(table)
        target = self.table_dir / ARROW_DIR
        with self._lock:
            target.mkdir(parents=True, exist_ok=True)
            part = self._arrow_parts
            self._arrow_parts += 1
            self.rows += table.num_rows
        pq.write_table(staged, target / f"part-{part:05d}.parquet")

    def close(self) -> None:
        with self._lock:
            self._flush()
            if self._json_file is not None:
                self._close_json()

    def _flush(self) -> None:
        if not self._buffer:
            return
        if self._json_file is None:
            target = self.table_dir / JSON_DIR
            target.mkdir(parents=True, exist_ok=True)
            self._json_path = target / f"part-{self._json_parts:05d}.jsonl"
            self._json_file = open(self._json_path, "wb")  # noqa: SIM115
            self._json_parts += 1
        self._json_file.write(self._buffer)
        self._json_written += len(self._buffer)
        self._buffer = bytearray()
        if self._json_written >= _ROTATE_BYTES:
            self._close_json()

    def _close_json(self) -> None:
        # No fsync: staged files need to survive a killed process (the page cache does
        # that), and the package manifest written after them decides what counts.
        assert self._json_file is not None
        self._json_file.close()
        self._json_file = None
        self._json_written = 0
        if self._on_file_closed is not None:
            self._on_file_closed(self._json_path)


def stage_arrow(table: pa.Table) -> pa.Table:
    """Arrow columns as normalization expects them, computed column-wise (no Python loop).

    Arrow already types its columns, so its strings are marked as plain text (no ISO
    timestamp detection, no misreading of a NUL-led string as a type tag), and times,
    which Spark cannot read, become tagged ISO text like times from Python objects.
    """
    return pa.Table.from_arrays([_stage_array(column) for column in table.columns], names=table.column_names)


def _stage_array(array: Any) -> Any:
    dtype = array.type
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return pc.binary_join_element_wise(TAG_STRING, array.cast(pa.string()), "")
    if pa.types.is_time(dtype):
        return pc.binary_join_element_wise(TAG_TIME, array.cast(pa.string()), "")
    if pa.types.is_struct(dtype):
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        children = [_stage_array(array.field(i)) for i in range(dtype.num_fields)]
        names = [dtype.field(i).name for i in range(dtype.num_fields)]
        return pa.StructArray.from_arrays(children, names=names, mask=array.is_null())
    return array
