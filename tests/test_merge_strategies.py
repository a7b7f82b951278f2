"""Merge strategies and their options: delete-insert (keys, dedup, hard_delete, deduplicated),
upsert, insert-only, scd2 in dlt's and SQLMesh's flavours, sequence_by, schema evolution and
variant columns of merge tables; error cases (message and an unchanged table), one Delta
commit per table per load, and nested tables that always follow their root rows.

Every table is read back with delta-rs and with Spark. delta-rs hands back aware UTC
datetimes, Spark naive UTC ones; both are compared as naive UTC datetimes.
"""

from __future__ import annotations

import datetime
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import delta_rows, delta_version, user_columns
from table_checks import READERS, assert_table, naive_utc, project, table_rows

import sparkload as sl
from sparkload.exceptions import SparkloadError

UTC = datetime.timezone.utc
ID = "_sparkload_id"
PARENT_ID = "_sparkload_parent_id"
LIST_IDX = "_sparkload_list_idx"
ROOT_ID = "_sparkload_root_id"
VALID_FROM = "_sparkload_valid_from"
VALID_TO = "_sparkload_valid_to"

DELETE_INSERT: dict[str, Any] = {"disposition": "merge", "strategy": "delete-insert"}
UPSERT: dict[str, Any] = {"disposition": "merge", "strategy": "upsert"}
INSERT_ONLY: dict[str, Any] = {"disposition": "merge", "strategy": "insert-only"}
SCD2: dict[str, Any] = {"disposition": "merge", "strategy": "scd2"}
STRATEGIES = {"delete-insert": DELETE_INSERT, "upsert": UPSERT, "insert-only": INSERT_ONLY, "scd2": SCD2}

T1, T2, T3, T4 = (datetime.datetime(2024, 5, d, 8, 30, 15, 123456, tzinfo=UTC) for d in (1, 2, 3, 4))
EPOCH = datetime.datetime(1970, 1, 1)


# -- helpers ------------------------------------------------------------------------------------


def n(value: datetime.datetime) -> datetime.datetime:
    """An aware time as the naive UTC cell it is read back as."""
    return naive_utc(value)


def nested_lists(
    pipeline: sl.Pipeline, root: str, child: str = "tags", key: str = "id"
) -> dict[Any, list[Any]]:
    """Each root row's list, rebuilt from ``<root>__<child>`` through ``_sparkload_root_id``;
    the same through both readers, and no nested row without its root row."""
    seen = []
    for read in READERS:
        roots = {r[ID]: r[key] for r in read(pipeline, root)}
        lists: dict[Any, list[tuple[int, Any]]] = {}
        for r in read(pipeline, f"{root}__{child}"):
            assert r[ROOT_ID] in roots, f"orphan nested row {r} ({read.__name__})"
            assert r[PARENT_ID] == r[ROOT_ID]
            lists.setdefault(roots[r[ROOT_ID]], []).append((r[LIST_IDX], r["value"]))
        seen.append({k: [v for _, v in sorted(items)] for k, items in lists.items()})
    assert seen[0] == seen[1], "delta-rs and Spark disagree"
    return seen[0]


def versions(pipeline: sl.Pipeline, *tables: str) -> dict[str, int]:
    return {t: delta_version(pipeline, t) for t in tables}


def table_exists(pipeline: sl.Pipeline, table: str) -> bool:
    return (Path(pipeline.dataset_uri) / table / "_delta_log").is_dir()


def strategy_hints(strategy: str) -> dict[str, Any]:
    """The write disposition of ``strategy``, keyed by ``id`` (dlt's scd2 takes no key: a
    full extract)."""
    return {"write_disposition": STRATEGIES[strategy], "primary_key": None if strategy == "scd2" else "id"}


def load(
    pipeline: sl.Pipeline, rows: list[dict[str, Any]], table: str = "items", **hints: Any
) -> sl.LoadInfo:
    hints.setdefault("write_disposition", "merge")
    hints.setdefault("primary_key", "id")
    return pipeline.run(rows, table_name=table, **hints)


# -- one commit per table per load --------------------------------------------------------------
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_each_table_changes_in_exactly_one_commit_per_load(pipeline: sl.Pipeline, strategy: str) -> None:
    hints = strategy_hints(strategy)
    load(
        pipeline,
        [{"id": 1, "v": "a", "tags": ["a1"]}, {"id": 2, "v": "b", "tags": ["b1"]}],
        **hints,
        execution_time=T1,
    )
    before = versions(pipeline, "items", "items__tags")

    # an update, a new key with nested rows: every strategy changes both tables
    info = load(
        pipeline,
        [
            {"id": 1, "v": "a2", "tags": ["a2"]},
            {"id": 2, "v": "b", "tags": ["b1"]},
            {"id": 3, "v": "c", "tags": ["c1", "c2"]},
        ],
        **hints,
        execution_time=T2,
    )

    after = versions(pipeline, "items", "items__tags")
    assert after == {t: v + 1 for t, v in before.items()}
    assert {t: v for t, v in info.versions.items() if t in after} == after
    if strategy == "scd2":
        assert project(pipeline, "items", "id", "v", VALID_TO) == [
            (1, "a", n(T2)),
            (1, "a2", None),
            (2, "b", None),
            (3, "c", None),
        ]
        assert project(pipeline, "items__tags", "value") == [("a1",), ("a2",), ("b1",), ("c1",), ("c2",)]
    else:
        inserted_only = strategy == "insert-only"
        first_v, first_tags = ("a", ["a1"]) if inserted_only else ("a2", ["a2"])
        assert project(pipeline, "items", "id", "v") == [(1, first_v), (2, "b"), (3, "c")]
        assert nested_lists(pipeline, "items") == {1: first_tags, 2: ["b1"], 3: ["c1", "c2"]}


def test_delete_insert_hard_delete_changes_root_and_nested_table_in_one_commit_each(
    pipeline: sl.Pipeline,
) -> None:
    hints: dict[str, Any] = {"columns": {"deleted": {"hard_delete": True}}}
    load(pipeline, [{"id": 1, "tags": ["x", "y"]}, {"id": 2, "tags": ["z"]}], **hints)
    before = versions(pipeline, "items", "items__tags")

    load(pipeline, [{"id": 1, "deleted": True}], **hints)

    assert versions(pipeline, "items", "items__tags") == {t: v + 1 for t, v in before.items()}
    assert project(pipeline, "items", "id") == [(2,)]
    assert nested_lists(pipeline, "items") == {2: ["z"]}


