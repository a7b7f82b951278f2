"""The benchmark workloads, shared by the sparkload and dlt runners (pure Python)."""

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
