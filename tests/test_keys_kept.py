"""A merge table's keys, given once, stay its keys in later runs that give none, as in dlt,
whose stored schema keeps them: a later merge run without keys merges on them instead of
appending duplicate keys.

Expected behaviour from dlt 1.31 on duckdb, run on the same items (noted per test).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import delta_rows

import sparkload as sl


def _rows(pipeline: sl.Pipeline, table: str = "t") -> list[tuple[object, ...]]:
    return sorted((r["id"], r["k"], r["n"]) for r in delta_rows(pipeline, table))


def _keys(pipeline: sl.Pipeline, table: str = "t") -> tuple[list[str], list[str]]:
    columns = pipeline.default_schema.tables[table]["columns"]
    return (
        [name for name, column in columns.items() if column.get("primary_key")],
        [name for name, column in columns.items() if column.get("merge_key")],
    )


def test_keys_given_as_column_hints_are_kept(pipeline: sl.Pipeline) -> None:
    # dlt: the second merge run, without keys, merges on id and k: one row (1, 1, 6).
    pipeline.run(
        [{"id": 1, "k": 1, "n": 5}],
        table_name="t",
        write_disposition="merge",
        columns={"id": {"primary_key": True}, "k": {"merge_key": True}},
    )
    pipeline.run([{"id": 1, "k": 1, "n": 6}], table_name="t", write_disposition="merge")
    assert _rows(pipeline) == [(1, 1, 6)]
    assert _keys(pipeline) == (["id"], ["k"])


def test_a_primary_key_given_to_run_is_kept(pipeline: sl.Pipeline) -> None:
    # dlt: run(primary_key="id") once, then a merge run without it merges: one row.
    pipeline.run([{"id": 1, "k": 1, "n": 5}], table_name="t", write_disposition="merge", primary_key="id")
    pipeline.run([{"id": 1, "k": 1, "n": 6}], table_name="t", write_disposition="merge")
    pipeline.run([{"id": 2, "k": 1, "n": 7}], table_name="t", write_disposition="merge")
    assert _rows(pipeline) == [(1, 1, 6), (2, 1, 7)]
    assert _keys(pipeline) == (["id"], [])


def test_keys_given_on_an_append_table_serve_a_later_merge(pipeline: sl.Pipeline) -> None:
    # dlt: primary_key given to an append run is kept in the schema; a later merge run
    # without keys merges on it.
    pipeline.run([{"id": 1, "k": 1, "n": 5}], table_name="t", primary_key="id")
    pipeline.run([{"id": 1, "k": 1, "n": 6}], table_name="t", write_disposition="merge")
    assert _rows(pipeline) == [(1, 1, 6)]


def test_a_kept_key_still_refuses_a_change_of_keys(pipeline: sl.Pipeline) -> None:
    # dlt replaces the keys; sparkload refuses a change of keys before any commit
    # (on_destructive_change="error"), and a run that gave none in between does not make
    # the table keyless.
    pipeline.run([{"id": 1, "k": 1, "n": 5}], table_name="t", write_disposition="merge", primary_key="id")
    pipeline.run([{"id": 1, "k": 1, "n": 6}], table_name="t", write_disposition="merge")
    changed = r"primary key changes from \['id'\] to \['k'\]"
    with pytest.raises(sl.exceptions.PipelineStepFailed, match=changed):
        pipeline.run([{"id": 1, "k": 2, "n": 7}], table_name="t", write_disposition="merge", primary_key="k")
    pipeline.drop_pending_packages()
    assert _rows(pipeline) == [(1, 1, 6)]


def test_a_run_giving_other_keys_merges_on_them_where_allowed(make_pipeline: Any) -> None:
    # dlt: the new key replaces the old one and is kept after: rows (1, 1, 5), (1, 2, 7).
    pipeline = make_pipeline(on_destructive_change="allow")
    pipeline.run([{"id": 1, "k": 1, "n": 5}], table_name="t", write_disposition="merge", primary_key="id")
    pipeline.run(
        [{"id": 1, "k": 2, "n": 6}],
        table_name="t",
        write_disposition="merge",
        primary_key="k",
    )
    pipeline.run([{"id": 1, "k": 2, "n": 7}], table_name="t", write_disposition="merge")
    assert _rows(pipeline) == [(1, 1, 5), (1, 2, 7)]
    assert _keys(pipeline) == (["k"], [])


def test_a_run_giving_the_primary_key_alone_keeps_the_merge_key(pipeline: sl.Pipeline) -> None:
    # dlt keeps each key until a load gives that key: the second merge, naming id alone,
    # still replaces the rows of k = 1, so (2, 1, 5) goes (tests/dlt_diff's
    # run_primary_key_keeps_the_tables_merge_key).
    pipeline.run(
        [{"id": 1, "k": 1, "n": 5}, {"id": 2, "k": 1, "n": 5}, {"id": 3, "k": 2, "n": 5}],
        table_name="t",
        write_disposition="merge",
        columns={"id": {"primary_key": True}, "k": {"merge_key": True}},
    )
    pipeline.run([{"id": 1, "k": 1, "n": 6}], table_name="t", write_disposition="merge", primary_key="id")
    assert _rows(pipeline) == [(1, 1, 6), (3, 2, 5)]
    assert _keys(pipeline) == (["id"], ["k"])


def test_an_upsert_after_a_merge_key_matches_by_the_primary_key_alone(pipeline: sl.Pipeline) -> None:
    # dlt's upsert leaves the merge key out of its statement: the rows of k = 1 it does not
    # name stay (tests/dlt_diff's upsert_after_a_recorded_merge_key).
    pipeline.run(
        [{"id": 1, "k": 1, "n": 5}, {"id": 2, "k": 1, "n": 5}],
        table_name="t",
        write_disposition="merge",
        columns={"id": {"primary_key": True}, "k": {"merge_key": True}},
    )
    pipeline.run(
        [{"id": 1, "k": 1, "n": 6}],
        table_name="t",
        write_disposition={"disposition": "merge", "strategy": "upsert"},
        primary_key="id",
    )
    assert _rows(pipeline) == [(1, 1, 6), (2, 1, 5)]
    # The upsert's load forgot the merge key, as dlt's does: a later delete-insert merge
    # naming id alone merges on id.
    pipeline.run([{"id": 3, "k": 1, "n": 7}], table_name="t", write_disposition="merge", primary_key="id")
    assert _rows(pipeline) == [(1, 1, 6), (2, 1, 5), (3, 1, 7)]


def test_keys_of_the_resource_are_unchanged(pipeline: sl.Pipeline) -> None:
    # dlt: a resource declaring its key merges on it every run: one row.
    @sl.resource(name="t", write_disposition="merge", primary_key="id")
    def items(rows: list[dict[str, int]]) -> object:
        yield from rows

    pipeline.run(items([{"id": 1, "k": 1, "n": 5}]))
    pipeline.run(items([{"id": 1, "k": 1, "n": 6}]))
    assert _rows(pipeline) == [(1, 1, 6)]
    assert _keys(pipeline) == (["id"], [])


def test_a_nested_table_follows_the_kept_root_key(pipeline: sl.Pipeline) -> None:
    # dlt: the root keeps its key (the nested table has none); the merge replaces the root
    # row and its nested rows: t (1, 1, 6), t__sub [2].
    first = [{"id": 1, "k": 1, "n": 5, "sub": [{"x": 1}]}]
    pipeline.run(first, table_name="t", write_disposition="merge", primary_key="id")
    pipeline.run([{"id": 1, "k": 1, "n": 6, "sub": [{"x": 2}]}], table_name="t", write_disposition="merge")
    assert _rows(pipeline) == [(1, 1, 6)]
    assert [r["x"] for r in delta_rows(pipeline, "t__sub")] == [2]
    assert _keys(pipeline) == (["id"], [])
    assert _keys(pipeline, "t__sub") == ([], [])


def test_a_run_without_a_disposition_appends_and_keeps_the_keys(pipeline: sl.Pipeline) -> None:
    # dlt: a run without write_disposition appends (1, 2, 7) and keeps the key in the
    # schema; a merge run after it merges on id again.
    pipeline.run([{"id": 1, "k": 1, "n": 5}], table_name="t", write_disposition="merge", primary_key="id")
    pipeline.run([{"id": 1, "k": 2, "n": 7}], table_name="t")
    assert _rows(pipeline) == [(1, 1, 5), (1, 2, 7)]
    pipeline.run([{"id": 1, "k": 3, "n": 8}], table_name="t", write_disposition="merge")
    assert _rows(pipeline) == [(1, 3, 8)]


def test_a_refresh_dropping_the_table_forgets_the_keys(pipeline: sl.Pipeline) -> None:
    # dlt: refresh="drop_resources" drops the table from the schema with its keys: a later
    # merge run without keys has none to merge on, and appends.
    pipeline.run([{"id": 1, "k": 1, "n": 5}], table_name="t", write_disposition="merge", primary_key="id")
    pipeline.run([{"id": 1, "k": 1, "n": 6}], table_name="t", refresh="drop_resources")
    pipeline.run([{"id": 1, "k": 1, "n": 7}], table_name="t", write_disposition="merge")
    assert _rows(pipeline) == [(1, 1, 6), (1, 1, 7)]


def test_keys_given_as_column_hints_each_run_merge(pipeline: sl.Pipeline) -> None:
    # dlt: a column hinted primary_key is the table's key: the second run merges on it.
    for n in (5, 6):
        pipeline.run(
            [{"id": 1, "k": 1, "n": n}],
            table_name="t",
            write_disposition="merge",
            columns={"id": {"primary_key": True}},
        )
    assert _rows(pipeline) == [(1, 1, 6)]
