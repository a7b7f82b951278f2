"""What a resource may yield, and how a yielded value splits into data items."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import AsyncGenerator, Iterable, Iterator
from typing import TYPE_CHECKING, TypeGuard

from typing_extensions import Never

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame


def is_arrow(item: object) -> TypeGuard[pa.Table | pa.RecordBatch]:
    # An Arrow item means pyarrow is imported already; a script that yields none never
    # imports it for this check.
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(item, (pa.Table, pa.RecordBatch))


def is_pandas(item: object) -> TypeGuard[pd.DataFrame]:
    # Checked by name so pandas is imported only by users who have it.
    cls = type(item)
    return cls.__name__ == "DataFrame" and cls.__module__.startswith("pandas")


def is_spark_dataframe(item: object) -> TypeGuard[DataFrame]:
    """A Spark DataFrame, Spark Connect's or a classic (JVM) one; checked by module so no
    PySpark module is imported for it."""
    cls = type(item)
    return cls.__name__ == "DataFrame" and cls.__module__.startswith("pyspark.sql")


def to_arrow(item: object) -> pa.Table:
    import pyarrow as pa

    if isinstance(item, pa.RecordBatch):
        table = pa.Table.from_batches([item])
    elif isinstance(item, pa.Table):
        table = item
    else:
        table = pa.Table.from_pandas(item, preserve_index=False)
    return _microsecond_timestamps(table)


def _microsecond_timestamps(table: pa.Table) -> pa.Table:
    import pyarrow as pa

    """Nanosecond timestamps (pandas' unit) as microseconds, Spark's finest unit.

    The cast is safe: a value with nanoseconds that microseconds cannot hold raises,
    naming the column, rather than being truncated."""
    for index, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            target = pa.timestamp("us", tz=field.type.tz)
            try:
                column = table.column(index).cast(target, safe=True)
            except pa.ArrowInvalid as exc:
                raise ValueError(
                    f"column '{field.name}' holds timestamps with nanoseconds, which Spark cannot "
                    f"store (its finest unit is the microsecond): {exc}"
                ) from exc
            table = table.set_column(index, pa.field(field.name, target, field.nullable), column)
    return table


def iterate_any(data: object) -> Iterator[object]:
    """An iterator over a generator, an async generator, an iterable or a single value.

    Returns the generator itself where it can, so no wrapper sits on the hot path and
    closing the iterator closes the user's generator.
    """
    if inspect.isasyncgen(data):
        return _drain_async(data)
    # A Spark DataFrame must not be iterated: its ``__getitem__`` makes ``iter()`` yield
    # columns for ever.
    if isinstance(data, (dict, str, bytes)) or is_arrow(data) or is_pandas(data) or is_spark_dataframe(data):
        return iter((data,))
    if isinstance(data, Iterable):
        return iter(data)
    return iter((data,))


def _drain_async(agen: AsyncGenerator[object, Never]) -> Iterator[object]:
    # Async resources run on a private event loop so a plain script needs no asyncio code.
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                yield loop.run_until_complete(agen.__anext__())
            except StopAsyncIteration:
                break
    finally:
        loop.run_until_complete(agen.aclose())
        loop.close()


def rows_known_up_front(data: object) -> int | None:
    """How many rows ``data`` (what a resource was given, or what its function returned)
    holds, when that is known without consuming it: a list or tuple (of items, or of pages
    of items), an Arrow table or a pandas frame. None for a generator or anything else,
    which is never iterated to count it.

    Lists and tuples are pages of items (``_split`` yields their items), so a list whose
    first element is a page, an Arrow table or a frame is summed page by page; any other
    list is one row per element, taken from its length without looking at each element.
    """
    if is_arrow(data) or is_pandas(data):
        return _rows_in(data)
    if not isinstance(data, (list, tuple)):
        return None
    if not data:
        return 0
    first = data[0]
    if isinstance(first, list) or type(first) is tuple or is_arrow(first) or is_pandas(first):
        return sum(_rows_in(page) for page in data)
    return len(data)


def _rows_in(page: object) -> int:
    if is_arrow(page):
        return int(page.num_rows)
    if is_pandas(page) or isinstance(page, list) or type(page) is tuple:
        return len(page)
    return 1
