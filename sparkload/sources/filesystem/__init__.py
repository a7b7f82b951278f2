"""Files in a folder or a bucket, as ``dlt.sources.filesystem``::

    from sparkload.sources.filesystem import filesystem, read_csv, readers

    files = filesystem(bucket_url="data/orders", file_glob="**/*.csv")
    files.apply_hints(incremental=sl.sources.incremental("modification_date"))
    pipeline.run((files | read_csv()).with_name("orders"))

    pipeline.run(readers("data/events", file_glob="*.jsonl").read_jsonl())

``filesystem`` lists files (dlt's file items: ``file_url``, ``file_name``, ``relative_path``,
``mime_type``, ``modification_date``, ``size_in_bytes``) as ``FileItemDict``s, which open
and read the file they name (``item.open()``, ``read_bytes()``, ``read_text()``); the
readers read them through the engine's own readers, so the rows never pass through Python.
See docs/filesystem.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sparkload.common.origin import location_origin, mark_origin
from sparkload.extract.decorators import resource, source
from sparkload.extract.incremental import Incremental
from sparkload.extract.resource import Resource
from sparkload.sources.filesystem.items import FileItemDict
from sparkload.sources.filesystem.listing import FileItem, in_row_order, list_files
from sparkload.sources.filesystem.readers import read_csv, read_jsonl, read_parquet

__all__ = ["FileItem", "FileItemDict", "filesystem", "read_csv", "read_jsonl", "read_parquet", "readers"]


def filesystem(
    bucket_url: str,
    credentials: object = None,
    file_glob: str = "*",
    files_per_page: int = 100,
    extract_content: bool = False,
    incremental: Incremental[Any] | None = None,
) -> Resource:
    """The files under ``bucket_url`` matching ``file_glob`` (``*``: the folder's own files;
    ``**/*.csv``: at any depth), ``files_per_page`` to a page, as dlt's ``filesystem``
    resource. ``file_url`` is the primary key. With an incremental whose ``row_order`` is
    set the files come sorted by its cursor, as dlt sorts them. ``credentials`` are not
    taken: the listing uses pyarrow's filesystem credentials (the environment's AWS, GCP or
    Azure settings) and the readers the engine's (``spark.hadoop.*``), see
    docs/filesystem.md."""
    if credentials is not None:
        raise TypeError(
            "filesystem(): sparkload does not take credentials=: the listing uses the environment's "
            "cloud credentials and the readers the Spark session's (docs/filesystem.md)"
        )
    if files_per_page < 1:
        raise ValueError(f"filesystem(): files_per_page must be at least 1, got {files_per_page}")

    # The incremental is the function's argument (so one set by apply_hints reaches it too):
    # the listing is ordered by its cursor where it declares a row order.
    def pages(incremental: Incremental[Any] | None = incremental) -> Iterator[list[FileItemDict]]:
        files: Iterable[FileItem] = list_files(bucket_url, file_glob, extract_content)
        if incremental is not None and incremental.row_order:
            files = in_row_order(files, incremental)
        page: list[FileItemDict] = []
        for item in files:
            page.append(FileItemDict(item))
            if len(page) == files_per_page:
                yield page
                page = []
        if page:
            yield page

    made: Resource = resource(pages, name="filesystem", primary_key="file_url")
    mark_origin(made, location_origin(bucket_url))
    return made


@source(name="filesystem")
def readers(
    bucket_url: str,
    credentials: object = None,
    file_glob: str = "*",
    incremental: Incremental[Any] | None = None,
) -> tuple[Resource, ...]:
    """dlt's ``readers`` source: ``read_csv``, ``read_jsonl`` and ``read_parquet`` over the
    files ``filesystem(bucket_url, file_glob=...)`` lists; pick one as
    ``readers(...).read_csv()`` (keyword arguments are the reader's options)."""
    files = filesystem(bucket_url, credentials, file_glob=file_glob, incremental=incremental)
    return (
        (files | read_csv).with_name("read_csv"),
        (files | read_jsonl).with_name("read_jsonl"),
        (files | read_parquet).with_name("read_parquet"),
    )