# -- delete-insert --------------------------------------------------------------------------------
def test_delete_insert_primary_key_and_merge_key_both_select_rows_to_replace(pipeline: sl.Pipeline) -> None:
    hints: dict[str, Any] = {"merge_key": "day"}
    load(
        pipeline,
        [
            {"id": 1, "day": "d1", "v": "a"},
            {"id": 2, "day": "d1", "v": "b"},
            {"id": 3, "day": "d2", "v": "c"},
            {"id": 4, "day": "d3", "v": "d"},
        ],
        **hints,
    )

    # id 3 moves to day d1: its old row goes by primary key, d1's rows by merge key
    load(pipeline, [{"id": 3, "day": "d1", "v": "c2"}], **hints)

    assert_table(pipeline, "items", [{"id": 3, "day": "d1", "v": "c2"}, {"id": 4, "day": "d3", "v": "d"}])


def test_delete_insert_compound_merge_key_replaces_partitions_and_their_nested_rows(
    pipeline: sl.Pipeline,
) -> None:
    hints: dict[str, Any] = {"primary_key": None, "merge_key": ("region", "day")}
    load(
        pipeline,
        [
            {"id": 1, "region": "eu", "day": 1, "tags": ["eu1-a"]},
            {"id": 2, "region": "eu", "day": 1, "tags": ["eu1-b"]},
            {"id": 3, "region": "eu", "day": 2, "tags": ["eu2"]},
            {"id": 4, "region": "us", "day": 1, "tags": ["us1"]},
        ],
        **hints,
    )
    before = versions(pipeline, "items", "items__tags")

    info = load(
        pipeline,
        [
            {"id": 5, "region": "eu", "day": 1, "tags": ["new"]},
            {"id": 6, "region": "us", "day": 2, "tags": []},
        ],
        **hints,
    )

    assert versions(pipeline, "items", "items__tags") == {t: v + 1 for t, v in before.items()}
    assert info.row_counts["items"] == 2
    assert project(pipeline, "items", "id", "region", "day") == [
        (3, "eu", 2),
        (4, "us", 1),
        (5, "eu", 1),
        (6, "us", 2),
    ]
    assert nested_lists(pipeline, "items") == {3: ["eu2"], 4: ["us1"], 5: ["new"]}


def test_delete_insert_hard_delete_bool_only_true_deletes(pipeline: sl.Pipeline) -> None:
    hints: dict[str, Any] = {"columns": {"deleted": {"hard_delete": True}}}
    load(
        pipeline,
        [{"id": i, "v": f"v{i}", "deleted": False, "tags": [f"t{i}"]} for i in (1, 2, 3, 4)],
        **hints,
    )

    load(
        pipeline,
        [
            {"id": 1, "deleted": True},  # only the key and the hint column
            {"id": 2, "v": "v2-new", "deleted": False, "tags": ["t2-new"]},
            {"id": 3, "v": "v3-new", "deleted": None, "tags": ["t3-new"]},
            {"id": 5, "v": "ghost", "deleted": True, "tags": ["ghost"]},  # a delete is never inserted
        ],
        **hints,
    )

    assert_table(
        pipeline,
        "items",
        [
            {"id": 2, "v": "v2-new", "deleted": False},
            {"id": 3, "v": "v3-new", "deleted": None},
            {"id": 4, "v": "v4", "deleted": False},
        ],
    )
    assert nested_lists(pipeline, "items") == {2: ["t2-new"], 3: ["t3-new"], 4: ["t4"]}


@pytest.mark.parametrize(
    "delete_value",
    ["2024-02-22T12:34:56Z", "", 0, datetime.datetime(2024, 2, 22, tzinfo=UTC)],
    ids=["iso-timestamp", "empty-string", "zero", "datetime"],
)
def test_delete_insert_hard_delete_non_bool_any_non_null_value_deletes(
    pipeline: sl.Pipeline, delete_value: Any
) -> None:
    hints: dict[str, Any] = {"columns": {"deleted_at": {"hard_delete": True}}}
    load(pipeline, [{"id": i, "v": f"v{i}", "tags": [f"t{i}"]} for i in (1, 2, 3)], **hints)

    load(
        pipeline,
        [
            {"id": 1, "deleted_at": delete_value},
            {"id": 2, "v": "v2-new", "deleted_at": None},
            {"id": 4, "v": "ghost", "deleted_at": delete_value},
        ],
        **hints,
    )

    assert project(pipeline, "items", "id", "v") == [(2, "v2-new"), (3, "v3")]
    assert nested_lists(pipeline, "items") == {3: ["t3"]}


@pytest.mark.parametrize(("direction", "expected"), [("desc", []), ("asc", [(1, "first", 1)])])
def test_delete_insert_dedup_runs_before_hard_delete(
    pipeline: sl.Pipeline, direction: str, expected: list[Any]
) -> None:
    """dlt's lsn example with a stored row: when the surviving (by dedup_sort) record of a key
    is a delete, the stored row is deleted and nothing inserted; otherwise the survivor replaces it."""
    hints: dict[str, Any] = {"columns": {"deleted": {"hard_delete": True}, "lsn": {"dedup_sort": direction}}}
    load(pipeline, [{"id": 1, "v": "stored", "lsn": 0, "deleted": False}], **hints)

    load(
        pipeline,
        [{"id": 1, "v": "first", "lsn": 1, "deleted": False}, {"id": 1, "lsn": 2, "deleted": True}],
        **hints,
    )

    assert project(pipeline, "items", "id", "v", "lsn") == expected


def test_delete_insert_deduplicated_false_keeps_duplicates_with_their_nested_rows(
    pipeline: sl.Pipeline,
) -> None:
    wd = {"disposition": "merge", "deduplicated": False}
    load(
        pipeline,
        [{"id": 1, "v": "old", "tags": ["old"]}, {"id": 2, "v": "b", "tags": ["b"]}],
        write_disposition=wd,
    )

    load(
        pipeline,
        [{"id": 1, "v": "x", "tags": ["x"]}, {"id": 1, "v": "y", "tags": ["y1", "y2"]}],
        write_disposition=wd,
    )

    assert project(pipeline, "items", "id", "v") == [(1, "x"), (1, "y"), (2, "b")]
    for read in READERS:
        by_root = {r[ID]: r["v"] for r in read(pipeline, "items")}
        nested = sorted((by_root[r[ROOT_ID]], r["value"]) for r in read(pipeline, "items__tags"))
        assert nested == [("b", "b"), ("x", "x"), ("y", "y1"), ("y", "y2")]


def test_delete_insert_merge_key_alone_replaces_whole_groups_and_their_nested_rows(
    pipeline: sl.Pipeline,
) -> None:
    hints: dict[str, Any] = {"primary_key": None, "merge_key": "batch"}
    load(
        pipeline,
        [
            {"batch": "a", "n": 1, "tags": ["a1"]},
            {"batch": "a", "n": 2, "tags": ["a2"]},
            {"batch": "b", "n": 3, "tags": ["b3"]},
        ],
        **hints,
    )

    load(pipeline, [{"batch": "a", "n": 9, "tags": ["a9"]}, {"batch": "c", "n": 4, "tags": []}], **hints)

    assert project(pipeline, "items", "batch", "n") == [("a", 9), ("b", 3), ("c", 4)]
    assert nested_lists(pipeline, "items", key="n") == {9: ["a9"], 3: ["b3"]}


