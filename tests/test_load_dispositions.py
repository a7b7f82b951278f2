"""Write dispositions: append, replace and merge (delete-insert), with their nested tables,
Delta commits (one per table per load) and resumable loads."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pytest
from conftest import delta_history, delta_rows, delta_version, spark_rows

import sparkload as sl
from sparkload.exceptions import PipelineStepFailed

# The engine sessions that run this file (noxfile.py says why); `connect` runs each
# disposition's statements once, the JVM each once too (marked on those tests).
pytestmark = [pytest.mark.cluster]

ID = "_sparkload_id"
LOAD_ID = "_sparkload_load_id"
PARENT_ID = "_sparkload_parent_id"
LIST_IDX = "_sparkload_list_idx"
ROOT_ID = "_sparkload_root_id"

READERS = (delta_rows, spark_rows)


def user_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("_sparkload")}


def user_rows(read: Any, pipeline: sl.Pipeline, table: str, order_by: str = "id") -> list[dict[str, Any]]:
    return [user_row(r) for r in read(pipeline, table, order_by=order_by)]


def tags_by_id(read: Any, pipeline: sl.Pipeline, root: str) -> dict[int, list[str]]:
    """Each root row's list (from its nested table ``<root>__tags``), in list order."""
    ids = {r[ID]: r["id"] for r in read(pipeline, root)}
    nested = sorted(read(pipeline, f"{root}__tags"), key=lambda r: (r[PARENT_ID], r[LIST_IDX]))
    out: dict[int, list[str]] = {}
    for r in nested:
        out.setdefault(ids[r[PARENT_ID]], []).append(r["value"])
    return out


def table_uri(pipeline: sl.Pipeline, table: str) -> str:
    return f"{pipeline.dataset_uri}/{table}"


def versions(pipeline: sl.Pipeline, *tables: str) -> dict[str, int]:
    return {t: delta_version(pipeline, t) for t in tables}


# -- append -------------------------------------------------------------------------------------
@pytest.mark.connect
def test_append_twice_doubles_rows_and_nested_rows(pipeline: sl.Pipeline) -> None:
    data = [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": ["c"]}]
    first = pipeline.run(data, table_name="events")
    second = pipeline.run(data, table_name="events")

    assert first.load_id is not None and second.load_id is not None
    assert first.load_id != second.load_id
    assert second.row_counts == {"events": 2, "events__tags": 3}
    for read in READERS:
        assert sorted(r["id"] for r in read(pipeline, "events")) == [1, 1, 2, 2]
        assert sorted(r["value"] for r in read(pipeline, "events__tags")) == ["a", "a", "b", "b", "c", "c"]
        assert sorted(r[LOAD_ID] for r in read(pipeline, "events__tags")) == sorted(
            [first.load_id] * 3 + [second.load_id] * 3
        )
    # Row ids stay unique across loads; each load's nested rows hang off that load's roots.
    roots = {r[ID]: r[LOAD_ID] for r in delta_rows(pipeline, "events")}
    nested = delta_rows(pipeline, "events__tags")
    assert len(roots) == 4 and len({r[ID] for r in nested}) == 6
    assert all(roots[r[PARENT_ID]] == r[LOAD_ID] for r in nested)


@pytest.mark.jvm
def test_append_makes_one_commit_per_table_per_load_tagged_with_the_load_id(pipeline: sl.Pipeline) -> None:
    loads = [pipeline.run([{"id": i, "tags": ["x"]}], table_name="events").load_id for i in range(3)]

    for table in ("events", "events__tags"):
        history = sorted(delta_history(pipeline, table), key=lambda h: h["version"])
        assert [(h["version"], h.get("userMetadata")) for h in history] == list(enumerate(loads))


@pytest.mark.jvm
def test_append_new_column_evolves_the_table(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1}], table_name="events")
    pipeline.run([{"id": 2, "extra": "e"}], table_name="events")

    for read in READERS:
        assert user_rows(read, pipeline, "events") == [{"id": 1, "extra": None}, {"id": 2, "extra": "e"}]


