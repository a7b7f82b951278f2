"""The HTML tables notebooks show for a LoadInfo, a Plan and a PipelineTrace
(``_repr_html_``), on the objects of real runs: what they list, and every value escaped, so
names, notes and values holding ``<script>`` and ``&`` show as text and add no element."""

# ruff: noqa: B008  (incrementals and intervals are declared as defaults, as in dlt)

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from html_reading import HtmlPage, read_html

import sparkload as sl

UTC = datetime.timezone.utc
START = datetime.datetime(2024, 9, 20, tzinfo=UTC)
NOW = datetime.datetime(2024, 9, 27, tzinfo=UTC)
MARKUP = "<script>alert(1)</script> & co"
# The tags sparkload's tables are made of: anything else came from a value left unescaped.
# No <style>: JupyterLab drops it from the outputs of a notebook it does not trust.
TABLE_TAGS = {"div", "table", "caption", "thead", "tbody", "tr", "th", "td", "br"}


def _page(html: str) -> HtmlPage:
    page = read_html(html)
    assert page.tags <= TABLE_TAGS, page.tags - TABLE_TAGS
    # Each cell aligned by its own style attribute, which JupyterLab keeps and which wins
    # over its stylesheet's right-aligned cells.
    assert page.not_left_aligned == []
    return page


def _daily(calls: list[Any] | None = None) -> Any:
    @sl.resource(name="daily")
    def daily(
        window: Any = sl.sources.intervals("ts", start=START, cron="@daily", batch_size=3),
    ) -> Iterator[Any]:
        moment = window.start
        while moment < window.end:
            yield {"ts": moment, "v": 1}
            moment += datetime.timedelta(days=1)

    return daily


def test_load_info_lists_every_table_with_rows_disposition_and_version(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 0}], table_name="users")  # the next load makes version 1

    info = pipeline.run(
        [{"id": 1, "langs": ["en", "fr"]}, {"id": 2, "langs": ["fi"]}],
        table_name="users",
        write_disposition="append",
    )
    page = _page(info._repr_html_())

    summary = page.tables[0].named()
    assert summary["pipeline"] == pipeline.pipeline_name
    assert summary["dataset"] == pipeline.dataset_uri
    assert summary["load ids"] == info.load_id
    assert [line.split()[0] for line in summary["took"].splitlines()] == ["extract", "normalize", "load"]
    tables = page.table("Tables")
    # One load: its id is in the summary, not on every row.
    assert tables.rows == [
        ["table", "rows", "disposition", "Delta version"],
        ["users", "2", "append", "1"],
        ["users__langs", "3", "append", "0"],
    ]
    assert page.captions() == ["", "Tables"]  # no notes, nothing dropped


def test_load_info_escapes_notes_and_reasons_and_lists_dropped_rows(pipeline: sl.Pipeline) -> None:
    @sl.resource(expectations={MARKUP: "amount >= 0"}, on_violation="drop")
    def orders() -> Iterator[Any]:
        # "<script>&" and "_scriptx" are one column name once normalized: the load keeps
        # both and notes how, quoting the key as given.
        yield [
            {"id": 1, "amount": 5, "<script>&": "odd", "_scriptx": "plain"},
            {"id": 2, "amount": -1, "<script>&": "odd", "_scriptx": "plain"},
        ]

    info = pipeline.run(orders())
    assert info.notes and "<script>&" in info.notes[0]
    html = info._repr_html_()
    page = _page(html)

    assert "<script>" not in html
    assert page.table("Notes").rows == [[note] for note in info.notes]
    assert page.table("Rows dropped or loaded with a warning").rows == [
        ["table", "reason", "outcome", "rows"],
        ["orders", f"expectation '{MARKUP}'", "dropped", "1"],
    ]
    assert page.table("Tables").column("rows") == ["1"]


def test_load_info_of_several_loads_has_a_row_per_table_and_load(pipeline: sl.Pipeline) -> None:
    info = pipeline.run(_daily(), execution_time=NOW)  # 7 days in batches of 3: three loads
    assert len(info.loads_ids) == 3
    page = _page(info._repr_html_())

    assert page.tables[0].named()["load ids"] == "\n".join(info.loads_ids)
    tables = page.table("Tables")
    assert tables.column("load id") == info.loads_ids
    assert tables.column("rows") == ["3", "3", "1"]
    assert tables.column("Delta version") == ["0", "1", "2"]


