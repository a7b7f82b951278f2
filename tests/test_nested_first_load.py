"""A merge's first load creates the root and its nested tables together: a nested table
then takes the load's nested rows without reading the root back, but only when the root
holds every root row of the load. A row dropped as a duplicate or a delete takes its
nested rows with it, as it does into tables that are already there."""

from __future__ import annotations

from typing import Any

from table_checks import READERS

import sparkload as sl
from sparkload.common.system_columns import ID, ROOT_ID


def nested_values(pipeline: sl.Pipeline) -> list[tuple[int, str]]:
    """(root id, tag) of every nested row, by each reader; the same for all of them."""
    found = []
    for read in READERS:
        roots = {row[ID]: row["id"] for row in read(pipeline, "items")}
        found.append(sorted((roots[row[ROOT_ID]], row["value"]) for row in read(pipeline, "items__tags")))
    assert all(rows == found[0] for rows in found)
    return found[0]


def test_a_first_load_keeps_only_the_nested_rows_of_the_root_rows_it_writes(pipeline: sl.Pipeline) -> None:
    rows: list[dict[str, Any]] = [
        {"id": 1, "lsn": 1, "deleted": False, "tags": ["older"]},
        {"id": 1, "lsn": 2, "deleted": False, "tags": ["newer"]},  # the duplicate kept
        {"id": 2, "lsn": 1, "deleted": True, "tags": ["gone"]},  # a delete: never written
        {"id": 3, "lsn": 1, "deleted": False, "tags": ["a", "b"]},
    ]
    pipeline.run(
        rows,
        table_name="items",
        write_disposition="merge",
        primary_key="id",
        columns={"deleted": {"hard_delete": True}, "lsn": {"dedup_sort": "desc"}},
    )

    assert nested_values(pipeline) == [(1, "newer"), (3, "a"), (3, "b")]


def test_a_first_load_of_distinct_rows_keeps_every_nested_row(pipeline: sl.Pipeline) -> None:
    rows = [{"id": i, "tags": [f"t{i}", f"u{i}"]} for i in range(5)]
    pipeline.run(rows, table_name="items", write_disposition="merge", primary_key="id")

    assert nested_values(pipeline) == sorted((i, f"{p}{i}") for i in range(5) for p in "tu")
