"""Readers of listed files through the engine's own CSV, JSON and Parquet readers.

Each reader is a transformer: a page of file items in, one Spark DataFrame over those files
out. The rows never pass through Python; the DataFrame is staged into the load package by
the engine, like any DataFrame a resource yields. Spark's reader options pass through
(``read_csv(sep=";", header=False)``).

Columns are matched by name, as dlt's readers (one file at a time) match them: an engine
reading many CSV files at once takes the first file's header for all of them, so files are
read together only where they share a header line and a compression, and those groups are
unioned by column name (a column a file lacks is NULL there).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common import context
from sparkload.common.sql import quote
from sparkload.exceptions import ResourceError, SparkloadError, UnreadableFileError
from sparkload.extract import frame_files
from sparkload.extract.decorators import transformer
from sparkload.sources.filesystem.contents import Inspected, copy_name, inspect, needs_transcoding, transcode
from sparkload.sources.filesystem.listing import FileItem
from sparkload.sources.filesystem.paths import engine_paths

# What dlt's pandas-based CSV reader gives by default: a header row and typed columns.
_CSV_DEFAULTS = {"header": "true", "inferSchema": "true"}
# Parquet files of a page may hold different columns: all of them, by name.
_PARQUET_DEFAULTS = {"mergeSchema": "true"}
_ENCODING_OPTIONS = ("encoding", "charset")


def _spark() -> SparkSession:
    """The running pipeline's SparkSession: files are read by the engine that loads them."""
    return context.active_pipeline().spark


def _urls(items: Iterable[FileItem] | FileItem) -> list[str]:
    page = [items] if isinstance(items, Mapping) else list(items)
    for item in page:
        if not isinstance(item, Mapping) or "file_url" not in item:
            raise ResourceError(f"a file reader takes file items (dicts with 'file_url'), got {item!r}")
    return [str(item["file_url"]) for item in page]


def _options(options: Mapping[str, object]) -> dict[str, str]:
    """Spark's reader options as strings (``True`` is ``"true"``, as Spark spells it)."""
    return {
        key: str(value).lower() if isinstance(value, bool) else str(value) for key, value in options.items()
    }


def _read_page(
    kind: str,
    items: Iterable[FileItem] | FileItem,
    options: Mapping[str, object],
    file_name_column: str | None,
) -> Iterator[DataFrame]:
    """The one DataFrame over a page of files (nothing for an empty page). Files in an
    encoding the engines do not read are read from UTF-8 copies (see ``_copies_folder``)."""
    urls = _urls(items)
    if not urls:
        return
    spark_options = _options(options)
    encoding = next((spark_options.pop(k) for k in _ENCODING_OPTIONS if k in spark_options), None)
    labels: dict[str, str] = {}
    if kind != "parquet" and needs_transcoding(encoding):
        folder = tempfile.mkdtemp(dir=_copies_folder())
        copies = []
        for index, url in enumerate(urls):
            copy = copy_name(folder, index, url)
            transcode(url, str(encoding), copy)
            copies.append("file://" + os.path.abspath(copy))
        labels = dict(zip(copies, urls, strict=True))  # a row's file is the listed one, not its copy
        urls = copies
    elif encoding is not None:
        spark_options["encoding"] = encoding
    find_unreadable = functools.partial(_first_unreadable, kind, urls, spark_options, labels)
    try:
        frame = _read(kind, _inspected(kind, urls, spark_options), spark_options, file_name_column, labels)
    except SparkloadError:
        raise  # a file named already (a damaged compressed stream, found while inspecting it)
    except Exception as exc:
        unreadable = find_unreadable()
        if unreadable is None:
            raise
        resource = context.resource_name() or f"read_{kind}"
        raise UnreadableFileError(resource, unreadable.file, kind, unreadable.error) from exc
    # The engine reads the files when the frame is staged: a failure then names its file too.
    frame_files.remember(frame, find_unreadable)
    yield frame


def _first_unreadable(
    kind: str, urls: list[str], options: Mapping[str, str], labels: Mapping[str, str]
) -> frame_files.UnreadableFile | None:
    """The first of ``urls`` the engine fails to read on its own (asked only after a read
    of them all failed, so it costs nothing while files are sound)."""
    spark = _spark()
    reader = spark.read.format(kind).options(**options)
    for url in urls:
        try:
            # Every row and column read and dropped: a count may answer from the footers.
            reader.load(engine_paths(spark, [url])).write.format("noop").mode("overwrite").save()
        except Exception as exc:
            return frame_files.UnreadableFile(labels.get(url, url), kind, _first_line(exc))
    return None


