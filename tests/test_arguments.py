"""No dlt argument is silently ignored: each is implemented, accepted as a no-op, or refused
with a TypeError naming it and the sparkload way (sparkload/common/dlt_arguments.py)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.common import dlt_arguments
from sparkload.extract.hints import ResourceHintArgs, TableHintArgs
from sparkload.extract.resource import Resource
from sparkload.pipeline.pipeline import Pipeline

# dlt 1.31's parameters, read with inspect.signature in its virtualenv.
DLT_SIGNATURES = {
    dlt_arguments.PIPELINE: [
        "pipeline_name", "pipelines_dir", "pipeline_salt", "destination", "staging", "dataset_name",
        "import_schema_path", "export_schema_path", "full_refresh", "dev_mode", "refresh", "progress",
        "_impl_cls",
    ],
    dlt_arguments.RESOURCE: [
        "data", "name", "table_name", "max_table_nesting", "write_disposition", "columns",
        "primary_key", "merge_key", "schema_contract", "table_format", "file_format", "references",
        "nested_hints", "selected", "spec", "parallelized", "incremental", "_impl_cls", "section",
        "_base_spec", "standalone", "data_from",
    ],
    dlt_arguments.SOURCE: [
        "func", "name", "section", "max_table_nesting", "root_key", "schema", "schema_contract",
        "spec", "parallelized", "_impl_cls",
    ],
    dlt_arguments.TRANSFORMER: [
        "f", "data_from", "name", "table_name", "max_table_nesting", "write_disposition", "columns",
        "primary_key", "merge_key", "schema_contract", "table_format", "file_format", "references",
        "nested_hints", "selected", "spec", "parallelized", "section", "standalone", "_impl_cls",
    ],
    dlt_arguments.APPLY_HINTS: [
        "table_name", "parent_table_name", "write_disposition", "columns", "primary_key", "merge_key",
        "incremental", "schema_contract", "additional_table_hints", "table_format", "file_format",
        "references", "create_table_variant", "nested_hints",
    ],
    dlt_arguments.RUN: [
        "data", "destination", "staging", "dataset_name", "credentials", "table_name",
        "write_disposition", "columns", "primary_key", "schema", "loader_file_format", "table_format",
        "schema_contract", "refresh",
    ],
    dlt_arguments.EXTRACT: [
        "data", "table_name", "parent_table_name", "write_disposition", "columns", "primary_key",
        "schema", "max_parallel_items", "workers", "table_format", "schema_contract", "refresh",
        "loader_file_format",
    ],
}  # fmt: skip

SPARKLOAD_FUNCTIONS = {
    dlt_arguments.PIPELINE: (sl.pipeline, frozenset()),
    dlt_arguments.RESOURCE: (sl.resource, ResourceHintArgs.__optional_keys__),
    dlt_arguments.SOURCE: (sl.source, frozenset()),
    dlt_arguments.TRANSFORMER: (sl.transformer, ResourceHintArgs.__optional_keys__),
    dlt_arguments.APPLY_HINTS: (Resource.apply_hints, ResourceHintArgs.__optional_keys__),
    dlt_arguments.RUN: (Pipeline.run, TableHintArgs.__optional_keys__),
    dlt_arguments.EXTRACT: (Pipeline.extract, TableHintArgs.__optional_keys__),
}


@pytest.mark.parametrize("caller", sorted(DLT_SIGNATURES))
def test_every_dlt_argument_has_a_decision(caller: str) -> None:
    """Implemented (sparkload's signature or hint keywords), accepted or refused: nothing
    falls through to silence."""
    function, hint_keywords = SPARKLOAD_FUNCTIONS[caller]
    implemented = set(inspect.signature(function).parameters) | hint_keywords
    undecided = [
        name
        for name in DLT_SIGNATURES[caller]
        if name not in implemented
        and name not in dlt_arguments.ACCEPTED[caller]
        and name not in dlt_arguments.REFUSED[caller]
    ]
    assert undecided == []


@pytest.mark.parametrize("keyword", ["schema_contract", "expectations", "on_violation"])
def test_hint_keywords_are_refused_where_nothing_takes_them(keyword: str) -> None:
    """A pipeline has no contract or expectations of its own (dlt's pipeline() takes none),
    and a source takes a contract but no expectations: given there, they would be dropped."""
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
        sl.pipeline("p", destination="lake", **{keyword: "freeze"})
    if keyword != "schema_contract":
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
            sl.source(**{keyword: "warn"})


def test_no_function_swallows_unknown_keywords() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        sl.pipeline("p", destination="lake", bogus=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        sl.source(bogus=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        sl.resource([{"a": 1}], name="r", bogus=1)  # type: ignore[call-arg]


@pytest.mark.parametrize("name", ["duckdb", "postgres", "filesystem", "dlt.destinations.duckdb"])
def test_a_dlt_destination_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """It used to write Delta tables into a folder named after the destination."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match=r"sparkload loads Delta Lake: use .*sl\.destinations\.delta\(path\)"):
        sl.pipeline("p", destination=name, pipelines_dir=str(tmp_path / "pipelines"))
    assert not (tmp_path / name).exists()
    assert not (tmp_path / "pipelines").exists()


def test_a_path_named_like_a_destination_is_a_folder(make_pipeline: Any, tmp_path: Path) -> None:
    pipeline = make_pipeline(destination=str(tmp_path / "duckdb"))
    pipeline.run([{"id": 1}], table_name="t")
    assert user_columns(delta_rows(pipeline, "t")) == [{"id": 1}]


def test_pipeline_arguments(make_pipeline: Any) -> None:
    with pytest.raises(TypeError, match="full_refresh is dlt's old name for dev_mode"):
        make_pipeline(full_refresh=True)
    with pytest.raises(TypeError, match="staging=: sparkload stages load packages"):
        make_pipeline(staging="filesystem")
    make_pipeline(pipeline_salt="salt")  # dlt's anonymization salt: sparkload hashes no data


def test_resource_and_transformer_arguments() -> None:
    with pytest.raises(
        TypeError, match=r"resource\(\): sparkload does not take dlt's file_format=: .*NDJSON"
    ):
        sl.resource([{"a": 1}], name="r", file_format="parquet")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="table_format='iceberg' is not taken"):
        sl.resource([{"a": 1}], name="r", table_format="iceberg")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="@sl.transformer"):
        sl.resource([{"a": 1}], name="r", data_from=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="references=: sparkload's schema records no references"):
        sl.transformer(lambda item: item, data_from=None, references=[])  # type: ignore[call-arg]
    made = sl.resource([{"a": 1}], name="r", table_format="delta", standalone=True)  # type: ignore[call-arg]
    assert made.name == "r"


