"""dlt's item marks: ``sl.mark.with_table_name``, ``sl.mark.with_hints``, ``sl.mark.make_hints``.

Every test loads through a real pipeline and reads the tables back with delta-rs. The
expected rows, tables and hints are what dlt 1.31 loaded (into duckdb) from the same
resources; each test says what dlt did.
"""

# The incremental is declared as a call default: that is dlt's API.
# ruff: noqa: B008

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.exceptions import ExtractError, PipelineStepFailed, ResourceError


def rows(pipeline: sl.Pipeline, table: str) -> list[dict[str, Any]]:
    """A table's rows without sparkload's columns, in a stable order."""
    return sorted(user_columns(delta_rows(pipeline, table)), key=repr)


def tables(pipeline: sl.Pipeline) -> list[str]:
    return sorted(p.name for p in Path(pipeline.dataset_uri).iterdir() if not p.name.startswith("_"))


def step_error(excinfo: pytest.ExceptionInfo[PipelineStepFailed]) -> BaseException:
    cause = excinfo.value.__cause__
    assert cause is not None
    return cause


def test_with_table_name_sends_items_to_their_table_with_the_resource_hints(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: table_b and table_c get the resource's merge disposition, primary key and
    # column hints (table_c gets the hinted `amount` column though no row has it); "Table B"
    # is normalized to table_b; a marked list is rows of one table; the second run merges.
    @sl.resource(primary_key="id", write_disposition="merge", columns={"amount": {"data_type": "decimal"}})
    def orders(run: int) -> Iterator[Any]:
        yield {"id": 1, "v": f"a{run}", "amount": 1}
        yield sl.mark.with_table_name({"id": 1, "w": f"b{run}", "amount": 2}, "Table B")
        yield sl.mark.with_table_name([{"id": 2, "w": "c"}, {"id": 3, "w": f"d{run}"}], "table_c")

    info = pipeline.run(orders(1))
    assert info.row_counts == {"orders": 1, "table_b": 1, "table_c": 2}
    pipeline.run(orders(2))

    assert tables(pipeline) == ["orders", "table_b", "table_c"]
    assert [(r["id"], r["v"], str(r["amount"])) for r in rows(pipeline, "orders")] == [
        (1, "a2", "1.000000000")
    ]
    assert [(r["id"], r["w"], str(r["amount"])) for r in rows(pipeline, "table_b")] == [
        (1, "b2", "2.000000000")
    ]
    assert rows(pipeline, "table_c") == [
        {"id": 2, "w": "c", "amount": None},
        {"id": 3, "w": "d2", "amount": None},
    ]


def test_marked_arrow_tables_frames_values_and_nested_lists_land_as_unmarked_ones(
    pipeline: sl.Pipeline,
) -> None:
    # dlt 1.31 (Arrow and values; a marked pandas frame is converted to Arrow as an unmarked
    # one is): arrow_b has rows 3, 4 and 6 (a record batch without `s`); e_s has `value`
    # rows 7, 8, 9; e_t's list becomes the nested table e_t__tags.
    @sl.resource
    def mixed() -> Iterator[Any]:
        yield pa.table({"id": [1, 2]})
        yield sl.mark.with_table_name(pa.table({"id": [3, 4], "s": ["x", "y"]}), "arrow_b")
        yield sl.mark.with_table_name(pd.DataFrame({"id": [5], "q": [1.5]}), "pandas_c")
        yield sl.mark.with_table_name(pa.record_batch({"id": [6]}), "arrow_b")
        yield sl.mark.with_table_name(7, "e_s")
        yield sl.mark.with_table_name([8, 9], "e_s")
        yield sl.mark.with_table_name({"id": 1, "tags": ["x", "y"]}, "e_t")

    info = pipeline.run(mixed())

    assert info.row_counts == {"mixed": 2, "arrow_b": 3, "pandas_c": 1, "e_s": 3, "e_t": 1, "e_t__tags": 2}
    assert rows(pipeline, "mixed") == [{"id": 1}, {"id": 2}]
    assert rows(pipeline, "arrow_b") == [{"id": 3, "s": "x"}, {"id": 4, "s": "y"}, {"id": 6, "s": None}]
    assert rows(pipeline, "pandas_c") == [{"id": 5, "q": 1.5}]
    assert rows(pipeline, "e_s") == [{"value": 7}, {"value": 8}, {"value": 9}]
    assert rows(pipeline, "e_t") == [{"id": 1}]
    assert sorted(r["value"] for r in delta_rows(pipeline, "e_t__tags")) == ["x", "y"]


def test_with_hints_changes_the_resource_hints_for_the_rest_of_the_run(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: the mark makes the resource's table a merge on `id` for the whole load (the
    # rows before the mark too), so the second run of the same resource leaves 3 rows; the
    # resource object keeps its declared hints, and a run without the mark appends again.
    @sl.resource(write_disposition="append")
    def events(run: int) -> Iterator[Any]:
        yield {"id": 1, "v": f"a{run}"}
        if run < 2:
            hints = sl.mark.make_hints(write_disposition="merge", primary_key="id")
            yield sl.mark.with_hints({"id": 2, "v": f"b{run}"}, hints)
        yield {"id": 3, "v": f"c{run}"}

    resource = events(0)
    pipeline.run(resource)
    assert resource.write_disposition == "append"
    assert resource.hints.primary_key == ()
    pipeline.run(events(1))
    assert sorted((r["id"], r["v"]) for r in rows(pipeline, "events")) == [(1, "a1"), (2, "b1"), (3, "c1")]

    pipeline.run(events(2))

    assert sorted((r["id"], r["v"]) for r in rows(pipeline, "events")) == [
        (1, "a1"),
        (1, "a2"),
        (2, "b1"),
        (3, "c1"),
        (3, "c2"),
    ]


def test_with_hints_naming_a_table_moves_the_resource_to_it(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: the marked item and every later one go to other_t, with the new disposition
    # (append) and the resource's primary key; the item before the mark stays in the
    # resource's table.
    @sl.resource(write_disposition="merge", primary_key="id")
    def moving() -> Iterator[Any]:
        yield {"id": 1, "v": "a"}
        hints = sl.mark.make_hints(table_name="Other T", write_disposition="append")
        yield sl.mark.with_hints({"id": 2, "v": "b"}, hints)
        yield {"id": 3, "v": "c"}
        yield {"id": 3, "v": "c"}

    info = pipeline.run(moving())

    assert info.row_counts == {"moving": 1, "other_t": 3}
    assert rows(pipeline, "moving") == [{"id": 1, "v": "a"}]
    # append: the repeated key is kept twice
    assert rows(pipeline, "other_t") == [{"id": 2, "v": "b"}, {"id": 3, "v": "c"}, {"id": 3, "v": "c"}]


def test_a_table_variant_has_its_own_hints(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: var_t starts from the resource's hints (`x` a decimal) and takes the
    # variant's: replace, primary key `k`; later items marked for var_t get the variant too;
    # the resource's own table keeps merge on `id`. The second run replaces var_t.
    @sl.resource(write_disposition="merge", primary_key="id", columns={"x": {"data_type": "decimal"}})
    def split(run: int) -> Iterator[Any]:
        yield {"id": 1, "v": f"a{run}", "x": 1}
        hints = sl.mark.make_hints(table_name="Var T", write_disposition="replace", primary_key="k")
        yield sl.mark.with_hints({"id": 2, "k": 5, "x": 2}, hints, create_table_variant=True)
        yield {"id": 3, "v": f"c{run}", "x": 3}
        yield sl.mark.with_table_name({"id": 4, "k": 6, "x": 4}, "var_t")
        if run == 1:
            yield sl.mark.with_table_name({"id": 5, "k": 7, "x": 5}, "Var T")

    info = pipeline.run(split(1))
    assert info.row_counts == {"split": 2, "var_t": 3}
    assert [(r["id"], r["v"], int(r["x"])) for r in rows(pipeline, "split")] == [(1, "a1", 1), (3, "c1", 3)]
    assert [(r["id"], r["k"], int(r["x"])) for r in rows(pipeline, "var_t")] == [
        (2, 5, 2),
        (4, 6, 4),
        (5, 7, 5),
    ]
    assert {str(r["x"]) for r in rows(pipeline, "var_t")} == {"2.000000000", "4.000000000", "5.000000000"}

    pipeline.run(split(2))

    assert sorted(r["v"] for r in rows(pipeline, "split")) == ["a2", "c2"]  # merged on id
    assert [r["k"] for r in rows(pipeline, "var_t")] == [5, 6]  # replaced


def test_pipe_steps_run_on_what_was_marked_and_keep_the_mark(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: add_map sees the dicts (each row of a marked list), add_filter drops id 4 from
    # the marked list, and what add_yield_map makes goes to the marked tables.
    seen: list[Any] = []

    @sl.resource
    def base() -> Iterator[Any]:
        yield {"id": 1}
        yield sl.mark.with_table_name({"id": 2}, "b")
        yield sl.mark.with_table_name([{"id": 3}, {"id": 4}], "c")
        yield sl.mark.with_hints({"id": 5}, sl.mark.make_hints(table_name="d"), create_table_variant=True)

    def mapped(item: dict[str, Any]) -> dict[str, Any]:
        seen.append(item)
        return {**item, "mapped": True}

    resource = (
        base()
        .add_map(mapped)
        .add_filter(lambda item: item["id"] != 4)
        .add_yield_map(lambda item: iter([item, {**item, "id": item["id"] * 10}]))
    )
    pipeline.run(resource)

    assert seen == [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": 5}]
    for table, ids in {"base": [1, 10], "b": [2, 20], "c": [3, 30], "d": [5, 50]}.items():
        assert rows(pipeline, table) == [{"id": i, "mapped": True} for i in ids]


def test_a_table_name_computed_per_item_wins_over_the_mark(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: a resource whose table name is a function of the item ignores
    # with_table_name: the marked item goes to dyn_y, no table `fixed` is made.
    @sl.resource(table_name=lambda item: f"dyn_{item['k']}")
    def dynamic() -> Iterator[Any]:
        yield {"k": "x", "id": 1}
        yield sl.mark.with_table_name({"k": "y", "id": 2}, "fixed")

    pipeline.run(dynamic())

    assert tables(pipeline) == ["dyn_x", "dyn_y"]
    assert rows(pipeline, "dyn_y") == [{"k": "y", "id": 2}]


def test_a_transformer_fed_a_marked_item_gets_the_item_and_passes_the_mark_on(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: the transformer receives the marked dict itself, and what it yields for it
    # goes to the parent's marked table, parent_b, beside the parent's row.
    @sl.resource
    def parent() -> Iterator[Any]:
        yield {"id": 1}
        yield sl.mark.with_table_name({"id": 2}, "parent_b")

    @sl.transformer(data_from=parent)
    def child(item: dict[str, Any]) -> Iterator[Any]:
        yield {"child_of": item}

    @sl.source
    def family() -> Any:
        return parent, child

    info = pipeline.run(family())

    assert info.row_counts == {"parent": 1, "child": 1, "parent_b": 2}
    assert rows(pipeline, "child") == [{"child_of__id": 1}]
    assert rows(pipeline, "parent_b") == [{"id": 2, "child_of__id": None}, {"id": None, "child_of__id": 2}]


def test_marked_tables_belong_to_the_resource_for_info_and_drop(make_pipeline: Any, tmp_path: Path) -> None:
    # dlt 1.31 records the resource as the owner of every table it dispatched to (its schema's
    # `resource`), and `dlt pipeline drop --resources` drops them with it.
    pipeline = make_pipeline("marks")

    @sl.resource
    def parent() -> Iterator[Any]:
        yield {"id": 1}
        yield sl.mark.with_table_name({"id": 2, "tags": ["a"]}, "parent_b")

    pipeline.run([parent, sl.resource([{"id": 3}], name="other")])
    assert pipeline.state["tables"] == {"marks": {"other": ["other"], "parent": ["parent", "parent_b"]}}

    info = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkload",
            "pipeline",
            "marks",
            "info",
            "--pipelines-dir",
            tmp_path / "pipelines",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, RUST_LOG="error"),
    )
    assert info.returncode == 0, info.stderr
    assert "  marks.parent: parent, parent_b, parent_b__tags\n" in info.stdout

    dropped = pipeline.drop_resources(["parent"])

    assert dropped.plan.tables == ["parent", "parent_b", "parent_b__tags"]
    assert tables(pipeline) == ["other"]


def test_a_marked_table_name_sparkload_keeps_for_itself_is_refused(pipeline: sl.Pipeline) -> None:
    # sparkload's own rule (dlt has no such check: it fails at load on `_dlt_loads`).
    @sl.resource
    def sneaky() -> Iterator[Any]:
        yield {"id": 1}
        yield sl.mark.with_table_name({"id": 2}, "_sparkload_pipeline_state")

    with pytest.raises(PipelineStepFailed) as excinfo:
        pipeline.run(sneaky())

    assert isinstance(step_error(excinfo), ExtractError)
    assert "_sparkload" in str(step_error(excinfo))
    assert not Path(pipeline.dataset_uri).exists() or tables(pipeline) == []


def test_marks_refuse_what_they_cannot_honour() -> None:
    # dlt 1.31 raises "Please provide `str` table name if you want to create a table variant
    # of hints" for a variant without a table name; hints sparkload has no equivalent for are
    # refused by name rather than ignored.
    with pytest.raises(ResourceError, match=r"create_table_variant=True\) needs a table_name"):
        sl.mark.with_hints({"id": 1}, sl.mark.make_hints(primary_key="id"), create_table_variant=True)
    with pytest.raises(ResourceError, match="'schema_contract' has no equivalent"):
        sl.mark.make_hints(schema_contract="freeze")
    with pytest.raises(ResourceError, match="'nested_hints' has no equivalent"):
        sl.mark.with_hints({"id": 1}, {"nested_hints": {}})
    with pytest.raises(ResourceError, match="write_disposition"):
        sl.mark.make_hints(write_disposition="upsert-everything")
    assert sl.mark.make_hints(table_format="delta") == {}  # what sparkload writes anyway


def test_an_incremental_filters_marked_items_by_what_they_wrap(pipeline: sl.Pipeline) -> None:
    # dlt 1.31 filters a marked item's rows by the cursor and moves the cursor with them.
    @sl.resource(primary_key="id")
    def stream(updated: Any = sl.sources.incremental("ts", initial_value=2)) -> Iterator[Any]:
        yield {"id": 1, "ts": 1}
        yield sl.mark.with_table_name({"id": 2, "ts": 5}, "b")
        yield sl.mark.with_table_name([{"id": 3, "ts": 0}, {"id": 4, "ts": 3}], "b")

    assert pipeline.run(stream()).row_counts == {"b": 2}
    assert sorted(row["id"] for row in delta_rows(pipeline, "b")) == [2, 4]
    cursor = pipeline.state["sources"][pipeline.pipeline_name]["resources"]["stream"]["incremental"]["ts"]
    assert cursor["last_value"] == 5
    assert pipeline.run(stream()).row_counts == {}


def test_a_replace_resource_empties_the_tables_it_routed_rows_to_before(pipeline: sl.Pipeline) -> None:
    # dlt 1.31 (duckdb): run 1 marks {"id": 1} to "other" and yields {"id": 2}; run 2 yields
    # nothing: both "r" and "other" are empty afterwards.
    runs = {"n": 0}

    @sl.resource(write_disposition="replace")
    def r() -> Iterator[Any]:
        if runs["n"] == 0:
            yield sl.mark.with_table_name({"id": 1, "tags": ["x"]}, "other")
            yield {"id": 2}

    pipeline.run(r())
    assert rows(pipeline, "other") == [{"id": 1}]
    assert rows(pipeline, "other__tags") != []
    runs["n"] = 1
    pipeline.run(r())
    assert rows(pipeline, "r") == []
    assert rows(pipeline, "other") == []
    assert rows(pipeline, "other__tags") == []


def test_a_replace_resource_with_a_table_name_function_empties_its_tables_yielded_nothing_for(
    pipeline: sl.Pipeline,
) -> None:
    # dlt 1.31 (duckdb): run 1 fills a and b; run 2 yields only {"t": "a", "id": 3}: a holds 3,
    # b is empty; run 3 yields nothing: both are empty.
    batches = [[{"t": "a", "id": 1}, {"t": "b", "id": 2}], [{"t": "a", "id": 3}], []]
    runs = {"n": 0}

    @sl.resource(write_disposition="replace", table_name=lambda row: row["t"])
    def r() -> Iterator[Any]:
        yield from batches[runs["n"]]

    pipeline.run(r())
    runs["n"] = 1
    pipeline.run(r())
    assert rows(pipeline, "a") == [{"id": 3, "t": "a"}]
    assert rows(pipeline, "b") == []
    runs["n"] = 2
    pipeline.run(r())
    assert rows(pipeline, "a") == []
    assert rows(pipeline, "b") == []
