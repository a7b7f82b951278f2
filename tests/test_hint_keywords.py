"""The hint keywords (table_name, write_disposition, primary_key …), typed once as
TypedDicts and taken by the decorators, ``Resource.apply_hints`` and the pipeline's
``run``/``extract``/``plan``: what each accepts, and that a misspelt one is refused."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.extract.hints import ResourceHintArgs, TableHints


def test_the_resource_hint_keywords_are_those_table_hints_are_built_from() -> None:
    assert ResourceHintArgs.__optional_keys__ == set(inspect.signature(TableHints.build).parameters)


def test_the_decorators_and_apply_hints_set_every_hint() -> None:
    made = sl.resource(
        [{"id": 1}],
        name="rows",
        table_name="items",
        write_disposition="merge",
        primary_key="id",
        merge_key=["day"],
        columns={"id": {"data_type": "bigint"}},
        max_table_nesting=1,
        on_destructive_change="warn",
    )
    hints = made.hints
    assert (hints.table_name, hints.write_disposition.disposition) == ("items", "merge")
    assert (hints.primary_key, hints.merge_key, hints.max_table_nesting) == (("id",), ("day",), 1)
    assert (dict(hints.columns), hints.on_destructive_change) == ({"id": {"data_type": "bigint"}}, "warn")

    @sl.transformer(data_from=made, primary_key="id", write_disposition="replace")
    def doubled(item: dict[str, Any]) -> Any:
        yield {"id": item["id"] * 2}

    assert (doubled.hints.primary_key, doubled.write_disposition) == (("id",), "replace")
    made.apply_hints(primary_key=["id", "day"], table_name="others")
    assert (made.hints.primary_key, made.hints.table_name) == (("id", "day"), "others")


def test_resource_ignores_the_dlt_keywords_it_has_no_use_for() -> None:
    made = sl.resource([{"id": 1}], name="rows", schema_contract="evolve", primary_key="id")  # type: ignore[call-arg]
    assert made.hints.primary_key == ("id",)


@pytest.mark.parametrize(
    "call",
    [
        lambda pipeline: sl.resource([{"id": 1}], name="rows").apply_hints(primary_kye="id"),
        lambda pipeline: sl.transformer(lambda item: item, primary_kye="id"),
        lambda pipeline: pipeline.run([{"id": 1}], table_name="rows", primary_kye="id"),
        lambda pipeline: pipeline.extract([{"id": 1}], table_name="rows", primary_kye="id"),
        lambda pipeline: pipeline.plan([{"id": 1}], table_name="rows", primary_kye="id"),
        # a resource's own hint is not one run() applies to every resource
        lambda pipeline: pipeline.run([{"id": 1}], table_name="rows", max_table_nesting=1),
    ],
    ids=["apply_hints", "transformer", "run", "extract", "plan", "run-resource-hint"],
)
def test_a_keyword_that_is_no_hint_is_refused_as_python_refuses_it(
    pipeline: sl.Pipeline, call: Callable[[sl.Pipeline], Any]
) -> None:
    refused = r"\(\) got an unexpected keyword argument '(primary_kye|max_table_nesting)'"
    with pytest.raises(TypeError, match=refused):
        call(pipeline)
    assert pipeline.has_pending_data is False


def test_run_applies_its_hints_to_the_data(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": "a"}], table_name="items", write_disposition="merge", primary_key="id")
    pipeline.run([{"id": 1, "v": "b"}], table_name="items", write_disposition="merge", primary_key="id")
    assert user_columns(delta_rows(pipeline, "items")) == [{"id": 1, "v": "b"}]
