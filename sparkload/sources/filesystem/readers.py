"""Readers of listed files through the engine's own CSV, JSON and Parquet readers.

Each reader is a transformer: a page of file items in, one Spark DataFrame over those files
out. The rows never pass through Python; the DataFrame is staged into the load package by
the engine, like any DataFrame a resource yields. Spark's reader options pass through
(``read_csv(sep=";", header=False)``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pyspark.sql import functions as F

from sparkload.common import context
from sparkload.exceptions import ResourceError
from sparkload.extract.decorators import transformer
from sparkload.sources.filesystem.listing import FileItem

# What dlt's pandas-based CSV reader gives by default: a header row and typed columns.
_CSV_DEFAULTS = {"header": "true", "inferSchema": "true"}


def _spark() -> Any:
    """The running pipeline's SparkSession: files are read by the engine that loads them."""
    return context.active_pipeline().spark


def _urls(items: Iterable[FileItem] | FileItem) -> list[str]:
    page = [items] if isinstance(items, Mapping) else list(items)
    for item in page:
        if not isinstance(item, Mapping) or "file_url" not in item:
            raise ResourceError(f"a file reader takes file items (dicts with 'file_url'), got {item!r}")
    return [str(item["file_url"]) for item in page]


def _options(options: Mapping[str, Any]) -> dict[str, str]:
    """Spark's reader options as strings (``True`` is ``"true"``, as Spark spells it)."""
    return {
        key: str(value).lower() if isinstance(value, bool) else str(value) for key, value in options.items()
    }


def _read(kind: str, urls: list[str], options: Mapping[str, Any], file_name_column: str | None) -> Any:
    """One DataFrame over the files ``urls``, read by the engine's ``kind`` reader. With a
    file name column each file is read on its own and marked with its URL (the embedded
    engine has no ``input_file_name()``), the frames unioned by column name."""
    reader = _spark().read.format(kind).options(**_options(options))
    if file_name_column is None:
        return reader.load(urls)
    frames = [reader.load([url]).withColumn(file_name_column, F.lit(url)) for url in urls]
    return functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


@transformer(name="read_csv")
def read_csv(items: Any, file_name_column: str | None = None, **options: Any) -> Iterator[Any]:
    """The rows of a page of CSV files (a header row and typed columns unless the options
    say otherwise: ``header=False``, ``inferSchema=False``, ``sep=";"``, …)."""
    urls = _urls(items)
    if urls:
        yield _read("csv", urls, {**_CSV_DEFAULTS, **options}, file_name_column)


@transformer(name="read_jsonl")
def read_jsonl(items: Any, file_name_column: str | None = None, **options: Any) -> Iterator[Any]:
    """The rows of a page of JSON Lines files (one JSON object a line)."""
    urls = _urls(items)
    if urls:
        yield _read("json", urls, options, file_name_column)


@transformer(name="read_parquet")
def read_parquet(items: Any, file_name_column: str | None = None, **options: Any) -> Iterator[Any]:
    """The rows of a page of Parquet files."""
    urls = _urls(items)
    if urls:
        yield _read("parquet", urls, options, file_name_column)
