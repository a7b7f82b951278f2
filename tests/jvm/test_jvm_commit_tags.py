"""Delta on Apache Spark: a MERGE commit carries its own load's id in commitInfo.userMetadata,
also while another load on the same session has set its tag (the tag is a session option,
shared by every thread on the session). A commit tagged with another load's id would read
as that load's, and "already committed?" would skip the other load's merge. Runs with
``--engine=spark``."""

from __future__ import annotations

import threading

from conftest import delta_history

import sparkload as sl
from sparkload.common.system_columns import LOAD_ID
from sparkload.engine.settings import session_settings
from sparkload.load import merge_sql

USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


def test_a_merge_is_tagged_with_its_own_load_while_another_loads_tag_is_set(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": "a"}], table_name="t", write_disposition="merge", primary_key="id")
    spark = pipeline.spark
    # Another load on this session, in another thread, has its tag set while this one merges.
    other_set, merged = threading.Event(), threading.Event()

    def other_load() -> None:
        with session_settings(spark, {USER_METADATA: "1700000000.1"}):
            other_set.set()
            merged.wait(timeout=600)

    other = threading.Thread(target=other_load)
    other.start()
    try:
        assert other_set.wait(timeout=60)
        table = pipeline.destination_dataset.table("t")
        rows = spark.createDataFrame([(2, "b", "1700000000.2")], f"id long, v string, {LOAD_ID} string")
        source = merge_sql.source_of(table, rows)
        on = merge_sql.columns_match(["id"])
        merge_sql.merge_into(table, source, on, [merge_sql.when_not_matched_insert_all()], "1700000000.2")
    finally:
        merged.set()
        other.join()
    newest = delta_history(pipeline, "t")[0]
    assert newest["operation"] == "MERGE"
    assert newest["userMetadata"] == "1700000000.2"
    # and the session's own value is back once both are done
    assert spark.conf.get(USER_METADATA, None) is None