# -- upsert ---------------------------------------------------------------------------------------
@pytest.mark.jvm
def test_upsert_updates_inserts_and_hard_deletes_with_nested_rows(pipeline: sl.Pipeline) -> None:
    hints: dict[str, Any] = {"write_disposition": UPSERT, "columns": {"deleted": {"hard_delete": True}}}
    load(pipeline, [{"id": i, "v": f"v{i}", "tags": [f"t{i}a", f"t{i}b"]} for i in (1, 2, 3)], **hints)
    before = versions(pipeline, "items", "items__tags")

    load(
        pipeline,
        [
            {"id": 1, "v": "v1-new", "tags": ["t1-new"]},
            {"id": 2, "deleted": True},
            {"id": 4, "v": "v4", "tags": ["t4"]},
            {"id": 5, "v": "ghost", "deleted": True},
        ],
        **hints,
    )

    assert versions(pipeline, "items", "items__tags") == {t: v + 1 for t, v in before.items()}
    assert project(pipeline, "items", "id", "v") == [(1, "v1-new"), (3, "v3"), (4, "v4")]
    assert nested_lists(pipeline, "items") == {1: ["t1-new"], 3: ["t3a", "t3b"], 4: ["t4"]}


def test_upsert_into_a_new_table_creates_it(pipeline: sl.Pipeline) -> None:
    load(pipeline, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], write_disposition=UPSERT)

    assert_table(pipeline, "items", [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])


def test_upsert_with_compound_primary_key(pipeline: sl.Pipeline) -> None:
    key = ("id", "region")
    load(
        pipeline,
        [{"id": 1, "region": "eu", "v": 1}, {"id": 1, "region": "us", "v": 2}],
        write_disposition=UPSERT,
        primary_key=key,
    )
    load(
        pipeline,
        [{"id": 1, "region": "us", "v": 20}, {"id": 2, "region": "eu", "v": 3}],
        write_disposition=UPSERT,
        primary_key=key,
    )

    assert_table(
        pipeline,
        "items",
        [
            {"id": 1, "region": "eu", "v": 1},
            {"id": 1, "region": "us", "v": 20},
            {"id": 2, "region": "eu", "v": 3},
        ],
    )


def _assert_refused(pipeline: sl.Pipeline, run: Callable[[], Any], *in_message: str) -> str:
    """``run`` raises a SparkloadError whose message matches every regex of ``in_message``
    (case-insensitive); items / items__tags keep their Delta versions and rows."""
    tables = [t for t in ("items", "items__tags") if table_exists(pipeline, t)]
    before_versions = versions(pipeline, *tables)
    before_rows = {t: table_rows(delta_rows, pipeline, t) for t in tables}

    with pytest.raises(SparkloadError) as failure:
        run()

    message = str(failure.value)
    for pattern in in_message:
        assert re.search(pattern, message, re.IGNORECASE), f"{pattern!r} not in {message!r}"
    assert versions(pipeline, *tables) == before_versions
    for t in tables:
        for read in READERS:
            assert table_rows(read, pipeline, t) == before_rows[t]
    return message


def test_upsert_without_primary_key_is_refused_and_changes_nothing(pipeline: sl.Pipeline) -> None:
    load(pipeline, [{"id": 1, "v": "a", "tags": ["x"]}], write_disposition=UPSERT)

    _assert_refused(
        pipeline,
        lambda: load(
            pipeline, [{"id": 1, "v": "b", "tags": ["y"]}], write_disposition=UPSERT, primary_key=None
        ),
        r"primary[_ ]key",
    )


def test_upsert_with_merge_key_is_refused_and_changes_nothing(pipeline: sl.Pipeline) -> None:
    load(pipeline, [{"id": 1, "day": "d1", "v": "a", "tags": ["x"]}], write_disposition=UPSERT)

    _assert_refused(
        pipeline,
        lambda: load(pipeline, [{"id": 1, "day": "d1", "v": "b"}], write_disposition=UPSERT, merge_key="day"),
        r"merge[_ ]key",
    )


def test_upsert_duplicate_keys_in_one_load_are_refused_naming_them(pipeline: sl.Pipeline) -> None:
    load(
        pipeline,
        [{"id": 1, "v": "a", "tags": ["x"]}, {"id": 2, "v": "b", "tags": ["y"]}],
        write_disposition=UPSERT,
    )

    rows = [
        {"id": 1, "v": "a2", "tags": ["x2"]},
        {"id": 424242, "v": "first", "tags": []},
        {"id": 3, "v": "c", "tags": ["z"]},
        {"id": 424242, "v": "second", "tags": []},
    ]
    _assert_refused(pipeline, lambda: load(pipeline, rows, write_disposition=UPSERT), "424242")


def test_upsert_duplicate_compound_keys_are_refused_naming_the_key_values(pipeline: sl.Pipeline) -> None:
    key = ("code", "region")
    load(pipeline, [{"code": "k-1", "region": "eu", "v": 1}], write_disposition=UPSERT, primary_key=key)

    rows = [
        {"code": "k-1", "region": "eu", "v": 2},
        {"code": "dup-k-7", "region": "apac-dup", "v": 3},
        {"code": "dup-k-7", "region": "apac-dup", "v": 4},
    ]
    _assert_refused(
        pipeline,
        lambda: load(pipeline, rows, write_disposition=UPSERT, primary_key=key),
        "dup-k-7",
        "apac-dup",
    )


def test_upsert_duplicate_keys_in_the_first_load_create_no_table(pipeline: sl.Pipeline) -> None:
    with pytest.raises(SparkloadError) as failure:
        load(pipeline, [{"id": 777001, "v": "a"}, {"id": 777001, "v": "b"}], write_disposition=UPSERT)

    assert "777001" in str(failure.value)
    assert not table_exists(pipeline, "items")
    with pytest.raises(SparkloadError):
        pipeline.table("items")


# -- insert-only ----------------------------------------------------------------------------------
def test_insert_only_inserts_absent_keys_and_never_updates(pipeline: sl.Pipeline) -> None:
    hints: dict[str, Any] = {"write_disposition": INSERT_ONLY}
    load(pipeline, [{"id": 1, "v": "a", "tags": ["a"]}, {"id": 2, "v": "b", "tags": ["b"]}], **hints)

    second = [{"id": 2, "v": "B", "tags": ["B"]}, {"id": 3, "v": "c", "tags": ["c1", "c2"]}]
    load(pipeline, second, **hints)

    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}]
    assert_table(pipeline, "items", expected)
    assert nested_lists(pipeline, "items") == {1: ["a"], 2: ["b"], 3: ["c1", "c2"]}

    # the same load again adds nothing (at most an empty commit per table)
    before = versions(pipeline, "items", "items__tags")
    load(pipeline, second, **hints)
    assert_table(pipeline, "items", expected)
    assert nested_lists(pipeline, "items") == {1: ["a"], 2: ["b"], 3: ["c1", "c2"]}
    for table, version in versions(pipeline, "items", "items__tags").items():
        assert version in (before[table], before[table] + 1)


