"""pipeline_step, which every pipeline step runs under: its timing, progress and the
PipelineStepFailed a failure becomes."""

from __future__ import annotations

import logging

import pytest

from sparkload.exceptions import PipelineStepFailed
from sparkload.pipeline.progress import Progress
from sparkload.pipeline.step import pipeline_step
from sparkload.pipeline.trace import PipelineTrace


def test_a_step_that_succeeds_is_timed_and_shows_its_progress(caplog: pytest.LogCaptureFixture) -> None:
    trace = PipelineTrace("p")
    with (
        caplog.at_level(logging.INFO, logger="sparkload.progress"),
        pipeline_step("load", "1.0", trace=trace, progress=Progress("log")),
    ):
        pass

    assert [timing.step for timing in trace.timings] == ["load"]
    assert trace.timings[0].seconds >= 0
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == "load started (load package 1.0)"
    assert messages[1].startswith("load finished: 0 tables in ")
    assert len(messages) == 2


def test_a_failure_is_cleaned_up_wrapped_with_its_advice_and_not_timed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    trace = PipelineTrace("p")
    cleaned: list[str] = []
    cause = ValueError("no such column")
    with (
        caplog.at_level(logging.INFO, logger="sparkload.progress"),
        pytest.raises(PipelineStepFailed) as failed,
        pipeline_step(
            "extract",
            "1.0",
            trace=trace,
            progress=Progress("log"),
            cleanup=lambda: cleaned.append("package"),
            advice=lambda error: f"it was a {type(error).__name__}",
        ),
    ):
        raise cause

    assert (
        str(failed.value) == "pipeline step 'extract' failed (load 1.0): no such column. it was a ValueError"
    )
    assert (failed.value.step, failed.value.load_id, failed.value.__cause__) == ("extract", "1.0", cause)
    assert cleaned == ["package"]
    assert trace.timings == []
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == "extract started (load package 1.0)"
    assert messages[1].startswith("extract failed after ")
    assert len(messages) == 2


def test_an_interrupt_passes_unwrapped_and_leaves_what_the_step_wrote() -> None:
    cleaned: list[str] = []
    with (
        pytest.raises(KeyboardInterrupt),
        pipeline_step("normalize", "1.0", cleanup=lambda: cleaned.append("package")),
    ):
        raise KeyboardInterrupt

    assert cleaned == []


def test_a_step_before_any_package_names_none() -> None:
    with (
        pytest.raises(PipelineStepFailed, match=r"^pipeline step 'extract' failed: bad hints$"),
        pipeline_step("extract", None),
    ):
        raise ValueError("bad hints")