def test_source_arguments() -> None:
    with pytest.raises(TypeError, match="schema=: a sparkload pipeline has one schema"):
        sl.source(schema=object())
    with pytest.raises(TypeError, match="section=: sparkload looks configuration up"):
        sl.source(section="mine")

    @sl.source(parallelized=True)
    def both() -> Any:
        return [sl.resource([{"a": 1}], name="a"), sl.resource([{"b": 1}], name="b")]

    assert [r.parallelized for r in both().resources.values()] == [True, True]


def test_apply_hints_arguments() -> None:
    made = sl.resource([{"a": 1}], name="r")
    with pytest.raises(TypeError, match="parent_table_name=: nested tables follow the data"):
        made.apply_hints(parent_table_name="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="create_table_variant=: "):
        made.apply_hints(create_table_variant=True)  # type: ignore[call-arg]
    made.apply_hints(table_format="delta", table_name="t")  # type: ignore[call-arg]
    assert made.table_name == "t"


def test_run_and_extract_arguments(make_pipeline: Any) -> None:
    pipeline = make_pipeline()
    for keyword, way in [
        ("destination", "give it to sl.pipeline"),
        ("dataset_name", "give it to sl.pipeline"),
        ("credentials", "Spark session's credentials"),
        ("loader_file_format", "NDJSON"),
        ("schema", "one schema"),
    ]:
        with pytest.raises(
            TypeError, match=rf"Pipeline.run\(\): sparkload does not take dlt's {keyword}=: .*{way}"
        ):
            pipeline.run([{"id": 1}], table_name="t", **{keyword: "x"})
    with pytest.raises(TypeError, match="parent_table_name"):
        pipeline.extract([{"id": 1}], table_name="t", parent_table_name="x")  # type: ignore[call-arg]
    assert not pipeline.destination_dataset.table_names()
    pipeline.extract([{"id": 1}], table_name="t", workers=4, max_parallel_items=8)  # type: ignore[call-arg]
    pipeline.run(table_format="delta")  # type: ignore[call-arg]
    assert user_columns(delta_rows(pipeline, "t")) == [{"id": 1}]
    with pytest.raises(TypeError, match="table_format='iceberg'"):
        pipeline.run([{"id": 2}], table_name="t", table_format="iceberg")  # type: ignore[call-arg]