def test_insert_only_keeps_one_row_per_new_key_of_a_load(pipeline: sl.Pipeline) -> None:
    load(pipeline, [{"id": 1, "v": "a"}], write_disposition=INSERT_ONLY)

    load(
        pipeline,
        [{"id": 2, "v": "x"}, {"id": 2, "v": "y"}, {"id": 1, "v": "z"}],
        write_disposition=INSERT_ONLY,
    )

    rows = project(pipeline, "items", "id", "v")
    assert [r[0] for r in rows] == [1, 2]
    assert rows[0] == (1, "a") and rows[1][1] in ("x", "y")


def test_insert_only_without_primary_key_is_refused_and_changes_nothing(pipeline: sl.Pipeline) -> None:
    load(pipeline, [{"id": 1, "v": "a"}], write_disposition=INSERT_ONLY)

    _assert_refused(
        pipeline,
        lambda: load(pipeline, [{"id": 2, "v": "b"}], write_disposition=INSERT_ONLY, primary_key=None),
        r"primary[_ ]key",
    )


# -- scd2, dlt's flavour --------------------------------------------------------------------------
def scd2_ids(pipeline: sl.Pipeline, table: str = "dim") -> list[tuple[Any, ...]]:
    """(key, value, valid_from, _sparkload_id) of every row, the same through both readers."""
    return project(pipeline, table, "key", "value", VALID_FROM, ID)


def test_scd2_id_is_a_row_hash_of_the_content(make_pipeline: Any) -> None:
    first, second = make_pipeline(), make_pipeline()
    load(
        first,
        [{"key": 1, "value": "a"}, {"key": 2, "value": "b"}],
        table="dim",
        primary_key=None,
        write_disposition=SCD2,
        execution_time=T1,
    )
    load(
        second,
        [{"key": 2, "value": "b"}],
        table="dim",
        primary_key=None,
        write_disposition=SCD2,
        execution_time=T3,
    )

    ids_first = {(k, v): i for k, v, _, i in scd2_ids(first)}
    ids_second = {(k, v): i for k, v, _, i in scd2_ids(second)}
    # the same content has the same id in another pipeline, at another time
    assert ids_second[(2, "b")] == ids_first[(2, "b")]
    assert ids_first[(1, "a")] != ids_first[(2, "b")]


def test_scd2_record_deleted_and_reinserted_keeps_its_hash_in_two_versions(pipeline: sl.Pipeline) -> None:
    rows = [{"key": 1, "value": "a"}, {"key": 2, "value": "b"}]
    load(pipeline, rows, table="dim", primary_key=None, write_disposition=SCD2, execution_time=T1)
    load(pipeline, rows[:1], table="dim", primary_key=None, write_disposition=SCD2, execution_time=T2)
    load(pipeline, rows, table="dim", primary_key=None, write_disposition=SCD2, execution_time=T3)

    assert_table(
        pipeline,
        "dim",
        [
            {"key": 1, "value": "a", VALID_FROM: n(T1), VALID_TO: None},
            {"key": 2, "value": "b", VALID_FROM: n(T1), VALID_TO: n(T2)},
            {"key": 2, "value": "b", VALID_FROM: n(T3), VALID_TO: None},
        ],
    )
    rows_b = [r for r in scd2_ids(pipeline) if r[0] == 2]
    assert len(rows_b) == 2 and rows_b[0][3] == rows_b[1][3]
    # (_sparkload_id, valid_from) stays unique
    assert len({(r[3], r[2]) for r in scd2_ids(pipeline)}) == 3


def test_scd2_unchanged_full_extract_changes_nothing(pipeline: sl.Pipeline) -> None:
    rows = [{"key": 1, "value": "a"}, {"key": 2, "value": "b"}]
    load(pipeline, rows, table="dim", primary_key=None, write_disposition=SCD2, execution_time=T1)
    load(
        pipeline,
        list(reversed(rows)),
        table="dim",
        primary_key=None,
        write_disposition=SCD2,
        execution_time=T2,
    )

    assert_table(
        pipeline,
        "dim",
        [
            {"key": 1, "value": "a", VALID_FROM: n(T1), VALID_TO: None},
            {"key": 2, "value": "b", VALID_FROM: n(T1), VALID_TO: None},
        ],
    )


def test_scd2_validity_column_names(pipeline: sl.Pipeline) -> None:
    wd = {**SCD2, "validity_column_names": ["valid_since", "valid_until"]}
    load(
        pipeline,
        [{"key": 1, "value": "a"}],
        table="dim",
        primary_key=None,
        write_disposition=wd,
        execution_time=T1,
    )
    load(
        pipeline,
        [{"key": 1, "value": "b"}],
        table="dim",
        primary_key=None,
        write_disposition=wd,
        execution_time=T2,
    )

    assert_table(
        pipeline,
        "dim",
        [
            {"key": 1, "value": "a", "valid_since": n(T1), "valid_until": n(T2)},
            {"key": 1, "value": "b", "valid_since": n(T2), "valid_until": None},
        ],
    )


@pytest.mark.parametrize(
    "active",
    ["9999-12-31", datetime.date(9999, 12, 31), datetime.datetime(9999, 12, 31, tzinfo=UTC)],
    ids=["str", "date", "datetime"],
)
def test_scd2_active_record_timestamp(pipeline: sl.Pipeline, active: Any) -> None:
    high = datetime.datetime(9999, 12, 31)
    wd = {**SCD2, "active_record_timestamp": active}
    run = [
        ([{"key": 1, "value": "a"}, {"key": 2, "value": "b"}], T1),
        ([{"key": 1, "value": "a"}, {"key": 2, "value": "b"}], T2),  # unchanged: still current
        ([{"key": 1, "value": "a2"}], T3),  # 1 changes, 2 deleted
        ([{"key": 1, "value": "a2"}, {"key": 2, "value": "b"}], T4),  # 2 comes back
    ]
    for rows, when in run:
        load(pipeline, rows, table="dim", primary_key=None, write_disposition=wd, execution_time=when)

    assert_table(
        pipeline,
        "dim",
        [
            {"key": 1, "value": "a", VALID_FROM: n(T1), VALID_TO: n(T3)},
            {"key": 1, "value": "a2", VALID_FROM: n(T3), VALID_TO: high},
            {"key": 2, "value": "b", VALID_FROM: n(T1), VALID_TO: n(T3)},
            {"key": 2, "value": "b", VALID_FROM: n(T4), VALID_TO: high},
        ],
    )


