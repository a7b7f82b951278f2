"""Staged files of one load package: NDJSON for Python items, Parquet for Arrow and pandas,
Parquet folders the engine writes for Spark DataFrames.

Files rotate at a fixed size so a large resource never sits in memory and Spark can read
the parts in parallel. Files a resource imports (``sl.mark.with_file_import``) are staged
beside them as they are.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from sparkload.common.engine_family import write_parquet
from sparkload.common.folder import Folder, filesystem, list_entries
from sparkload.common.package import ARROW_DIR, JSON_DIR, SPARK_DIR, SPARK_PART_PREFIX
from sparkload.common.tags import TAG_JSON, TAG_STRING, TAG_TIME
from sparkload.extract.items import to_arrow
from sparkload.extract.serialize import dumps_row, opens_like_json

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_FLUSH_BYTES = 4 * 1024 * 1024
# Staged Parquet is read whole, so its column statistics serve no reader; and the embedded
# engine (Sail 0.7.2) takes a double column whose statistics say min = max for a constant,
# reading [1.5, NaN] as [1.5, 1.5] (Parquet statistics leave NaN out).
STAGED_STATISTICS = False
# Small enough that the schema of a finished file is inferred while the next one is written.
_ROTATE_BYTES = 16 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class EngineFiles:
    """Where the engine reads the files of one package's extracted folder ``local``.

    An engine whose tasks read this machine's disk (the embedded one, a JVM on a ``local``
    master) reads them where extract writes them: ``remote`` is None and nothing is copied.
    A cluster's executors cannot read this machine's disk, so each finished file is copied
    to the same place under ``remote`` (a folder in the destination's bucket) and the engine
    is given that copy; the engine writes Spark DataFrame items there directly. The local
    files stay, for the work this process does on them (the check for cut lines, the split
    of conflicting values), and the manifests stay in the working folder.
    """

    local: Path
    remote: str | None = None

    def engine_path(self, path: Path) -> str:
        """Where the engine finds ``path`` (a file or folder under ``local``)."""
        if self.remote is None:
            return str(path)
        return f"{self.remote}/{path.relative_to(self.local).as_posix()}"

    def publish(self, path: Path) -> str:
        """Make the file or folder ``path`` readable by the engine; returns where it reads it."""
        target = self.engine_path(path)
        if self.remote is not None:
            fs, target_path = filesystem(target)
            if isinstance(fs, pafs.LocalFileSystem):
                # A bucket has no folders to make; a shared disk does.
                folder = target_path if path.is_dir() else target_path.rsplit("/", 1)[0]
                fs.create_dir(folder, recursive=True)
            pafs.copy_files(
                str(path), target_path, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs
            )
        return target

    def publish_all(self) -> None:
        """Copy every extracted file where the engine reads them, unless they are there: a
        package extracted by an engine that read this disk, normalized by one that cannot."""
        if self.remote is None or Folder(self.remote).exists() or not self.local.is_dir():
            return
        self.publish(self.local)


def parquet_rows(uri: str) -> int:
    """The rows of the Parquet files directly in the folder ``uri`` (local or in a bucket),
    from their footers: no engine job."""
    fs, path = filesystem(uri)
    rows = 0
    for info in list_entries(fs, path):
        if info.type == pafs.FileType.File and info.base_name.endswith(".parquet"):
            with fs.open_input_file(info.path) as handle:
                rows += pq.ParquetFile(handle).metadata.num_rows
    return rows


class TableFiles:
    """Writes the staged files of one table and counts the rows written.

    Parallelized resources filling one table write from several threads, so each write
    holds a lock (uncontended, it costs next to nothing: the hot loop writes in batches).
    """

    def __init__(
        self,
        table_dir: Path,
        on_file_closed: Callable[[Path], None] | None = None,
        engine: EngineFiles | None = None,
    ) -> None:
        self.table_dir = table_dir
        self._engine = engine or EngineFiles(table_dir)
        self._on_file_closed = on_file_closed
        self._lock = threading.Lock()
        self.rows = 0
        self._buffer = bytearray()
        self._json_file: BinaryIO | None = None
        self._json_written = 0
        self._json_parts = 0
        self._arrow_parts = 0
        self._spark_parts = 0
        self._json_imports = 0

    def write_line(self, line: bytes) -> None:
        with self._lock:
            self._buffer += line
            self.rows += 1
            if len(self._buffer) >= _FLUSH_BYTES:
                self._flush()

    def write_lines(self, lines: list[bytes]) -> None:
        """Many lines at once: the extract hot loop batches rows to keep per-row work small."""
        self.write_block(b"".join(lines), len(lines))

    def write_block(self, lines: bytes, rows: int) -> None:
        """``rows`` lines joined already (each ends with a newline)."""
        with self._lock:
            self._buffer += lines
            self.rows += rows
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
        path = target / f"part-{part:05d}.parquet"
        pq.write_table(staged, path, write_statistics=STAGED_STATISTICS)
        self._engine.publish(path)

    def write_spark(self, frame: DataFrame) -> None:
        """Have the engine write ``frame`` (a Spark DataFrame with staged columns) as one
        Parquet folder; no row passes through this process.

        The engine writes into a hidden temporary folder that is renamed into place once the
        write has finished, so a write cut short leaves no part that normalize would read
        (it reads only ``part-*`` folders)."""
        target = self.table_dir / SPARK_DIR
        with self._lock:
            target.mkdir(parents=True, exist_ok=True)
            part = self._spark_parts
            self._spark_parts += 1
        if self._engine.remote is not None:
            self._write_spark_remote(frame, target / f"{SPARK_PART_PREFIX}{part:05d}")
            return
        temporary = target / f".writing-{part:05d}-{uuid.uuid4().hex}"
        write_parquet(frame, str(temporary), "error")
        # The row count from the Parquet footers of the local folder: no engine job.
        rows = sum(
            pq.ParquetFile(path).metadata.num_rows for path in temporary.glob("*.parquet") if path.is_file()
        )
        if rows == 0:
            # As an empty Arrow table, an empty DataFrame stages nothing (an engine may have
            # written no folder at all for it: Sail does not).
            shutil.rmtree(temporary, ignore_errors=True)
            return
        os.rename(temporary, target / f"{SPARK_PART_PREFIX}{part:05d}")
        with self._lock:
            self.rows += rows

    def _write_spark_remote(self, frame: DataFrame, part: Path) -> None:
        """The engine writes ``frame`` straight where it reads it (its executors write to the
        bucket); the empty local folder ``part``, made once the write has finished, is what
        tells normalize the part is whole, as the rename does on local disk."""
        uri = self._engine.engine_path(part)
        # Overwrite: what an earlier, cut-short write of this part left is replaced.
        write_parquet(frame, uri, "overwrite")
        rows = parquet_rows(uri)
        if rows == 0:
            Folder(uri).delete()
            return
        part.mkdir()
        with self._lock:
            self.rows += rows

    def import_file(self, source: Path, file_format: str) -> int:
        """Stage the file ``source`` (``"jsonl"`` or ``"parquet"``) with this table's files;
        returns its row count. Raises ``ImportedFileError`` for a file that is missing or
        does not parse."""
        kind = JSON_DIR if file_format == "jsonl" else ARROW_DIR
        target = self.table_dir / kind
        with self._lock:
            target.mkdir(parents=True, exist_ok=True)
            if kind == JSON_DIR:
                # Its own name: the NDJSON part being written stays open meanwhile.
                path = target / f"import-{self._json_imports:05d}.jsonl"
                self._json_imports += 1
            else:
                path = target / f"part-{self._arrow_parts:05d}.parquet"
                self._arrow_parts += 1
        rows = stage_jsonl(source, path) if kind == JSON_DIR else stage_parquet(source, path)
        self._engine.publish(path)
        with self._lock:
            self.rows += rows
        if kind == JSON_DIR and self._on_file_closed is not None:
            # Its schema is inferred with the table's other NDJSON files.
            self._on_file_closed(path)
        return rows

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
        self._engine.publish(self._json_path)
        if self._on_file_closed is not None:
            self._on_file_closed(self._json_path)


# Arrow's canonical JSON extension type (``pa.json_()``, pyarrow 19 and later).
ARROW_JSON = "arrow.json"


def stage_arrow(table: pa.Table) -> pa.Table:
    """Arrow columns as normalization expects them, computed column-wise (no Python loop).

    Arrow already types its columns, so its strings are marked as plain text (no ISO
    timestamp detection, no misreading of a NUL-led string as a type tag), and times,
    which Spark cannot read, become tagged ISO text like times from Python objects. A
    column of Arrow's JSON type (the canonical extension ``arrow.json``) holds JSON text,
    tagged as such: it goes into a json column as it is, as a dict kept whole would.
    """
    return pa.Table.from_arrays([_stage_array(column) for column in table.columns], names=table.column_names)


def _stage_array(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    dtype = array.type
    if getattr(dtype, "extension_name", None) == ARROW_JSON:
        return pc.binary_join_element_wise(TAG_JSON, array.cast(pa.string()), "")
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


class ImportedFileError(Exception):
    """A file a resource imports is missing or does not parse; the message names it."""


_GZIP_MAGIC = b"\x1f\x8b"
# An escaped NUL in a JSON line: a string starting with NUL would read as a staged-value tag.
_ESCAPED_NUL = b"\\u0000"


def stage_jsonl(source: Path, target: Path) -> int:
    """Stage the NDJSON file ``source`` at ``target``; returns its row count.

    Each line is checked to be a JSON object (so a broken file is named now, before
    anything is loaded) and counted. A file that is already what extract would write (whole
    lines, no blank ones, no escaped NUL) is linked, else copied line by line; only a line
    holding an escaped NUL is written again, escaped as extract escapes it."""
    clean = True
    rows = 0
    with _open_import(source) as lines:
        if lines.read(2) == _GZIP_MAGIC:
            raise ImportedFileError(f"the file {source} is compressed (gzip); import it uncompressed")
        lines.seek(0)
        for number, line in enumerate(lines, 1):
            if not line.strip():
                clean = False
                continue
            _check_json_object(source, number, line)
            rows += 1
            if not line.endswith(b"\n") or _needs_escaping(line):
                clean = False
    if clean:
        _link_or_copy(source, target)
        return rows
    with open(source, "rb") as lines, open(target, "wb") as out:
        for line in lines:
            if not line.strip():
                continue
            if _needs_escaping(line):
                line = dumps_row(orjson.loads(line))
            out.write(line if line.endswith(b"\n") else line + b"\n")
    return rows


def _needs_escaping(line: bytes) -> bool:
    """Whether an imported line may hold a string extract escapes: one that begins with NUL
    (it would read as a tag), [ or { (it would read as a list's or dict's JSON text)."""
    return _ESCAPED_NUL in line or opens_like_json(line)


def stage_parquet(source: Path, target: Path) -> int:
    """Stage the Parquet file ``source`` at ``target``; returns its row count (from the
    file's footer).

    A file whose columns are as extract stages Arrow (no strings, times or nanosecond
    timestamps, which ``stage_arrow`` marks or converts) is linked; otherwise it is written
    again batch by batch, column-wise in Arrow, as extract stages an Arrow table."""
    try:
        with _open_import(source) as raw:
            parquet = pq.ParquetFile(raw)
            schema = parquet.schema_arrow
            rows = parquet.metadata.num_rows
            if not any(_needs_staging(field.type) for field in schema):
                _link_or_copy(source, target)
                return int(rows)
            writer: pq.ParquetWriter | None = None
            try:
                for batch in parquet.iter_batches():
                    staged = stage_arrow(to_arrow(batch))
                    if writer is None:
                        writer = pq.ParquetWriter(target, staged.schema, write_statistics=STAGED_STATISTICS)
                    writer.write_table(staged)
            finally:
                if writer is not None:
                    writer.close()
            return int(rows)
    except (pa.ArrowException, ValueError) as exc:
        raise ImportedFileError(f"the file {source} is not a Parquet file that can be read: {exc}") from exc


def _needs_staging(dtype: pa.DataType) -> bool:
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_time(dtype):
        return True
    if pa.types.is_timestamp(dtype):
        return bool(dtype.unit == "ns")
    if pa.types.is_struct(dtype):
        return any(_needs_staging(dtype.field(i).type) for i in range(dtype.num_fields))
    return False


def _open_import(source: Path) -> BinaryIO:
    try:
        return open(source, "rb")
    except FileNotFoundError:
        raise ImportedFileError(f"the file {source} does not exist") from None
    except OSError as exc:
        raise ImportedFileError(f"the file {source} cannot be read: {exc}") from exc


def _check_json_object(source: Path, number: int, line: bytes) -> None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ImportedFileError(f"line {number} of the file {source} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ImportedFileError(
            f"line {number} of the file {source} is a JSON {type(value).__name__}, not an object (a row)"
        )


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link where the file system allows one (no bytes copied), as dlt imports; the
    package never changes its files, so the source is left as it was."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
