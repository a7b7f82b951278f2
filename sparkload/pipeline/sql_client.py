"""``pipeline.sql_client()``: dlt's SQL client over the dataset, in the engine's SQL.

A query names the dataset's tables as ``pipeline.dataset().tables`` lists them and reads
their committed Delta tables (``dataset_reader``). What the Spark DataFrame API maps to is
given: ``execute_sql`` returns the rows, ``execute_query`` is a context manager yielding a
cursor (a ``Relation``: ``fetchall``, ``fetchmany``, ``fetchone``, ``df``, ``arrow``).
It runs queries, as ``pipeline.dataset()`` does (the embedded engine refuses any other
statement there): the tables change only through loads, which commit the state with them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from sparkload.exceptions import SparkloadError
from sparkload.pipeline.dataset_reader import ReadableDataset, Relation


class SqlClient:
    """dlt's ``SqlClientBase`` as far as reading the dataset goes; also a context manager,
    as ``with pipeline.sql_client() as client:`` opens it in dlt."""

    def __init__(self, dataset: ReadableDataset) -> None:
        self._dataset = dataset

    def __enter__(self) -> SqlClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def execute_sql(self, sql: str, *args: object, **kwargs: object) -> list[tuple[Any, ...]]:
        """The rows ``sql`` returns, as tuples."""
        return self._relation(sql, args, kwargs).fetchall()

    @contextlib.contextmanager
    def execute_query(self, query: str, *args: object, **kwargs: object) -> Iterator[Relation]:
        """A cursor over the rows ``query`` returns."""
        yield self._relation(query, args, kwargs)

    def _relation(self, sql: str, args: tuple[object, ...], kwargs: dict[str, object]) -> Relation:
        if args or kwargs:
            # dlt passes them to its driver; pasting them into the text would be SQL injection
            raise SparkloadError(
                "sql_client() takes no query parameters: the engine's SQL has none that the "
                "dataset's tables can be read with; filter with pipeline.dataset() relations"
            )
        return self._dataset.query(sql)