@pytest.mark.parametrize(
    ("boundaries", "expected"),
    [
        (
            ("2024-08-21T14:15:00+02:00", "2024-08-22T12:15:00Z"),
            (datetime.datetime(2024, 8, 21, 12, 15), datetime.datetime(2024, 8, 22, 12, 15)),
        ),
        (
            (
                datetime.datetime(2024, 8, 21, 12, 15, tzinfo=UTC),
                datetime.datetime(2024, 8, 22, 12, 15, tzinfo=UTC),
            ),
            (datetime.datetime(2024, 8, 21, 12, 15), datetime.datetime(2024, 8, 22, 12, 15)),
        ),
        (
            (datetime.date(2024, 8, 21), datetime.date(2024, 8, 22)),
            (datetime.datetime(2024, 8, 21), datetime.datetime(2024, 8, 22)),
        ),
    ],
    ids=["iso-str", "datetime", "date"],
)
def test_scd2_boundary_timestamp_is_used_instead_of_the_execution_time(
    pipeline: sl.Pipeline, boundaries: tuple[Any, Any], expected: tuple[datetime.datetime, datetime.datetime]
) -> None:
    b1, b2 = expected
    load(
        pipeline,
        [{"key": 1, "value": "a"}, {"key": 2, "value": "b"}],
        table="dim",
        primary_key=None,
        write_disposition={**SCD2, "boundary_timestamp": boundaries[0]},
        execution_time=T1,
    )
    load(
        pipeline,
        [{"key": 1, "value": "a2"}],
        table="dim",
        primary_key=None,
        write_disposition={**SCD2, "boundary_timestamp": boundaries[1]},
        execution_time=T2,
    )

    assert_table(
        pipeline,
        "dim",
        [
            {"key": 1, "value": "a", VALID_FROM: b1, VALID_TO: b2},
            {"key": 1, "value": "a2", VALID_FROM: b2, VALID_TO: None},
            {"key": 2, "value": "b", VALID_FROM: b1, VALID_TO: b2},
        ],
    )


def test_scd2_row_version_column_decides_what_is_a_new_version(pipeline: sl.Pipeline) -> None:
    wd = {**SCD2, "row_version_column_name": "row_hash"}

    def run(rows: list[dict[str, Any]], when: datetime.datetime) -> None:
        load(pipeline, rows, table="dim", primary_key=None, write_disposition=wd, execution_time=when)

    run(
        [
            {"key": 1, "value": "a", "note": "n1", "row_hash": "h1"},
            {"key": 2, "value": "b", "note": "n", "row_hash": "h2"},
        ],
        T1,
    )
    # 1: only the note changes and its hash does not: no new version, the stored row stays as is
    # 2: absent: retired
    run([{"key": 1, "value": "a", "note": "n1-changed", "row_hash": "h1"}], T2)
    # 2 returns with the same hash: a new version with a new random id
    run(
        [
            {"key": 1, "value": "a", "note": "n1-changed", "row_hash": "h1"},
            {"key": 2, "value": "b", "note": "n", "row_hash": "h2"},
        ],
        T3,
    )

    assert_table(
        pipeline,
        "dim",
        [
            {"key": 1, "value": "a", "note": "n1", "row_hash": "h1", VALID_FROM: n(T1), VALID_TO: None},
            {"key": 2, "value": "b", "note": "n", "row_hash": "h2", VALID_FROM: n(T1), VALID_TO: n(T2)},
            {"key": 2, "value": "b", "note": "n", "row_hash": "h2", VALID_FROM: n(T3), VALID_TO: None},
        ],
    )
    ids = [r[3] for r in scd2_ids(pipeline)]
    assert len(ids) == 3 and len(set(ids)) == 3 and None not in ids


def test_scd2_nested_tables_get_no_validity_columns_and_follow_their_versions(pipeline: sl.Pipeline) -> None:
    def run(rows: list[dict[str, Any]], when: datetime.datetime) -> None:
        load(pipeline, rows, table="dim", primary_key=None, write_disposition=SCD2, execution_time=when)

    run([{"key": 1, "value": "a", "tags": ["a1", "a2"]}, {"key": 2, "value": "b", "tags": ["b1"]}], T1)
    run(
        [{"key": 1, "value": "a", "tags": ["a1", "a2"]}, {"key": 2, "value": "b", "tags": ["b1"]}], T2
    )  # unchanged
    run([{"key": 1, "value": "a-new", "tags": ["n1"]}, {"key": 2, "value": "b", "tags": ["b1"]}], T3)

    for read in READERS:
        nested = read(pipeline, "dim__tags")
        assert nested and all(VALID_FROM not in r and VALID_TO not in r for r in nested)
        versions_by_id = {
            r[ID]: (r["key"], r["value"], naive_utc(r[VALID_FROM])) for r in read(pipeline, "dim")
        }
        assert len(versions_by_id) == 3
        by_version: dict[Any, list[tuple[int, str]]] = {}
        for r in nested:
            assert r[ROOT_ID] in versions_by_id, "orphan nested row"
            by_version.setdefault(versions_by_id[r[ROOT_ID]], []).append((r[LIST_IDX], r["value"]))
        # each version's nested rows exactly once
        assert {k: [v for _, v in sorted(items)] for k, items in by_version.items()} == {
            (1, "a", n(T1)): ["a1", "a2"],
            (2, "b", n(T1)): ["b1"],
            (1, "a-new", n(T3)): ["n1"],
        }


def test_scd2_rows_of_equal_content_make_one_version_with_the_nested_rows_of_one_of_them(
    pipeline: sl.Pipeline,
) -> None:
    """The row hash (over the row and its nested rows) identifies a version, so two rows of
    equal content in one load are one version; its nested rows are stored once, on the
    first load and on a later one. (Rows that differ in nested data alone are two versions:
    tests/test_dlt_fidelity.py.)"""
    twins = [{"key": 1, "value": "a", "tags": ["x1", "x2"]}, {"key": 1, "value": "a", "tags": ["x1", "x2"]}]
    hints = {"table": "dim", "primary_key": None, "write_disposition": SCD2}
    load(pipeline, [*twins, {"key": 2, "value": "b", "tags": ["b1"]}], **hints)
    load(pipeline, [*twins, {"key": 3, "value": "c", "tags": ["c1"]}], **hints)

    for read in READERS:
        versions = {r[ID]: (r["key"], r[VALID_TO] is None) for r in read(pipeline, "dim")}
        assert sorted(versions.values()) == [(1, True), (2, False), (3, True)]
        tags: dict[Any, list[str]] = {}
        for r in sorted(read(pipeline, "dim__tags"), key=lambda r: r[LIST_IDX]):
            tags.setdefault(versions[r[ROOT_ID]][0], []).append(r["value"])
        assert tags[1] == ["x1", "x2"]
        assert (tags[2], tags[3]) == (["b1"], ["c1"])


