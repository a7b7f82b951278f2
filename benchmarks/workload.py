"""The benchmark workloads, shared by the sparkload and dlt runners (pure Python; Arrow lazily)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def w1_rows(count: int, start: int = 0) -> Iterator[dict[str, Any]]:
    """Row i of workload W1 (see docs/performance.md)."""
    for i in range(start, start + count):
        yield {
            "id": i,
            "user": {"name": f"u{i % 1000}", "age": i % 90},
            "amount": i * 0.5,
            "ts": f"2024-01-{1 + i % 28:02d}T00:00:00Z",
            "tags": ["a", "b"] if i % 10 == 0 else [],
        }


FIRST_LOAD = 1_000_000
SECOND_LOAD = 10_000
SECOND_START = 995_000
W2_ROWS = 10_000_000


# -- M1: merge 10,000 changed rows into a flat 10,000,000-row table ---------------------------------
M1_ROWS = 10_000_000
M1_CHANGED = 10_000  # half updates of the last ids, half inserts of new ids
M1_BATCH = 1_000_000  # rows per Arrow table in the first load


def m1_row(i: int) -> dict[str, Any]:
    """Row i of workload M1 (see docs/performance.md)."""
    return {"id": i, "name": f"n{i % 1000}", "value": i * 0.5, "day": i % 365}


def m1_rows(count: int, start: int = 0) -> Iterator[dict[str, Any]]:
    for i in range(start, start + count):
        yield m1_row(i)


def m1_tables(count: int, batch: int = M1_BATCH) -> Iterator[Any]:
    """Rows 0..count-1 of M1 as pyarrow Tables of ``batch`` rows (the same values as m1_rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array([f"n{k}" for k in range(1000)])
    for start in range(0, count, batch):
        ids = pa.array(range(start, min(start + batch, count)), pa.int64())
        yield pa.table(
            {
                "id": ids,
                "name": pc.take(names, _mod(pc, ids, 1000)),
                "value": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
                "day": _mod(pc, ids, 365),
            }
        )


def _mod(pc: Any, values: Any, divisor: int) -> Any:
    # Arrow has no modulo kernel; ids are non-negative, so truncating division is floor division.
    return pc.subtract(values, pc.multiply(pc.divide(values, divisor), divisor))


def m1_changes(rows: int = M1_ROWS, changed: int = M1_CHANGED) -> Iterator[dict[str, Any]]:
    """The merged batch: the last changed/2 ids with new values, then changed/2 new ids."""
    half = changed // 2
    for i in range(rows - half, rows):
        yield {"id": i, "name": f"changed{i % 1000}", "value": i * 0.5 + 1.0, "day": (i + 1) % 365}
    yield from m1_rows(changed - half, rows)


# -- S1: SCD2, a full extract of a 1,000,000-row dimension with 1% of the rows changed ---------------
S1_ROWS = 1_000_000
S1_CHANGE_EVERY = 100  # every 100th row gets a new c1 in the second extract


def s1_rows(count: int = S1_ROWS, change_every: int | None = None) -> Iterator[dict[str, Any]]:
    """The dimension: {"customer_key", "c1", "c2"}; with ``change_every``, every n-th c1 changed."""
    for i in range(count):
        c1 = f"name{i}-v2" if change_every and i % change_every == 0 else f"name{i}"
        yield {"customer_key": i, "c1": c1, "c2": i % 97}


# -- C1: wide tables, flat dicts of many columns ---------------------------------------------------
C1_COLUMNS = (1_000, 5_000, 10_000)
C1_ROWS = 1_000


def c1_rows(columns: int, rows: int = C1_ROWS) -> Iterator[dict[str, Any]]:
    """Row i of workload C1: ``id`` and ``columns - 1`` more keys, a third each ints, floats
    and strings (see docs/performance.md)."""
    for i in range(rows):
        row: dict[str, Any] = {"id": i}
        for c in range(1, columns):
            kind = c % 3
            row[f"c{c}"] = i * c if kind == 0 else (i + c * 0.5 if kind == 1 else f"v{i}_{c}")
        yield row