def test_append_rows_without_an_existing_column_get_null(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "note": "n"}], table_name="events")
    pipeline.run([{"id": 2}], table_name="events")

    for read in READERS:
        assert user_rows(read, pipeline, "events") == [{"id": 1, "note": "n"}, {"id": 2, "note": None}]


# -- replace --------------------------------------------------------------------------------------
@pytest.mark.connect
@pytest.mark.jvm
def test_replace_with_fewer_rows_and_another_schema_is_one_atomic_commit(pipeline: sl.Pipeline) -> None:
    old_rows = [
        {"id": 1, "x": 10, "v": 1, "tags": ["a"], "items": [{"k": 1}]},
        {"id": 2, "x": 20, "v": 2, "tags": ["b", "c"], "items": [{"k": 2}]},
    ]
    pipeline.run(old_rows, table_name="snap", write_disposition="replace")
    tables = ("snap", "snap__tags", "snap__items")
    before = versions(pipeline, *tables)

    # x removed, y added, v changes type, items not present any more
    info = pipeline.run(
        [{"id": 3, "y": "new", "v": "text", "tags": ["z"]}], table_name="snap", write_disposition="replace"
    )

    assert versions(pipeline, *tables) == {t: v + 1 for t, v in before.items()}
    assert info.versions == {t: v + 1 for t, v in before.items()}
    schema = deltalake.DeltaTable(table_uri(pipeline, "snap")).schema()
    assert {f.name: str(f.type.type) for f in schema.fields if not f.name.startswith("_sparkload")} == {
        "id": "long",
        "y": "string",
        "v": "string",
    }
    for read in READERS:
        assert user_rows(read, pipeline, "snap") == [{"id": 3, "y": "new", "v": "text"}]
        assert tags_by_id(read, pipeline, "snap") == {3: ["z"]}
        assert read(pipeline, "snap__items") == []

    # Readers of the previous version still see the old table, complete.
    old = deltalake.DeltaTable(table_uri(pipeline, "snap"), version=before["snap"]).to_pyarrow_table()
    assert sorted((r["id"], r["x"], r["v"]) for r in old.to_pylist()) == [(1, 10, 1), (2, 20, 2)]
    old_tags = deltalake.DeltaTable(table_uri(pipeline, "snap__tags"), version=before["snap__tags"])
    assert sorted(r["value"] for r in old_tags.to_pyarrow_table().to_pylist()) == ["a", "b", "c"]
    old_items = deltalake.DeltaTable(table_uri(pipeline, "snap__items"), version=before["snap__items"])
    assert old_items.to_pyarrow_table().num_rows == 2


@pytest.mark.jvm
def test_replace_resource_that_yields_nothing_empties_its_tables(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "tags": ["a"]}, {"id": 2, "tags": ["b"]}], table_name="snap", write_disposition="replace"
    )
    before = versions(pipeline, "snap", "snap__tags")

    @sl.resource(name="snap", write_disposition="replace")
    def nothing() -> Any:
        yield from ()

    pipeline.run(nothing)

    assert versions(pipeline, "snap", "snap__tags") == {t: v + 1 for t, v in before.items()}
    for read in READERS:
        assert read(pipeline, "snap") == []
        assert read(pipeline, "snap__tags") == []
    old = deltalake.DeltaTable(table_uri(pipeline, "snap"), version=before["snap"]).to_pyarrow_table()
    assert old.num_rows == 2


# -- merge (delete-insert) ---------------------------------------------------------------------------
def merge(
    pipeline: sl.Pipeline, rows: list[dict[str, Any]], table: str = "users", **hints: Any
) -> sl.LoadInfo:
    hints.setdefault("primary_key", "id")
    return pipeline.run(
        rows, table_name=table, write_disposition=hints.pop("write_disposition", "merge"), **hints
    )


@pytest.mark.connect
def test_merge_updates_and_inserts_in_one_run(pipeline: sl.Pipeline) -> None:
    merge(pipeline, [{"id": 1, "name": "ada"}, {"id": 2, "name": "bob"}])
    before = delta_version(pipeline, "users")

    merge(pipeline, [{"id": 1, "name": "ada lovelace"}, {"id": 3, "name": "cyd"}])

    assert delta_version(pipeline, "users") == before + 1
    for read in READERS:
        assert user_rows(read, pipeline, "users") == [
            {"id": 1, "name": "ada lovelace"},
            {"id": 2, "name": "bob"},
            {"id": 3, "name": "cyd"},
        ]