def test_load_info_of_a_run_with_nothing_to_load(pipeline: sl.Pipeline) -> None:
    info = pipeline.load()  # nothing extracted

    page = _page(info._repr_html_())
    assert page.tables[0].named()["load ids"] == "nothing loaded"
    assert page.captions() == [""]


def test_plan_lists_tables_with_changes_intervals_and_escaped_cursor_starts(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "name": "ada"}], table_name="users", primary_key="id", write_disposition="merge")

    @sl.resource(
        name="users", primary_key="id", write_disposition="merge", columns={"age": {"data_type": "bigint"}}
    )
    def users(since: Any = sl.sources.incremental("name", initial_value=MARKUP)) -> Iterator[Any]:
        yield {"id": 2, "name": "grace", "age": 36}

    plan = pipeline.plan([_daily(), users], execution_time=NOW)
    html = plan._repr_html_()
    page = _page(html)

    assert "<script>" not in html
    summary = page.tables[0].named()
    assert summary["pipeline"] == pipeline.pipeline_name
    assert summary["execution time"] == NOW.isoformat()
    assert page.table("Tables").rows == [
        ["table", "resource", "status", "disposition", "changes"],
        ["daily", "daily", "added", "merge/time-range", ""],
        ["users", "users", "changed", "merge/delete-insert", "+ age bigint"],
    ]
    assert page.table("Intervals to run").rows == [
        ["resource", "missing", "batches", "restated"],
        ["daily", "2024-09-20 – 2024-09-26", "3", "–"],
    ]
    assert page.table("Incremental cursors").rows == [["cursor", "starts at"], ["users.name", repr(MARKUP)]]


def test_a_plan_with_nothing_to_do_says_so(pipeline: sl.Pipeline) -> None:
    pipeline.run(_daily(), execution_time=NOW)

    plan = pipeline.plan(_daily(), execution_time=NOW)
    page = _page(plan._repr_html_())

    assert page.tables[0].named()["changes"] == "none: nothing to load"
    assert page.table("Tables").column("status") == ["unchanged"]
    assert page.table("Intervals to run").column("missing") == ["none"]


def test_trace_lists_the_steps_with_seconds_and_the_last_load(pipeline: sl.Pipeline) -> None:
    info = pipeline.run([{"id": 1}, {"id": 2}], table_name="items")
    trace = pipeline.last_trace
    assert trace is not None

    page = _page(trace._repr_html_())
    summary = page.tables[0].named()
    assert summary["pipeline"] == pipeline.pipeline_name
    assert summary["load ids"] == info.load_id
    steps = page.table("Steps")
    assert steps.column("step") == [t.step for t in trace.timings] == ["extract", "normalize", "load"]
    assert steps.column("seconds") == [f"{t.seconds:.2f}" for t in trace.timings]
    assert steps.column("status") == ["ok", "ok", "ok"]
    assert summary["status"] == "ok"
    assert page.table("Tables").rows[1] == ["items", "2", "append", "0"]


def test_trace_of_a_failed_run_shows_the_failed_step_and_its_error(pipeline: sl.Pipeline) -> None:
    @sl.resource(name="broken")
    def broken() -> Any:
        yield {"id": 1}
        raise ValueError("the <api> & its page 2 failed")

    with pytest.raises(sl.exceptions.PipelineStepFailed):
        pipeline.run(broken())
    trace = pipeline.last_trace
    assert trace is not None

    page = _page(trace._repr_html_())
    assert page.tables[0].named()["status"] == "failed"
    assert page.table("Steps").column("status") == ["failed"]
    where, error = page.table("Error in step extract").rows
    assert where == ["at resource 'broken'"]
    assert "ValueError: " in error[0] and "the <api> & its page 2 failed" in error[0]


def test_str_of_a_load_info_stays_short_text(pipeline: sl.Pipeline) -> None:
    info = pipeline.run([{"id": 1}, {"id": 2}], table_name="items")

    lines = str(info).splitlines()
    assert lines[0] == f"Pipeline {pipeline.pipeline_name} load {info.load_id} into {pipeline.dataset_uri}"
    assert lines[1].split() == ["items", "2", "rows", "append", "version", "0"]
    assert lines[2].startswith("  took extract")
    assert len(lines) == 3
