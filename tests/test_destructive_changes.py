"""on_destructive_change (SQLMesh's rules, 001_… "Destructive changes"): a load that would
change a column's type or a table's keys stops before any commit by default; ``warn`` and
``allow`` proceed with the variant-column rule and say so; additive changes always
proceed."""

from __future__ import annotations

import logging
from typing import Any

import deltalake
import pytest
from conftest import delta_rows

import sparkload as sl
from sparkload.exceptions import DestructiveChangeError, PipelineStepFailed, ResourceError


def version(pipeline: sl.Pipeline, table: str) -> int:
    return deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").version()


def columns(pipeline: sl.Pipeline, table: str) -> list[str]:
    return [f.name for f in deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema().fields]


def test_a_type_change_stops_the_load_before_any_commit_naming_table_column_and_types(
    pipeline: sl.Pipeline,
) -> None:
    pipeline.run([{"id": 1, "v": 10, "tags": ["a"]}], table_name="items")
    pipeline.run([{"k": 1}], table_name="other")
    before = {t: (version(pipeline, t), delta_rows(pipeline, t)) for t in ("items", "items__tags", "other")}

    @sl.source
    def both() -> Any:
        return [
            sl.resource([{"k": 2}], name="other"),
            sl.resource([{"id": 2, "v": "ten", "tags": ["b"]}], name="items"),
        ]

    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(both())
    assert isinstance(failed.value.__cause__, DestructiveChangeError)
    message = str(failed.value)
    assert "table 'items': column 'v' changes type from bigint to text" in message
    assert "nothing was written" in message
    # Neither the changed table nor the other table of the same load was touched.
    assert {t: (version(pipeline, t), delta_rows(pipeline, t)) for t in before} == before


def test_warn_proceeds_with_a_variant_column_and_says_so(make_pipeline: Any, caplog: Any) -> None:
    pipeline = make_pipeline(on_destructive_change="warn")
    pipeline.run([{"id": 1, "v": 10}], table_name="items")
    with caplog.at_level(logging.WARNING):
        info = pipeline.run([{"id": 2, "v": "ten"}], table_name="items")
    assert any("column 'v' changes type from bigint to text" in note for note in info.notes)
    assert any("destructive change allowed" in r.getMessage() for r in caplog.records)
    rows = sorted(delta_rows(pipeline, "items"), key=lambda r: r["id"])
    assert [(r["id"], r["v"], r["v__v_text"]) for r in rows] == [(1, 10, None), (2, None, "ten")]


def test_allow_on_the_resource_overrides_the_pipelines_error(pipeline: sl.Pipeline, caplog: Any) -> None:
    pipeline.run([{"id": 1, "v": 10}], table_name="items")
    with caplog.at_level(logging.WARNING):
        info = pipeline.run(sl.resource([{"id": 2, "v": "ten"}], name="items", on_destructive_change="allow"))
    assert any("allowed by on_destructive_change='allow'" in note for note in info.notes)
    assert not any("destructive" in r.getMessage() for r in caplog.records)  # allow is silent
    assert "v__v_text" in columns(pipeline, "items")


def test_additive_changes_always_proceed(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "amount": 1.5}], table_name="items")
    # a new column, and ints widening into the double column
    info = pipeline.run([{"id": 2, "amount": 3, "note": "new"}], table_name="items")
    assert info.notes == []
    assert "amount__v_bigint" not in columns(pipeline, "items")
    rows = sorted(delta_rows(pipeline, "items"), key=lambda r: r["id"])
    assert [(r["id"], r["amount"], r["note"]) for r in rows] == [(1, 1.5, None), (2, 3.0, "new")]


def test_an_existing_variant_column_is_no_new_change(make_pipeline: Any) -> None:
    """Once a change was accepted, later loads of the same kind proceed under ``error``."""
    make_pipeline("variants", on_destructive_change="allow").run(
        [{"id": 1, "v": 1}, {"id": 2, "v": "x"}], table_name="t"
    )
    strict = make_pipeline("variants")
    strict.run([{"id": 3, "v": "y"}], table_name="t")
    assert sorted(r["v__v_text"] or "" for r in delta_rows(strict, "t")) == ["", "x", "y"]


def test_a_replace_rebuilds_its_table_so_a_type_change_is_not_destructive(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": 10}], table_name="items", write_disposition="replace")
    pipeline.run([{"id": 1, "v": "ten"}], table_name="items", write_disposition="replace")
    assert [(r["id"], r["v"]) for r in delta_rows(pipeline, "items")] == [(1, "ten")]


@pytest.mark.parametrize("hint", ["primary_key", "merge_key"])
def test_changing_a_merge_tables_key_is_destructive(make_pipeline: Any, hint: str) -> None:
    pipeline = make_pipeline()
    rows = [{"id": 1, "region": "eu", "v": 1}]
    pipeline.run(rows, table_name="items", write_disposition="merge", **{hint: "id"})
    before = version(pipeline, "items")
    with pytest.raises(
        PipelineStepFailed,
        match=rf"table 'items': {hint.replace('_', ' ')} changes from \['id'\] to \['id', 'region'\]",
    ):
        pipeline.run(rows, table_name="items", write_disposition="merge", **{hint: ["id", "region"]})
    assert version(pipeline, "items") == before
    pipeline.drop_pending_packages()

    allowed = make_pipeline(pipeline.pipeline_name, on_destructive_change="allow")
    info = allowed.run(rows, table_name="items", write_disposition="merge", **{hint: ["id", "region"]})
    assert any("changes from ['id'] to ['id', 'region']" in note for note in info.notes)
    # the new keys are the recorded ones now: the same keys again are no change
    again = make_pipeline(pipeline.pipeline_name)
    assert (
        again.run(rows, table_name="items", write_disposition="merge", **{hint: ["id", "region"]}).notes == []
    )


def test_a_refused_package_loads_once_the_pipeline_allows_the_change(make_pipeline: Any) -> None:
    strict = make_pipeline("refused")
    strict.run([{"id": 1, "v": 10}], table_name="items")
    with pytest.raises(PipelineStepFailed):
        strict.run([{"id": 2, "v": "ten"}], table_name="items")
    assert strict.has_pending_data()
    make_pipeline("refused", on_destructive_change="warn").run()
    assert sorted(r["id"] for r in delta_rows(strict, "items")) == [1, 2]


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ResourceError, match="on_destructive_change must be one of"):
        sl.resource([{"a": 1}], name="r", on_destructive_change="sometimes")