def test_merge_of_only_new_keys_into_an_existing_table_inserts_them(pipeline: sl.Pipeline) -> None:
    merge(pipeline, [{"id": 1, "name": "ada"}])
    merge(pipeline, [{"id": 2, "name": "bob"}])

    for read in READERS:
        assert user_rows(read, pipeline, "users") == [{"id": 1, "name": "ada"}, {"id": 2, "name": "bob"}]


def test_merge_deduplicates_rows_of_one_load_by_primary_key(pipeline: sl.Pipeline) -> None:
    # the first load creates the table and is deduplicated too
    first = merge(pipeline, [{"id": 1, "v": 0}, {"id": 2, "v": 0}, {"id": 2, "v": 0}])
    assert first.row_counts["users"] == 2
    assert sorted(r["id"] for r in delta_rows(pipeline, "users")) == [1, 2]

    info = merge(pipeline, [{"id": 1, "v": 1}, {"id": 1, "v": 2}, {"id": 1, "v": 3}, {"id": 3, "v": 4}])

    assert info.row_counts["users"] == 2
    for read in READERS:
        rows = user_rows(read, pipeline, "users")
        assert [r["id"] for r in rows] == [1, 2, 3]
        assert rows[0]["v"] in (1, 2, 3)  # which duplicate survives is arbitrary (dlt: the same)
        assert rows[1:] == [{"id": 2, "v": 0}, {"id": 3, "v": 4}]


@pytest.mark.parametrize(
    ("direction", "survivor"), [pytest.param("desc", 9, marks=pytest.mark.jvm), ("asc", 5)]
)
def test_merge_dedup_sort_picks_the_surviving_duplicate_and_its_nested_rows(
    pipeline: sl.Pipeline, direction: str, survivor: int
) -> None:
    hints: dict[str, Any] = {"columns": {"ts": {"dedup_sort": direction}}}
    merge(pipeline, [{"id": 0, "ts": 0, "tags": ["zero"]}], **hints)

    merge(
        pipeline,
        [
            {"id": 0, "ts": 1, "tags": ["one"]},
            {"id": 1, "ts": 7, "tags": ["seven"]},
            {"id": 1, "ts": 5, "tags": ["five", "5"]},
            {"id": 1, "ts": 9, "tags": ["nine", "9"]},
        ],
        **hints,
    )

    expected_tags = {5: ["five", "5"], 9: ["nine", "9"]}[survivor]
    for read in READERS:
        assert user_rows(read, pipeline, "users") == [{"id": 0, "ts": 1}, {"id": 1, "ts": survivor}]
        # the nested rows of the dropped duplicates are dropped with them
        assert tags_by_id(read, pipeline, "users") == {0: ["one"], 1: expected_tags}
        assert len(read(pipeline, "users__tags")) == 1 + len(expected_tags)


def test_merge_with_compound_primary_key(pipeline: sl.Pipeline) -> None:
    key = ("id", "region")
    merge(
        pipeline,
        [
            {"id": 1, "region": "eu", "v": 1},
            {"id": 1, "region": "us", "v": 2},
            {"id": 2, "region": "eu", "v": 3},
        ],
        primary_key=key,
    )

    merge(
        pipeline,
        [
            {"id": 1, "region": "us", "v": 20},
            {"id": 1, "region": "us", "v": 20},
            {"id": 2, "region": "us", "v": 4},
        ],
        primary_key=key,
    )

    for read in READERS:
        rows = sorted((r["id"], r["region"], r["v"]) for r in read(pipeline, "users"))
        assert rows == [(1, "eu", 1), (1, "us", 20), (2, "eu", 3), (2, "us", 4)]


