"""Delta on Apache Spark: whether a load repeats a primary key is asked once, by a query of
the key alone, and only by a merge that needs the answer, as the plans Spark ran show.
Runs with ``--engine=spark``."""

from __future__ import annotations

import re
from typing import Any

from conftest import delta_rows

import sparkload as sl

# A physical plan (Spark's formatted explain) with an aggregate grouping rows by ``id``.
GROUPS_BY_ID = re.compile(r"^Keys \[1\]: \[id#\d+L?\]$", re.MULTILINE)


def executed_plans(spark: Any) -> list[str]:
    """The physical plan of every SQL execution the session has run so far, oldest first."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    return [str(executions.apply(i).physicalPlanDescription()) for i in range(executions.size())]


def plans_of_a_first_merge(pipeline: sl.Pipeline, write_disposition: Any) -> list[str]:
    before = len(executed_plans(pipeline.spark))
    rows = [{"id": i, "v": f"v{i}", "tags": ["a"]} for i in range(20)]
    pipeline.run(rows, table_name="t", write_disposition=write_disposition, primary_key="id")
    return executed_plans(pipeline.spark)[before:]


def test_a_deduplicating_merge_counts_the_keys_by_a_query_of_the_key_alone(pipeline: sl.Pipeline) -> None:
    """The profile of the columns groups no rows by the key (it did, with every column's
    counters, to count distinct keys inside its aggregate)."""
    grouped = [plan for plan in plans_of_a_first_merge(pipeline, "merge") if GROUPS_BY_ID.search(plan)]
    assert grouped, "the distinct keys were not counted"
    assert [plan for plan in grouped if re.search(r"\bv#\d+", plan)] == []


def test_a_merge_that_keeps_duplicates_never_groups_the_load_by_its_key(pipeline: sl.Pipeline) -> None:
    plans = plans_of_a_first_merge(pipeline, {"disposition": "merge", "deduplicated": False})
    assert [plan for plan in plans if GROUPS_BY_ID.search(plan)] == []
    assert len(delta_rows(pipeline, "t")) == 20
