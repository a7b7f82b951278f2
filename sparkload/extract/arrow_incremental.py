"""The incremental filter for Arrow tables, record batches and pandas frames: vectorized.

The range test, the out-of-range flags and the new last value are Arrow compute kernels
over the cursor column; only rows sitting exactly on the start or on the new last value
(the boundary, usually a handful) are looked at one by one, to deduplicate them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkload.exceptions import IncrementalCursorError
from sparkload.extract.items import is_pandas

if TYPE_CHECKING:
    from sparkload.extract.incremental import Incremental


def is_table(item: Any) -> bool:
    return isinstance(item, (pa.Table, pa.RecordBatch)) or is_pandas(item)


def filter_table(incremental: Incremental[Any], item: Any) -> Any:
    from sparkload.extract.incremental import _comparable

    table = pa.Table.from_pandas(item, preserve_index=False) if is_pandas(item) else item
    name = incremental.cursor_path or ""
    func = incremental.last_value_func
    resource = incremental.resource_name
    if func not in (max, min):
        raise IncrementalCursorError(resource, name, "Arrow and pandas items need last_value_func max or min")
    if name not in table.schema.names:
        if incremental.on_cursor_value_missing == "raise":
            raise IncrementalCursorError(resource, name, f"the items have no cursor column '{name}'")
        return item if incremental.on_cursor_value_missing == "include" else None
    cursor = table.column(name)
    present = pc.is_valid(cursor)
    if incremental.on_cursor_value_missing == "raise" and cursor.null_count:
        raise IncrementalCursorError(
            resource, name, f"{cursor.null_count} row(s) have no value in cursor column '{name}'"
        )
    if not len(cursor) or not pc.any(present).as_py():
        keep_missing = incremental.on_cursor_value_missing == "include"
        return item if keep_missing else None
    sample = pc.min(cursor).as_py()
    # ``ahead``/``behind`` order values the way last_value_func does (min reverses them).
    ahead, behind = (pc.greater, pc.less) if func is max else (pc.less, pc.greater)

    def scalar(bound: Any) -> pa.Scalar:
        try:
            return pa.scalar(_comparable(bound, sample), type=cursor.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise IncrementalCursorError(
                resource,
                name,
                f"{bound!r} cannot be compared with cursor column '{name}' ({cursor.type})",
                value=bound,
            ) from exc

    keep = present
    if incremental.end_value is not None:
        end = scalar(incremental.end_value)
        past_end = (
            pc.or_(ahead(cursor, end), pc.equal(cursor, end))
            if incremental.range_end == "open"
            else ahead(cursor, end)
        )
        past_end = pc.fill_null(past_end, False)
        if pc.any(past_end).as_py():
            incremental.end_out_of_range = True
        keep = pc.and_(keep, pc.invert(past_end))
    start = scalar(incremental.start_value) if incremental.start_value is not None else None
    if start is not None:
        before = behind(cursor, start)
        if incremental.range_start == "open":
            before = pc.or_(before, pc.equal(cursor, start))
        before = pc.fill_null(before, False)
        if pc.any(before).as_py():
            incremental.start_out_of_range = True
        keep = pc.and_(keep, pc.invert(before))
        on_start = pc.fill_null(pc.and_(keep, pc.equal(cursor, start)), False)
        if incremental._dedup_key != () and incremental._start_hashes and pc.any(on_start).as_py():
            keep = pc.and_(keep, pc.invert(_seen_before(incremental, table, on_start)))
    if incremental.on_cursor_value_missing == "include":
        keep = pc.or_(pc.fill_null(keep, False), pc.invert(present))
    keep = pc.fill_null(keep, False)
    kept = table.filter(keep)
    _advance(incremental, kept.column(name), kept, scalar)
    if not kept.num_rows:
        return None
    return kept.to_pandas() if is_pandas(item) else kept


def _seen_before(incremental: Incremental[Any], table: Any, on_start: Any) -> pa.Array:
    """True for the boundary rows whose hash the previous run stored."""
    indices = pc.indices_nonzero(on_start).to_pylist()
    rows = table.take(pa.array(indices)).to_pylist()
    seen = [incremental._hash(row) in incremental._start_hashes for row in rows]
    mask = [False] * len(table)
    for index, flag in zip(indices, seen, strict=True):
        mask[index] = flag
    return pa.array(mask)


def _advance(incremental: Incremental[Any], cursor: Any, kept: Any, scalar: Any) -> None:
    """Move last_value to the newest kept cursor value; remember the rows sitting on it."""
    if not kept.num_rows or not cursor.null_count < len(cursor):
        return
    func = incremental.last_value_func
    newest = (pc.max(cursor) if func is max else pc.min(cursor)).as_py()
    last = incremental.last_value
    if last is None or func((newest, scalar(last).as_py())) != scalar(last).as_py():
        incremental.last_value = newest
        incremental._rows_at_last = []
    elif scalar(last).as_py() != newest:
        return
    if incremental._dedup_key != ():
        on_last = pc.fill_null(pc.equal(cursor, pa.scalar(newest, type=cursor.type)), False)
        incremental._rows_at_last += kept.filter(on_last).to_pylist()