@pytest.mark.jvm
def test_merge_key_replaces_the_days_in_the_load_and_keeps_other_days(pipeline: sl.Pipeline) -> None:
    """dlt's daily-batch example: ``merge_key="batch_day"``, no primary key."""
    day1, day2, day3 = (datetime.date(2024, 1, d) for d in (1, 2, 3))
    hints: dict[str, Any] = {"primary_key": None, "merge_key": "batch_day"}
    merge(
        pipeline,
        [
            {"batch_day": day1, "n": 1},
            {"batch_day": day1, "n": 2},
            {"batch_day": day2, "n": 3},
            {"batch_day": day2, "n": 4},
            {"batch_day": day3, "n": 5},
        ],
        table="batches",
        **hints,
    )

    # Day 2 again (two rows, one of them a duplicate value: no primary key, so both stay).
    merge(pipeline, [{"batch_day": day2, "n": 30}, {"batch_day": day2, "n": 30}], table="batches", **hints)

    for read in READERS:
        rows = sorted((r["batch_day"], r["n"]) for r in read(pipeline, "batches"))
        assert rows == [(day1, 1), (day1, 2), (day2, 30), (day2, 30), (day3, 5)]


def test_merge_without_any_key_falls_back_to_append(pipeline: sl.Pipeline) -> None:
    first = pipeline.run([{"id": 1, "v": "a"}], table_name="logs", write_disposition="merge")
    second = pipeline.run([{"id": 1, "v": "a"}], table_name="logs", write_disposition="merge")

    assert [t["disposition"] for t in first.tables + second.tables] == ["append", "append"]
    for read in READERS:
        assert user_rows(read, pipeline, "logs") == [{"id": 1, "v": "a"}, {"id": 1, "v": "a"}]


@pytest.mark.parametrize(("deduplicated", "rows_per_key"), [(False, 2), (True, 1)])
def test_merge_deduplicated_option(pipeline: sl.Pipeline, deduplicated: bool, rows_per_key: int) -> None:
    """sparkload's rule (the merge-strategies spec): ``"deduplicated": False`` keeps the
    load's duplicates; True (the default) keeps one row per primary key."""
    disposition = {"disposition": "merge", "deduplicated": deduplicated}
    merge(pipeline, [{"id": 1, "v": 0}, {"id": 2, "v": 0}], write_disposition=disposition)

    merge(
        pipeline,
        [{"id": 1, "v": 1}, {"id": 1, "v": 2}, {"id": 2, "v": 3}, {"id": 2, "v": 4}],
        write_disposition=disposition,
    )

    for read in READERS:
        ids = [r["id"] for r in read(pipeline, "users", order_by="id")]
        assert ids == [1] * rows_per_key + [2] * rows_per_key


@pytest.mark.connect
def test_merge_replaces_nested_rows_of_updated_roots_only(pipeline: sl.Pipeline) -> None:
    merge(
        pipeline,
        [{"id": 1, "tags": ["a", "b", "c"]}, {"id": 2, "tags": ["k", "l"]}, {"id": 3, "tags": ["m"]}],
    )
    untouched = {r[ID]: r for r in delta_rows(pipeline, "users__tags") if r["value"] in ("k", "l", "m")}
    before = versions(pipeline, "users", "users__tags")

    # row 1's list shrinks to ["x"]; row 3 comes again without its list field at all
    merge(pipeline, [{"id": 1, "tags": ["x"]}, {"id": 3}])

    # each table changed in exactly one commit
    assert versions(pipeline, "users", "users__tags") == {t: v + 1 for t, v in before.items()}
    for read in READERS:
        assert tags_by_id(read, pipeline, "users") == {1: ["x"], 2: ["k", "l"]}
        # the other root's nested rows are the very same rows as before
        kept = {r[ID]: r for r in read(pipeline, "users__tags") if r["value"] in ("k", "l")}
        assert kept == {i: r for i, r in untouched.items() if r["value"] in ("k", "l")}
        new_root = next(r for r in read(pipeline, "users") if r["id"] == 1)
        (x_row,) = [r for r in read(pipeline, "users__tags") if r["value"] == "x"]
        assert (x_row[PARENT_ID], x_row[ROOT_ID], x_row[LIST_IDX]) == (new_root[ID], new_root[ID], 0)