def test_scd2_merge_key_natural_key_retires_only_loaded_keys_that_changed(pipeline: sl.Pipeline) -> None:
    hints: dict[str, Any] = {
        "table": "dim",
        "primary_key": None,
        "merge_key": "key",
        "write_disposition": SCD2,
    }
    load(
        pipeline,
        [{"key": 1, "value": "a"}, {"key": 2, "value": "b"}, {"key": 3, "value": "c"}],
        execution_time=T1,
        **hints,
    )
    load(pipeline, [{"key": 2, "value": "b"}, {"key": 3, "value": "c2"}], execution_time=T2, **hints)

    assert_table(
        pipeline,
        "dim",
        [
            {"key": 1, "value": "a", VALID_FROM: n(T1), VALID_TO: None},
            {"key": 2, "value": "b", VALID_FROM: n(T1), VALID_TO: None},
            {"key": 3, "value": "c", VALID_FROM: n(T1), VALID_TO: n(T2)},
            {"key": 3, "value": "c2", VALID_FROM: n(T2), VALID_TO: None},
        ],
    )


# -- scd2, SQLMesh's flavour ----------------------------------------------------------------------
NAMES = {"valid_from_name": "valid_from", "valid_to_name": "valid_to"}


def sqlmesh(
    rows: list[dict[str, Any]], when: datetime.datetime, pipeline: sl.Pipeline, **options: Any
) -> None:
    load(pipeline, rows, table="dim", write_disposition={**SCD2, **NAMES, **options}, execution_time=when)


def d(day: int, hour: int = 0) -> datetime.datetime:
    return datetime.datetime(2020, 1, day, hour, tzinfo=UTC)


def test_scd2_by_time_updated_at_as_valid_from(pipeline: sl.Pipeline) -> None:
    options = {"updated_at_name": "last_modified", "updated_at_as_valid_from": True}
    sqlmesh([{"id": 1, "v": "a", "last_modified": d(1)}], d(1, 11), pipeline, **options)
    sqlmesh(
        [{"id": 1, "v": "a2", "last_modified": d(2)}, {"id": 2, "v": "b", "last_modified": d(1, 6)}],
        d(2, 11),
        pipeline,
        **options,
    )

    assert_table(
        pipeline,
        "dim",
        [
            {"id": 1, "v": "a", "last_modified": n(d(1)), "valid_from": n(d(1)), "valid_to": n(d(2))},
            {"id": 1, "v": "a2", "last_modified": n(d(2)), "valid_from": n(d(2)), "valid_to": None},
            # a key first seen after the first load starts at its updated_at
            {"id": 2, "v": "b", "last_modified": n(d(1, 6)), "valid_from": n(d(1, 6)), "valid_to": None},
        ],
    )


def test_scd2_by_time_without_a_newer_updated_at_is_no_change(pipeline: sl.Pipeline) -> None:
    options = {"updated_at_name": "updated_at"}
    sqlmesh([{"id": 1, "v": "a", "updated_at": d(1)}], d(1, 11), pipeline, **options)
    sqlmesh([{"id": 1, "v": "a-silently-changed", "updated_at": d(1)}], d(2, 11), pipeline, **options)

    assert_table(
        pipeline, "dim", [{"id": 1, "v": "a", "updated_at": n(d(1)), "valid_from": EPOCH, "valid_to": None}]
    )


def test_scd2_by_time_without_invalidate_hard_deletes_returning_unchanged_is_no_change(
    pipeline: sl.Pipeline,
) -> None:
    options = {"updated_at_name": "updated_at"}
    sqlmesh(
        [{"id": 1, "v": "a", "updated_at": d(1)}, {"id": 2, "v": "b", "updated_at": d(1)}],
        d(1, 11),
        pipeline,
        **options,
    )
    sqlmesh([{"id": 1, "v": "a", "updated_at": d(1)}], d(2, 11), pipeline, **options)
    sqlmesh(
        [{"id": 1, "v": "a", "updated_at": d(1)}, {"id": 2, "v": "b", "updated_at": d(1)}],
        d(3, 11),
        pipeline,
        **options,
    )

    assert_table(
        pipeline,
        "dim",
        [
            {"id": 1, "v": "a", "updated_at": n(d(1)), "valid_from": EPOCH, "valid_to": None},
            {"id": 2, "v": "b", "updated_at": n(d(1)), "valid_from": EPOCH, "valid_to": None},
        ],
    )


def test_scd2_by_column_execution_time_as_valid_from(pipeline: sl.Pipeline) -> None:
    options = {"columns": ["v"], "execution_time_as_valid_from": True}
    sqlmesh([{"id": 1, "v": "a"}], d(1, 11), pipeline, **options)
    sqlmesh([{"id": 1, "v": "a2"}, {"id": 2, "v": "b"}], d(2, 11), pipeline, **options)

    assert_table(
        pipeline,
        "dim",
        [
            {"id": 1, "v": "a", "valid_from": n(d(1, 11)), "valid_to": n(d(2, 11))},
            {"id": 1, "v": "a2", "valid_from": n(d(2, 11)), "valid_to": None},
            {"id": 2, "v": "b", "valid_from": n(d(2, 11)), "valid_to": None},
        ],
    )


@pytest.mark.parametrize(
    ("columns", "versioned"), [("*", True), (["name"], False)], ids=["star", "name-only"]
)
def test_scd2_by_column_checks_only_the_listed_columns(
    pipeline: sl.Pipeline, columns: Any, versioned: bool
) -> None:
    options = {"columns": columns}
    sqlmesh([{"id": 1, "name": "fries", "price": 4.99}], d(1, 11), pipeline, **options)
    sqlmesh([{"id": 1, "name": "fries", "price": 5.49}], d(2, 11), pipeline, **options)

    if versioned:
        expected = [
            {"id": 1, "name": "fries", "price": 4.99, "valid_from": EPOCH, "valid_to": n(d(2, 11))},
            {"id": 1, "name": "fries", "price": 5.49, "valid_from": n(d(2, 11)), "valid_to": None},
        ]
    else:
        expected = [{"id": 1, "name": "fries", "price": 4.99, "valid_from": EPOCH, "valid_to": None}]
    assert_table(pipeline, "dim", expected)


def test_scd2_by_column_with_updated_at_name_starts_versions_at_its_value(pipeline: sl.Pipeline) -> None:
    options = {"columns": ["v"], "updated_at_name": "changed_at"}
    sqlmesh([{"id": 1, "v": "a", "changed_at": d(1)}], d(1, 11), pipeline, **options)
    sqlmesh(
        [{"id": 1, "v": "a2", "changed_at": d(2, 5)}, {"id": 2, "v": "b", "changed_at": d(2, 6)}],
        d(2, 11),
        pipeline,
        **options,
    )

    assert_table(
        pipeline,
        "dim",
        [
            {"id": 1, "v": "a", "changed_at": n(d(1)), "valid_from": EPOCH, "valid_to": n(d(2, 5))},
            {"id": 1, "v": "a2", "changed_at": n(d(2, 5)), "valid_from": n(d(2, 5)), "valid_to": None},
            {"id": 2, "v": "b", "changed_at": n(d(2, 6)), "valid_from": n(d(2, 6)), "valid_to": None},
        ],
    )


