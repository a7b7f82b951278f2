"""Item transformations for ``Resource.add_map``, as in ``dlt.sources.helpers.transform``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkload.extract.items import is_pandas

__all__ = ["add_row_hash_to_table"]


def add_row_hash_to_table(row_hash_column_name: str) -> Callable[[Any], Any]:
    """A map for ``resource.add_map`` that adds a hash of each row as ``row_hash_column_name``.

    Takes Arrow tables and record batches and pandas DataFrames and returns the same kind
    of item with an int64 column: equal rows get equal hashes in any process or load, and
    a changed value changes the hash. Columns are hashed in the order of their names, so
    column order does not matter; an existing column of that name is replaced, not hashed.
    A row's hash does not depend on the other rows of the item (see ``_row_hashes``); the
    hashing itself is pandas' (pandas must be installed).
    Use it for SCD2 with ``row_version_column_name``::

        resource.add_map(add_row_hash_to_table("row_hash"))
    """
    if not isinstance(row_hash_column_name, str) or not row_hash_column_name:
        raise ValueError("add_row_hash_to_table needs the name of the column to add, a non-empty string")

    def add_row_hash(item: Any) -> Any:
        if isinstance(item, pa.RecordBatch):
            return (
                _add_to_arrow(pa.Table.from_batches([item]), row_hash_column_name)
                .combine_chunks()
                .to_batches()[0]
            )
        if isinstance(item, pa.Table):
            return _add_to_arrow(item, row_hash_column_name)
        if is_pandas(item):
            data = item.drop(columns=[row_hash_column_name], errors="ignore")
            hashes = _row_hashes(pa.Table.from_pandas(data, preserve_index=False))
            return item.assign(**{row_hash_column_name: hashes})
        raise TypeError(
            "add_row_hash_to_table works on Arrow tables and record batches and on pandas "
            f"DataFrames, not on a {type(item).__name__}"
        )

    return add_row_hash


def _add_to_arrow(table: pa.Table, name: str) -> pa.Table:
    data = table.drop_columns([name]) if name in table.column_names else table
    hashes = pa.array(_row_hashes(data), pa.int64())
    if name in table.column_names:
        return table.set_column(table.column_names.index(name), name, hashes)
    return table.append_column(name, hashes)


def _row_hashes(table: pa.Table) -> Any:
    """One int64 hash per row: pandas' string hash of a canonical text of the row.

    pandas hashes a column by its dtype, and the dtype Arrow data gets depends on the
    whole batch (an int column with one NULL becomes float); hashing a text of each row
    instead keeps a row's hash independent of the other rows. Each value is written as
    ``<length>:<text>`` (NULL as ``-``) in the order of the column names.
    """
    try:
        import pandas
    except ImportError as exc:
        raise ImportError("add_row_hash_to_table hashes rows with pandas: pip install pandas") from exc
    parts = [_value_texts(table.column(name), name) for name in sorted(table.column_names)]
    if not parts:
        return [0] * table.num_rows
    rows = pc.binary_join_element_wise(*parts, _bytes(b"|"))
    return pandas.util.hash_array(rows.to_numpy(zero_copy_only=False)).view("int64")


def _value_texts(column: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        try:
            column = pc.cast(column, pa.large_string())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as exc:
            raise TypeError(
                f"add_row_hash_to_table cannot hash column '{name}' of type {column.type}; "
                "drop lists and structs from the rows or hash them yourself first"
            ) from exc
    data = pc.cast(column, pa.large_binary())
    length = pc.cast(pc.cast(pc.binary_length(data), pa.large_string()), pa.large_binary())
    return pc.fill_null(pc.binary_join_element_wise(length, data, _bytes(b":")), _bytes(b"-"))


def _bytes(value: bytes) -> pa.Scalar:
    return pa.scalar(value, pa.large_binary())