def test_merge_into_appended_table_without_root_key_fails_clearly(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "tags": ["a"]}], table_name="users")

    with pytest.raises(PipelineStepFailed) as failure:
        merge(pipeline, [{"id": 1, "tags": ["b"]}])

    message = str(failure.value)
    assert "users__tags" in message
    assert ROOT_ID in message
    assert "root_key=True" in message
    assert failure.value.step == "load"


def test_merge_into_appended_table_without_root_key_changes_nothing(pipeline: sl.Pipeline) -> None:
    first = pipeline.run([{"id": 1, "tags": ["a"]}], table_name="users")
    before = versions(pipeline, "users", "users__tags")

    with pytest.raises(PipelineStepFailed):
        merge(pipeline, [{"id": 1, "tags": ["b"]}])

    assert versions(pipeline, "users", "users__tags") == before
    assert {r[LOAD_ID] for r in delta_rows(pipeline, "users")} == {first.load_id}


# -- resumable loads --------------------------------------------------------------------------------
def test_loading_again_after_extract_and_normalize_adds_nothing(pipeline: sl.Pipeline) -> None:
    load_id = pipeline.extract([{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}], table_name="events")
    assert pipeline.normalize() == [load_id]

    first = pipeline.load()
    second = pipeline.load()

    assert (first.load_id, first.row_counts) == (load_id, {"events": 2, "events__tags": 2})
    assert (second.load_id, second.tables, second.has_data) == (None, [], False)
    for read in READERS:
        assert sorted(r["id"] for r in read(pipeline, "events")) == [1, 2]
        assert sorted(r["value"] for r in read(pipeline, "events__tags")) == ["a", "b"]
    assert versions(pipeline, "events", "events__tags") == {"events": 0, "events__tags": 0}


@pytest.mark.parametrize("disposition", ["append", "replace", pytest.param("merge", marks=pytest.mark.jvm)])
@pytest.mark.connect
def test_repeating_a_load_whose_commits_happened_writes_nothing_twice(
    pipeline: sl.Pipeline, tmp_path: Path, disposition: str
) -> None:
    """A crash after the commits but before the package was deleted: the package is put
    back and loaded again; every table already carries the load, so nothing changes."""
    pipeline.run(
        [{"id": 1, "tags": ["old"]}], table_name="events", write_disposition=disposition, primary_key="id"
    )
    rows = [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": ["c"]}]
    load_id = pipeline.extract(rows, table_name="events", write_disposition=disposition, primary_key="id")
    pipeline.normalize()
    package = Path(pipeline.destination_dataset.staging_folder(pipeline.pipeline_name).child(load_id).uri)
    shutil.copytree(package, tmp_path / "package_copy")

    pipeline.load()
    after_first = versions(pipeline, "events", "events__tags")
    expected = {
        read: (sorted(r["id"] for r in read(pipeline, "events")), tags_by_id(read, pipeline, "events"))
        for read in READERS
    }
    shutil.copytree(tmp_path / "package_copy", package)
    pipeline.load()

    assert not package.exists()
    assert versions(pipeline, "events", "events__tags") == after_first
    for read in READERS:
        assert (sorted(r["id"] for r in read(pipeline, "events")), tags_by_id(read, pipeline, "events")) == (
            expected[read]
        )
    ids = {"append": [1, 1, 2], "replace": [1, 2], "merge": [1, 2]}[disposition]
    assert expected[delta_rows][0] == ids


@pytest.mark.connect
def test_load_info_lists_tables_in_load_order_though_they_commit_side_by_side(pipeline: sl.Pipeline) -> None:
    rows = [{"id": n, "tags": ["a"], "parts": [{"p": 1, "subs": [1, 2]}]} for n in range(3)]
    for _ in range(3):  # a first load (appends), then merges
        info = pipeline.run(rows, table_name="events", write_disposition="merge", primary_key="id")
        assert [t["table"] for t in info.tables] == [
            "events",
            "events__tags",
            "events__parts",
            "events__parts__subs",
        ]