def test_scd2_by_column_nulls_compare_equal(pipeline: sl.Pipeline) -> None:
    options = {"columns": ["price"]}
    sqlmesh(
        [{"id": 1, "price": None, "name": "x"}, {"id": 2, "price": 1.5, "name": "y"}],
        d(1, 11),
        pipeline,
        **options,
    )
    sqlmesh(
        [{"id": 1, "price": None, "name": "x"}, {"id": 2, "price": 1.5, "name": "y"}],
        d(2, 11),
        pipeline,
        **options,
    )
    sqlmesh(
        [{"id": 1, "price": 2.5, "name": "x"}, {"id": 2, "price": None, "name": "y"}],
        d(3, 11),
        pipeline,
        **options,
    )

    assert_table(
        pipeline,
        "dim",
        [
            {"id": 1, "price": None, "name": "x", "valid_from": EPOCH, "valid_to": n(d(3, 11))},
            {"id": 1, "price": 2.5, "name": "x", "valid_from": n(d(3, 11)), "valid_to": None},
            {"id": 2, "price": 1.5, "name": "y", "valid_from": EPOCH, "valid_to": n(d(3, 11))},
            {"id": 2, "price": None, "name": "y", "valid_from": n(d(3, 11)), "valid_to": None},
        ],
    )


def test_scd2_by_column_invalidated_delete_and_return_starts_at_the_execution_time(
    pipeline: sl.Pipeline,
) -> None:
    options = {"columns": "*", "invalidate_hard_deletes": True}
    sqlmesh([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], d(1, 11), pipeline, **options)
    sqlmesh([{"id": 1, "v": "a"}], d(2, 11), pipeline, **options)
    sqlmesh([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], d(3, 11), pipeline, **options)

    assert_table(
        pipeline,
        "dim",
        [
            {"id": 1, "v": "a", "valid_from": EPOCH, "valid_to": None},
            {"id": 2, "v": "b", "valid_from": EPOCH, "valid_to": n(d(2, 11))},
            {"id": 2, "v": "b", "valid_from": n(d(3, 11)), "valid_to": None},
        ],
    )


def test_scd2_sqlmesh_validity_column_names_alias(pipeline: sl.Pipeline) -> None:
    wd = {**SCD2, "columns": ["v"], "validity_column_names": ["valid_from", "valid_to"]}
    load(pipeline, [{"id": 1, "v": "a"}], table="dim", write_disposition=wd, execution_time=d(1, 11))
    load(pipeline, [{"id": 1, "v": "a2"}], table="dim", write_disposition=wd, execution_time=d(2, 11))

    assert_table(
        pipeline,
        "dim",
        [
            {"id": 1, "v": "a", "valid_from": EPOCH, "valid_to": n(d(2, 11))},
            {"id": 1, "v": "a2", "valid_from": n(d(2, 11)), "valid_to": None},
        ],
    )


# -- sequence_by ----------------------------------------------------------------------------------
def sequenced(strategy: str, form: str) -> dict[str, Any]:
    """Hints for a table whose versions are ordered by ``lsn`` (as a column hint or an option)."""
    columns: dict[str, Any] = {"deleted": {"hard_delete": True}}
    wd = dict(STRATEGIES[strategy])
    if form == "hint":
        columns["lsn"] = {"sequence_by": True}
    else:
        wd["sequence_by"] = "lsn"
    return {"write_disposition": wd, "columns": columns}


SEQUENCE_CASES = [
    pytest.param(strategy, form, id=f"{strategy}-{form}")
    for strategy in ("delete-insert", "upsert")
    for form in ("hint", "option")
]
# On the JVM each strategy's statement once: the hint and the option are the same statement.
JVM_SEQUENCE_CASES = [
    pytest.param(*case.values, id=case.id, marks=pytest.mark.jvm if case.values[1] == "hint" else ())
    for case in SEQUENCE_CASES
]


@pytest.mark.parametrize(("strategy", "form"), JVM_SEQUENCE_CASES)
def test_sequence_by_older_records_never_overwrite_newer_ones(
    pipeline: sl.Pipeline, strategy: str, form: str
) -> None:
    hints = sequenced(strategy, form)

    def state() -> list[tuple[Any, ...]]:
        return project(pipeline, "items", "id", "lsn", "v")

    load(
        pipeline,
        [
            {"id": 1, "lsn": 5, "v": "five", "deleted": False},
            {"id": 2, "lsn": 1, "v": "one", "deleted": False},
        ],
        **hints,
    )

    # an older update of 1 is ignored; a newer one of 2 applies
    load(
        pipeline,
        [
            {"id": 1, "lsn": 3, "v": "three", "deleted": False},
            {"id": 2, "lsn": 2, "v": "two", "deleted": False},
        ],
        **hints,
    )
    assert state() == [(1, 5, "five"), (2, 2, "two")]

    # a late delete older than the stored version deletes nothing
    load(pipeline, [{"id": 1, "lsn": 4, "deleted": True}], **hints)
    assert state() == [(1, 5, "five"), (2, 2, "two")]

    # a newer delete deletes
    load(pipeline, [{"id": 1, "lsn": 7, "deleted": True}], **hints)
    assert state() == [(2, 2, "two")]

    # an insert older than that delete arriving after it does not bring the row back
    load(pipeline, [{"id": 1, "lsn": 6, "v": "six", "deleted": False}], **hints)
    assert state() == [(2, 2, "two")]

    # a newer insert does
    load(pipeline, [{"id": 1, "lsn": 8, "v": "eight", "deleted": False}], **hints)
    assert state() == [(1, 8, "eight"), (2, 2, "two")]


@pytest.mark.parametrize(("strategy", "form"), SEQUENCE_CASES)
def test_sequence_by_delete_of_a_key_never_stored_keeps_an_older_insert_out(
    pipeline: sl.Pipeline, strategy: str, form: str
) -> None:
    hints = sequenced(strategy, form)
    load(pipeline, [{"id": 1, "lsn": 1, "v": "a", "deleted": False}], **hints)

    load(pipeline, [{"id": 2, "lsn": 9, "deleted": True}], **hints)
    load(
        pipeline,
        [{"id": 2, "lsn": 3, "v": "late", "deleted": False}, {"id": 3, "lsn": 1, "v": "c", "deleted": False}],
        **hints,
    )

    assert project(pipeline, "items", "id", "lsn", "v") == [(1, 1, "a"), (3, 1, "c")]