def _first_line(error: BaseException) -> str:
    """An engine's message without the stack trace a JVM engine appends to it."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


@functools.cache
def _copies_folder() -> str:
    """Where this process keeps UTF-8 copies, removed when it ends: a DataFrame reads its
    files when the extractor stages it, which may be after the reader has moved on."""
    folder = tempfile.mkdtemp(prefix="sparkload-utf8-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _inspected(kind: str, urls: list[str], options: Mapping[str, str]) -> list[Inspected]:
    """What grouping needs of each file: a CSV file's header line (when it has one)."""
    header = kind == "csv" and options.get("header", "false").lower() == "true"
    return [inspect(url, first_line=header) for url in urls]


def _read(
    kind: str,
    files: list[Inspected],
    options: Mapping[str, str],
    file_name_column: str | None,
    labels: Mapping[str, str],
) -> DataFrame:
    """One DataFrame over ``files``: one engine read per group of files sharing a
    compression and a header line, the groups unioned by column name. With a file name
    column each file is read on its own and marked with its URL (the embedded engine has
    no ``input_file_name()``)."""
    spark = _spark()
    reader = spark.read.format(kind).options(**options)
    groups: dict[tuple[str, bytes | None, bool], list[str]] = {}
    for file in files:
        groups.setdefault((file.compression, file.first_line, file.header_only), []).append(file.file_url)
    reads: list[tuple[DataFrame, bool]] = []
    for (_, _, header_only), urls in groups.items():
        if file_name_column is None:
            reads.append((reader.load(engine_paths(spark, urls)), header_only))
            continue
        for url in urls:
            frame = reader.load(engine_paths(spark, [url]))
            reads.append((frame.withColumn(file_name_column, F.lit(labels.get(url, url))), header_only))
    return _union_by_name(reads)


def _union_by_name(frames: list[tuple[DataFrame, bool]]) -> DataFrame:
    """The rows of ``frames`` (each with whether it is of header-only files), columns matched
    by name.

    A column takes the type the frames holding values read it as: a frame lacking it
    (``allowMissingColumns`` would make it NULL-typed), of header-only files (read as NULL
    or text, by engine) or reading it NULL-typed has NULLs of that type; a column no frame
    has a value for is text, as pandas reads it for dlt. Where frames read a column as
    different types, numbers are left to the union to widen, and any other mix is read as
    text (what one read of all the files infers), so that no engine casts a value away."""
    read_as: dict[str, list[T.DataType]] = {}
    for frame, header_only in frames:
        for field in frame.schema.fields:
            typed = read_as.setdefault(field.name, [])
            if not header_only and not isinstance(field.dataType, T.NullType):
                typed.append(field.dataType)
    targets = {name: _common_type(typed) for name, typed in read_as.items()}

    def completed(frame: DataFrame, header_only: bool) -> DataFrame:
        has = {field.name: None if header_only else field.dataType for field in frame.schema.fields}
        columns = [_as_target(name, has.get(name), target) for name, target in targets.items()]
        if list(has) == list(targets) and all(isinstance(c, str) for c in columns):
            return frame
        return frame.select(*[F.col(quote(c)) if isinstance(c, str) else c for c in columns])

    return functools.reduce(lambda a, b: a.unionByName(b), [completed(*read) for read in frames])


def _common_type(typed: list[T.DataType]) -> T.DataType | None:
    """The type every frame reads a column as; None for numbers of several types (the
    union widens them)."""
    if not typed:
        return T.StringType()
    if all(t == typed[0] for t in typed):
        return typed[0]
    if all(isinstance(t, T.NumericType) for t in typed):
        return None
    return T.StringType()


def _as_target(name: str, dtype: T.DataType | None, target: T.DataType | None) -> Column | str:
    """The column ``name`` of a frame that reads it as ``dtype`` (None: lacks it, or has no
    rows) as ``target``; its name alone where it is taken as it is."""
    if dtype is None or isinstance(dtype, T.NullType):
        return F.lit(None).cast(target or T.LongType()).alias(name)
    if target is None or dtype == target:
        return name
    return F.col(quote(name)).cast(target).alias(name)


@transformer(name="read_csv")
def read_csv(
    items: Iterable[FileItem] | FileItem, file_name_column: str | None = None, **options: object
) -> Iterator[DataFrame]:
    """The rows of a page of CSV files (a header row and typed columns unless the options
    say otherwise: ``header=False``, ``inferSchema=False``, ``sep=";"``, ``encoding="utf-16"``, …)."""
    yield from _read_page("csv", items, {**_CSV_DEFAULTS, **options}, file_name_column)


@transformer(name="read_jsonl")
def read_jsonl(
    items: Iterable[FileItem] | FileItem, file_name_column: str | None = None, **options: object
) -> Iterator[DataFrame]:
    """The rows of a page of JSON Lines files (one JSON object a line)."""
    yield from _read_page("json", items, options, file_name_column)


@transformer(name="read_parquet")
def read_parquet(
    items: Iterable[FileItem] | FileItem, file_name_column: str | None = None, **options: object
) -> Iterator[DataFrame]:
    """The rows of a page of Parquet files (their columns merged by name)."""
    yield from _read_page("parquet", items, {**_PARQUET_DEFAULTS, **options}, file_name_column)
