"""The distinct primary keys of a load are counted at normalize only for a merge that asks
whether a key comes twice (one that deduplicates, an upsert, SCD2 by column), new table or
not; other merges, appends and replaces pay no count. What was counted is read from the
package's normalize manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import delta_rows

import sparkload as sl
from sparkload.common.folder import Folder
from sparkload.common.package import list_packages
from sparkload.normalize.manifest import NormalizeManifest

ROWS = [{"id": 1, "v": "a", "tags": ["x"]}, {"id": 2, "v": "b", "tags": []}, {"id": 2, "v": "c", "tags": []}]


def normalized_distinct_keys(tmp_path: Path, rows: list[dict[str, Any]], **hints: Any) -> int | None:
    """The root table's count of distinct keys in the normalize manifest of one load."""
    pipeline = sl.pipeline(
        "counted",
        destination=sl.destinations.delta(str(tmp_path / "lake")),
        pipelines_dir=str(tmp_path / "work"),
    )
    pipeline.extract(sl.resource(rows, name="t", **hints))
    pipeline.normalize()
    (staged,) = list_packages(
        Folder(str(tmp_path / "lake" / "counted_dataset" / "_sparkload_packages" / "counted"))
    )
    (root,) = [table for table in NormalizeManifest.read(staged).tables if table.name == "t"]
    return root.distinct_keys


@pytest.mark.parametrize(
    "write_disposition",
    [
        "merge",
        {"disposition": "merge", "strategy": "upsert"},
        {"disposition": "merge", "strategy": "insert-only"},
        {"disposition": "merge", "strategy": "upsert", "sequence_by": "v"},
        {"disposition": "merge", "strategy": "scd2", "columns": ["v"]},
    ],
    ids=["delete-insert", "upsert", "insert-only", "upsert-sequenced", "scd2-by-column"],
)
def test_a_merge_that_asks_whether_a_key_repeats_counts_the_distinct_keys(
    tmp_path: Path, write_disposition: Any
) -> None:
    assert (
        normalized_distinct_keys(tmp_path, ROWS, primary_key="id", write_disposition=write_disposition) == 2
    )


@pytest.mark.parametrize(
    "hints",
    [
        {"primary_key": "id", "write_disposition": {"disposition": "merge", "deduplicated": False}},
        {
            "primary_key": "id",
            "write_disposition": {"disposition": "merge", "deduplicated": False},
            "columns": {"v": {"sequence_by": True}},
        },
        {
            "primary_key": "id",
            "write_disposition": {"disposition": "merge", "strategy": "insert-only", "deduplicated": False},
        },
        {"primary_key": "id", "write_disposition": {"disposition": "merge", "strategy": "scd2"}},
        {
            "primary_key": "id",
            "write_disposition": {"disposition": "merge", "strategy": "scd2", "updated_at_name": "v"},
        },
        {"primary_key": "id", "write_disposition": "append"},
        {"primary_key": "id", "write_disposition": "replace"},
    ],
    ids=[
        "not-deduplicated",
        "sequenced-not-deduplicated",
        "insert-only-not-deduplicated",
        "scd2-by-row-hash",
        "scd2-by-time",
        "append",
        "replace",
    ],
)
def test_a_load_that_never_asks_whether_a_key_repeats_counts_no_distinct_keys(
    tmp_path: Path, hints: dict[str, Any]
) -> None:
    assert normalized_distinct_keys(tmp_path, ROWS, **hints) is None


def test_a_merge_that_counts_no_keys_still_loads_every_row_as_asked(tmp_path: Path) -> None:
    """deduplicated=False keeps both rows of key 2 (the merge never asked whether it repeats)."""
    pipeline = sl.pipeline(
        "kept",
        destination=sl.destinations.delta(str(tmp_path / "lake")),
        pipelines_dir=str(tmp_path / "work"),
    )
    pipeline.run(
        sl.resource(
            ROWS,
            name="t",
            primary_key="id",
            write_disposition={"disposition": "merge", "deduplicated": False},
        )
    )
    assert sorted((row["id"], row["v"]) for row in delta_rows(pipeline, "t")) == [
        (1, "a"),
        (2, "b"),
        (2, "c"),
    ]