@pytest.mark.parametrize(("strategy", "form"), SEQUENCE_CASES)
def test_sequence_by_newest_version_within_one_load_wins(
    pipeline: sl.Pipeline, strategy: str, form: str
) -> None:
    hints = sequenced(strategy, form)
    load(
        pipeline,
        [{"id": 1, "lsn": 1, "v": "a", "deleted": False}, {"id": 2, "lsn": 1, "v": "b", "deleted": False}],
        **hints,
    )

    load(
        pipeline,
        [
            {"id": 1, "lsn": 4, "v": "a4", "deleted": False},
            {"id": 1, "lsn": 2, "v": "a2", "deleted": False},
            {"id": 1, "lsn": 3, "deleted": True},
            {"id": 2, "lsn": 2, "v": "b2", "deleted": False},
            {"id": 2, "lsn": 3, "deleted": True},
        ],
        **hints,
    )

    assert project(pipeline, "items", "id", "lsn", "v") == [(1, 4, "a4")]


def change_stream(keys: int = 30, seed: int = 7) -> list[dict[str, Any]]:
    """Inserts, updates and hard deletes (and re-inserts) of ``keys`` records, in arrival
    order; every event of a key has a higher lsn than the one before it."""
    rng = random.Random(seed)
    per_key: dict[int, list[dict[str, Any]]] = {}
    for key in range(keys):
        events = []
        alive = False
        for step in range(rng.randint(1, 6)):
            if alive and rng.random() < 0.3:
                events.append({"id": key, "deleted": True})
                alive = False
            else:
                events.append(
                    {"id": key, "v": f"k{key}-s{step}", "w": rng.randint(0, 1000), "deleted": False}
                )
                alive = True
        per_key[key] = events
    # interleave the keys' events; lsn is global and so increasing per key
    stream: list[dict[str, Any]] = []
    cursors = {key: 0 for key in per_key}
    while cursors:
        key = rng.choice(sorted(cursors))
        event = dict(per_key[key][cursors[key]], lsn=len(stream) + 1)
        stream.append(event)
        cursors[key] += 1
        if cursors[key] == len(per_key[key]):
            del cursors[key]
    return stream


def final_state(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last: dict[int, dict[str, Any]] = {}
    for event in stream:
        last[event["id"]] = event
    return sorted((e for e in last.values() if not e["deleted"]), key=lambda e: e["id"])


def split(events: list[dict[str, Any]], sizes: Sequence[int]) -> list[list[dict[str, Any]]]:
    chunks, start = [], 0
    for size in sizes:
        chunks.append(events[start : start + size])
        start += size
    assert start == len(events)
    return chunks


@pytest.mark.parametrize(
    ("strategy", "form"), [("delete-insert", "hint"), ("upsert", "option")], ids=["delete-insert", "upsert"]
)
def test_sequence_by_shuffled_change_stream_gives_the_table_of_ordered_arrival(
    make_pipeline: Any, strategy: str, form: str
) -> None:
    stream = change_stream()
    assert len(stream) > 60 and any(e["deleted"] for e in stream)
    hints = sequenced(strategy, form)

    in_order = make_pipeline()
    third = len(stream) // 3
    for chunk in split(stream, [third, third, len(stream) - 2 * third]):
        load(in_order, chunk, **hints)

    shuffled_events = list(stream)
    random.Random(20240501).shuffle(shuffled_events)
    shuffled = make_pipeline()
    sizes = [len(stream) // 5] * 4
    sizes.append(len(stream) - sum(sizes))
    for chunk in split(shuffled_events, sizes):
        load(shuffled, chunk, **hints)

    expected = [{k: e[k] for k in ("id", "v", "w", "deleted", "lsn")} for e in final_state(stream)]
    for read in READERS:
        ordered_rows = sorted(user_columns(read(in_order, "items")), key=lambda r: r["id"])
        shuffled_rows = sorted(user_columns(read(shuffled, "items")), key=lambda r: r["id"])
        assert shuffled_rows == ordered_rows, read.__name__
        assert ordered_rows == expected, read.__name__


# -- schema of merge tables -----------------------------------------------------------------------
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_new_column_in_a_later_merge_load_evolves_the_table(pipeline: sl.Pipeline, strategy: str) -> None:
    hints = strategy_hints(strategy)
    load(pipeline, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], **hints, execution_time=T1)

    if strategy == "scd2":
        load(
            pipeline,
            [{"id": 1, "v": "a", "extra": "x"}, {"id": 2, "v": "b", "extra": "y"}],
            **hints,
            execution_time=T2,
        )
        expected = [
            {"id": 1, "v": "a", "extra": None, VALID_FROM: n(T1), VALID_TO: n(T2)},
            {"id": 2, "v": "b", "extra": None, VALID_FROM: n(T1), VALID_TO: n(T2)},
            {"id": 1, "v": "a", "extra": "x", VALID_FROM: n(T2), VALID_TO: None},
            {"id": 2, "v": "b", "extra": "y", VALID_FROM: n(T2), VALID_TO: None},
        ]
    else:
        load(
            pipeline,
            [{"id": 2, "v": "b2", "extra": "x"}, {"id": 3, "v": "c", "extra": "y"}],
            **hints,
            execution_time=T2,
        )
        kept = (
            {"id": 2, "v": "b", "extra": None}
            if strategy == "insert-only"
            else {"id": 2, "v": "b2", "extra": "x"}
        )
        expected = [{"id": 1, "v": "a", "extra": None}, kept, {"id": 3, "v": "c", "extra": "y"}]
    assert_table(pipeline, "items", expected)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_value_of_a_conflicting_type_lands_in_a_variant_column(make_pipeline: Any, strategy: str) -> None:
    """With destructive changes allowed, the variant-column rule applies to every strategy."""
    pipeline = make_pipeline(on_destructive_change="allow")
    hints = strategy_hints(strategy)
    load(pipeline, [{"id": 1, "v": 10}, {"id": 2, "v": 20}], **hints, execution_time=T1)

    if strategy == "scd2":
        load(pipeline, [{"id": 1, "v": "text"}, {"id": 2, "v": 20}], **hints, execution_time=T2)
        expected = [
            {"id": 1, "v": 10, "v__v_text": None, VALID_FROM: n(T1), VALID_TO: n(T2)},
            {"id": 1, "v": None, "v__v_text": "text", VALID_FROM: n(T2), VALID_TO: None},
            {"id": 2, "v": 20, "v__v_text": None, VALID_FROM: n(T1), VALID_TO: None},
        ]
    elif strategy == "insert-only":
        load(pipeline, [{"id": 1, "v": "ignored"}, {"id": 3, "v": "text"}], **hints, execution_time=T2)
        expected = [
            {"id": 1, "v": 10, "v__v_text": None},
            {"id": 2, "v": 20, "v__v_text": None},
            {"id": 3, "v": None, "v__v_text": "text"},
        ]
    else:
        load(pipeline, [{"id": 1, "v": "text"}, {"id": 3, "v": 30}], **hints, execution_time=T2)
        expected = [
            {"id": 1, "v": None, "v__v_text": "text"},
            {"id": 2, "v": 20, "v__v_text": None},
            {"id": 3, "v": 30, "v__v_text": None},
        ]
    assert_table(pipeline, "items", expected)
