"""Wide tables: thousands of columns load with every column and value, read back by delta-rs."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from conftest import delta_rows, user_columns

import sparkload as sl

COLUMNS = 2_000
ROWS = 20


def _value(row: int, column: int) -> Any:
    """Five kinds of value across the columns: the string columns include text that begins
    as a typed value could (a digit), which the profile looks at a second time."""
    kind = column % 6
    if kind == 0:
        return row * column
    if kind == 1:
        return row + 0.5
    if kind == 2:
        return f"v{row}_{column}"
    if kind == 3:
        return f"{row}x{column}"  # text, although it begins with a digit
    if kind == 4:
        return datetime.date(2024, 1, 1 + row % 28)
    return decimal.Decimal(f"{row}.{column:04d}")


def _rows() -> list[dict[str, Any]]:
    return [
        {"id": row, **{f"c{column}": _value(row, column) for column in range(1, COLUMNS)}}
        for row in range(ROWS)
    ]


def test_two_thousand_columns_load_whole(pipeline: sl.Pipeline) -> None:
    info = pipeline.run(sl.resource(_rows(), name="wide", write_disposition="append"))
    assert info.row_counts["wide"] == ROWS
    rows = sorted(user_columns(delta_rows(pipeline, "wide")), key=lambda r: r["id"])
    assert rows == _rows()
    assert len(rows[0]) == COLUMNS  # no column went to a variant column or was dropped
