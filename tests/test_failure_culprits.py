"""A failed run names what failed: the resource, the table (and column where known) and, for
a source file, the file, in the error, in the trace (``pipeline.last_trace``, its HTML, the
saved trace.json) and in what ``sparkload pipeline <name> trace`` prints. An engine's own
message names a file by an engine path at best, never the table a load was committing, nor
which of a page of files it could not read."""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

import pytest
from cli_process import sparkload, succeeded
from html_reading import read_html

import sparkload as sl
from sparkload.exceptions import LoadError, UnreadableFileError
from sparkload.pipeline.trace_file import TRACE_FILE
from sparkload.sources.filesystem import filesystem, read_parquet


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def _cause(failure: pytest.ExceptionInfo[sl.PipelineStepFailed]) -> BaseException:
    assert failure.value.__cause__ is not None
    return failure.value.__cause__


def test_a_damaged_file_among_a_page_of_parquet_files_is_named(make_pipeline: Any, tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    for name in ("a", "c"):
        _write_parquet(files / f"{name}.parquet", [{"id": 1, "name": name}])
    (files / "b.parquet").write_bytes(b"PAR1 this is no footer")  # a copy cut short
    pipeline = make_pipeline()
    source = (filesystem(bucket_url=str(files), file_glob="*.parquet") | read_parquet()).with_name("orders")

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(source)

    cause = _cause(failure)
    assert isinstance(cause, UnreadableFileError)
    assert cause.file.endswith("/files/b.parquet") and cause.resource == "orders"
    assert f"file '{cause.file}' cannot be read as parquet" in str(failure.value)
    error = pipeline.last_trace.error
    assert error is not None
    assert (error.resource, error.file, error.table) == ("orders", cause.file, None)
    assert f"failed at: resource 'orders', file '{cause.file}'" in str(pipeline.last_trace)
    saved = json.loads((pipeline.working_dir / TRACE_FILE).read_text())["error"]
    assert (saved["resource"], saved["file"]) == ("orders", cause.file)
    html = read_html(pipeline.last_trace._repr_html_())
    assert html.table("Error in step extract").rows[0] == [f"at resource 'orders', file '{cause.file}'"]
    printed = succeeded(
        sparkload("pipeline", pipeline.pipeline_name, "trace", "--pipelines-dir", pipeline.pipelines_dir)
    )
    assert f"  at resource 'orders', file '{cause.file}'" in printed.splitlines()


def test_a_file_that_fails_only_when_its_rows_are_read_is_named(make_pipeline: Any, tmp_path: Path) -> None:
    """A Parquet file whose footer is sound and whose data is not: the page reads (only the
    footers are needed to plan it); staging its rows fails, and names it."""
    files = tmp_path / "files"
    files.mkdir()
    _write_parquet(files / "1.parquet", [{"id": 1, "text": "a"}])
    damaged = files / "2.parquet"
    _write_parquet(damaged, [{"id": i, "text": f"row {i} " * 20} for i in range(2000)])
    data = bytearray(damaged.read_bytes())
    data[64:4096] = b"\xff" * (4096 - 64)  # the first column chunk's pages, not the footer
    damaged.write_bytes(bytes(data))
    pipeline = make_pipeline()
    source = (filesystem(bucket_url=str(files), file_glob="*.parquet") | read_parquet()).with_name("people")

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(source)

    cause = _cause(failure)
    assert isinstance(cause, UnreadableFileError), cause
    assert cause.file.endswith("/files/2.parquet") and cause.kind == "parquet"
    # Found when the staged write failed, not when the page was read.
    assert any(frame.f_code.co_name == "_write_spark" for frame, _ in traceback.walk_tb(cause.__traceback__))
    assert pipeline.last_trace.error is not None and pipeline.last_trace.error.file == cause.file


def test_an_engine_failure_while_a_table_is_committed_names_the_table(make_pipeline: Any) -> None:
    pipeline = make_pipeline()
    pipeline.run(
        [{"id": i} for i in range(5)], table_name="things", write_disposition="merge", primary_key="id"
    )
    pipeline.run([{"id": 1}], table_name="others")
    pipeline.extract([{"id": 1}], table_name="things", write_disposition="merge", primary_key="id")
    pipeline.normalize()
    # The table's data files gone between normalize and load (a lifecycle rule, a hand's
    # rm): the engine fails reading a file of a path it does not relate to a table.
    table = Path(pipeline.dataset_uri.removeprefix("file://")) / "things"
    for data_file in table.glob("*.parquet"):
        data_file.unlink()

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.load()

    cause = _cause(failure)
    assert isinstance(cause, LoadError) and cause.table == "things"
    assert "table 'things': " in str(failure.value)
    assert pipeline.last_trace.error is not None and pipeline.last_trace.error.table == "things"
    assert "failed at: table 'things'" in str(pipeline.last_trace)
