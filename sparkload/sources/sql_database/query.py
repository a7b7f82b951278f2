"""The SELECT one table is read with: the incremental's range pushed into ``WHERE`` and
``ORDER BY`` as SQLAlchemy expressions (values are bound parameters, never SQL text), then
the user's ``query_adapter_callback``."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparkload.exceptions import ResourceError
from sparkload.extract.incremental import Incremental

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.sql.selectable import NamedFromClause

# dlt's three forms, told apart by their parameter count (``_call_adapter``); what it returns
# is checked in ``table_query``.
QueryAdapter = Callable[..., object]


def table_query(
    table: NamedFromClause,
    incremental: Incremental[Any] | None,
    query_adapter_callback: QueryAdapter | None,
    engine: sa.engine.Engine,
) -> sa.Select[Any] | sa.TextClause:
    """The table's select with the incremental's range, or what ``query_adapter_callback``
    returns instead: a select, or a textual query (``sa.text``) as dlt allows."""
    import sqlalchemy as sa  # an optional dependency, loaded with the source

    query: sa.Select[Any] = sa.select(table)
    if incremental is not None:
        query = _incremental_range(query, table, incremental)
    if query_adapter_callback is not None:
        adapted = _call_adapter(query_adapter_callback, query, table, incremental, engine)
        if adapted is not None:
            if not isinstance(adapted, (sa.Select, sa.TextClause)):
                raise ResourceError(
                    f"sql_database: query_adapter_callback for table '{table.name}' returned a "
                    f"{type(adapted).__name__}; it returns a select, a textual query "
                    "(sqlalchemy.text) or None"
                )
            return adapted
    return query


def _incremental_range(
    query: sa.Select[Any], table: NamedFromClause, incremental: Incremental[Any]
) -> sa.Select[Any]:
    """dlt's: with ``last_value_func`` max the rows from the start (``>=``; ``>`` with
    ``range_start="open"``) up to the end (``<``; ``<=`` with ``range_end="closed"``), with min
    the mirror image; another function loads every row and leaves the range to the
    incremental's filter. Rows at the start value are read again and the incremental drops the
    ones the previous run loaded (by primary key or row hash).

    Rows whose cursor is NULL are in no range: ``on_cursor_value_missing="exclude"`` leaves
    them out (``AND cursor IS NOT NULL``); ``include`` and ``raise`` read them with the range
    (``OR cursor IS NULL``), so the incremental includes them, or fails naming the cursor
    column, as it does for any other resource; a range alone would drop them unseen.

    ``ORDER BY`` the cursor only for a declared ``row_order`` (as dlt): ascending where
    ``row_order`` is the direction ``last_value_func`` moves, descending otherwise."""
    import sqlalchemy as sa

    cursor_path = str(incremental.cursor_path)
    if cursor_path not in table.c:
        raise ResourceError(
            f"sql_database: table '{table.name}' has no column '{cursor_path}' for the incremental's "
            f"cursor_path; its columns are {', '.join(table.c.keys())}"
        )
    cursor = table.c[cursor_path]
    func = incremental.last_value_func
    if func is max:
        start_op = operator.ge if incremental.range_start == "closed" else operator.gt
        end_op = operator.lt if incremental.range_end == "open" else operator.le
    elif func is min:
        start_op = operator.le if incremental.range_start == "closed" else operator.lt
        end_op = operator.gt if incremental.range_end == "open" else operator.ge
    else:
        return query
    conditions = []
    if incremental.start_value is not None:
        conditions.append(start_op(cursor, incremental.start_value))
    if incremental.end_value is not None:
        conditions.append(end_op(cursor, incremental.end_value))
    missing = incremental.on_cursor_value_missing
    if missing == "exclude":
        query = query.where(sa.and_(*conditions, cursor.is_not(None)))
    elif conditions:
        query = query.where(sa.or_(sa.and_(*conditions), cursor.is_(None)))
    if incremental.row_order is None:
        return query
    moves_up = func is max
    ascending = (incremental.row_order == "asc") == moves_up
    return query.order_by(cursor.asc() if ascending else cursor.desc())


def _call_adapter(
    adapter: QueryAdapter,
    query: sa.Select[Any],
    table: NamedFromClause,
    incremental: Incremental[Any] | None,
    engine: sa.engine.Engine,
) -> object:
    """dlt's three forms: ``(query, table)``, ``(query, table, incremental)`` and
    ``(query, table, incremental, engine)``."""
    try:
        parameters = [
            p
            for p in inspect.signature(adapter).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        count = len(parameters)
    except (TypeError, ValueError):
        count = 2
    arguments = (query, table, incremental, engine)
    if count not in (2, 3, 4):
        raise ResourceError(
            "sql_database: query_adapter_callback takes (query, table), (query, table, incremental) "
            f"or (query, table, incremental, engine); it has {count} parameters"
        )
    return adapter(*arguments[:count])
