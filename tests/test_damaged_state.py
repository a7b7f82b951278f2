"""Damaged working folders and packages, a deleted destination, and threads sharing what a
process holds once: each fails with an error that names the file (or dataset) and the way
out, or recovers on its own where the destination holds what was lost, and no table
changes before the error.

Files are damaged on disk as a crash, a full disk or a careless hand would: a JSON file
truncated, a staged NDJSON file cut mid-line or missing lines, a normalized Parquet file
truncated or deleted, the dataset folder deleted.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import shutil
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import delta_rows, delta_version

import sparkload as sl
from sparkload.common.tags import TAG_DATE, TAG_STRING
from sparkload.extract import serialize

ROWS = [{"id": i, "name": f"row {i}"} for i in range(100)]


def _cause(failure: pytest.ExceptionInfo[sl.PipelineStepFailed]) -> BaseException:
    cause = failure.value.__cause__
    assert cause is not None
    return cause


def _truncate(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


def _staged_json(pipeline: sl.Pipeline, load_id: str, table: str = "t") -> Path:
    files = sorted((pipeline.packages_dir / load_id / "extracted" / table / "json").glob("part-*"))
    assert len(files) == 1
    return files[0]


def _normalized_parquet(pipeline: sl.Pipeline, load_id: str, table: str = "t") -> Path:
    folder = Path(pipeline.dataset_uri) / "_sparkload_packages" / pipeline.pipeline_name / load_id
    files = sorted((folder / "normalized" / table).glob("*.parquet"))
    assert files
    return files[0]


def _loaded_once(make_pipeline: Any) -> sl.Pipeline:
    pipeline = make_pipeline()
    pipeline.run([{"id": -1, "name": "first"}], table_name="t")
    return pipeline


# -- the working folder's files --------------------------------------------------------------


def test_damaged_local_state_is_read_from_the_destination(
    make_pipeline: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """state.json is a cache of the destination's state: a truncated one is replaced by it,
    with a warning naming the file, and the run goes on."""
    pipeline = _loaded_once(make_pipeline)
    state_file = pipeline.working_dir / "state.json"
    _truncate(state_file, 12)
    again = make_pipeline(pipeline.pipeline_name)
    with caplog.at_level(logging.WARNING):
        again.run(ROWS[:2], table_name="t")
    assert str(state_file) in caplog.text and "damaged" in caplog.text
    assert len(delta_rows(again, "t")) == 3
    # The local copy is restored from the destination's.
    assert orjson.loads(state_file.read_bytes()) == orjson.loads(orjson.dumps(again.state))
    assert again.state["_state_version"] == 1


def test_damaged_pipeline_file_is_named_when_attaching(make_pipeline: Any, destination_dir: Path) -> None:
    pipeline = _loaded_once(make_pipeline)
    pipeline_file = pipeline.working_dir / "pipeline.json"
    _truncate(pipeline_file, 10)
    with pytest.raises(sl.DamagedFileError) as refused:
        sl.attach(pipeline.pipeline_name, pipelines_dir=pipeline.pipelines_dir)
    assert refused.value.path == str(pipeline_file)
    assert str(pipeline_file) in str(refused.value) and "destination" in str(refused.value)
    # Given both, attach does not need the file and writes it afresh.
    attached = sl.attach(
        pipeline.pipeline_name,
        pipelines_dir=pipeline.pipelines_dir,
        destination=sl.destinations.delta(destination_dir),
        dataset_name=pipeline.dataset_name,
    )
    assert attached.state["_state_version"] == 1
    assert orjson.loads(pipeline_file.read_bytes())["dataset_name"] == pipeline.dataset_name


def test_damaged_extract_manifest_names_the_package_and_how_to_drop_it(make_pipeline: Any) -> None:
    pipeline = _loaded_once(make_pipeline)
    load_id = pipeline.extract(ROWS, table_name="t")
    assert load_id is not None
    manifest = pipeline.packages_dir / load_id / "extract.json"
    _truncate(manifest, 20)
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(ROWS[:1], table_name="t")
    error = _cause(failed)
    assert isinstance(error, sl.DamagedFileError)
    assert (error.path, error.load_id) == (str(manifest), load_id)
    assert str(manifest) in str(failed.value) and "drop_pending_packages()" in str(failed.value)
    assert delta_version(pipeline, "t") == 0
    pipeline.drop_pending_packages()
    pipeline.run(ROWS, table_name="t")
    assert len(delta_rows(pipeline, "t")) == 101


def test_damaged_normalize_manifest_names_the_package(make_pipeline: Any) -> None:
    pipeline = _loaded_once(make_pipeline)
    load_id = pipeline.extract(ROWS, table_name="t")
    assert load_id is not None
    pipeline.normalize()
    manifest = Path(pipeline.dataset_uri) / "_sparkload_packages" / pipeline.pipeline_name / load_id
    _truncate(manifest / "normalize.json", 30)
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.load()
    error = _cause(failed)
    assert isinstance(error, sl.DamagedFileError) and error.load_id == load_id
    assert str(manifest / "normalize.json") in str(failed.value)
    assert "drop_pending_packages()" in str(failed.value)
    assert delta_version(pipeline, "t") == 0


# -- the destination deleted ------------------------------------------------------------------


def test_deleted_destination_is_named_not_blamed_on_overlapping_runs(make_pipeline: Any) -> None:
    pipeline = _loaded_once(make_pipeline)
    shutil.rmtree(pipeline.dataset_uri)
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(ROWS, table_name="t")
    error = _cause(failed)
    assert isinstance(error, sl.DestinationStateMissingError)
    assert (error.dataset, error.local_version) == (pipeline.dataset_uri, 1)
    message = str(failed.value)
    assert pipeline.dataset_uri in message and "deleted or moved" in message
    assert "pipeline.drop()" in message and "overlapped" not in message
    assert not Path(pipeline.dataset_uri).exists()
    # Starting over, as the message says: everything is loaded again.
    pipeline.drop()
    pipeline.run(ROWS, table_name="t")
    assert len(delta_rows(pipeline, "t")) == 100
    assert pipeline.state["_state_version"] == 1


def test_destination_deleted_under_a_pending_package_is_named(make_pipeline: Any) -> None:
    pipeline = _loaded_once(make_pipeline)
    pipeline.extract(ROWS, table_name="t")
    shutil.rmtree(pipeline.dataset_uri)
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run()
    assert isinstance(_cause(failed), sl.DestinationStateMissingError)
    assert "overlapped" not in str(failed.value) and pipeline.dataset_uri in str(failed.value)
    assert not (Path(pipeline.dataset_uri) / "t").exists()


# -- staged files changed after extract -------------------------------------------------------


def test_staged_file_cut_mid_line_is_named(make_pipeline: Any) -> None:
    pipeline = _loaded_once(make_pipeline)
    load_id = pipeline.extract(ROWS, table_name="t")
    assert load_id is not None
    staged = _staged_json(pipeline, load_id)
    _truncate(staged, staged.stat().st_size - 7)
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run()
    error = _cause(failed)
    assert isinstance(error, sl.DamagedFileError)
    assert (error.path, error.load_id, error.table) == (str(staged), load_id, "t")
    message = str(failed.value)
    assert str(staged) in message and "middle of a line" in message
    assert "drop_pending_packages()" in message
    assert delta_version(pipeline, "t") == 0 and len(delta_rows(pipeline, "t")) == 1


@pytest.mark.parametrize("step", ["normalize", "run"])
def test_staged_file_missing_lines_stops_before_any_commit(make_pipeline: Any, step: str) -> None:
    """Whole lines gone (a file cut at a line's end, lines deleted): the row count normalize
    takes is checked against the one extract recorded."""
    pipeline = _loaded_once(make_pipeline)
    load_id = pipeline.extract(ROWS, table_name="t")
    assert load_id is not None
    staged = _staged_json(pipeline, load_id)
    lines = staged.read_bytes().splitlines(keepends=True)
    staged.write_bytes(b"".join(lines[:40] + lines[50:]))
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.normalize() if step == "normalize" else pipeline.run()
    error = _cause(failed)
    assert isinstance(error, sl.DamagedFileError)
    assert (error.table, error.load_id, error.expected_rows, error.found_rows) == ("t", load_id, 100, 90)
    message = str(failed.value)
    assert "100" in message and "90" in message and load_id in message
    assert "drop_pending_packages()" in message
    assert delta_version(pipeline, "t") == 0 and len(delta_rows(pipeline, "t")) == 1
    assert pipeline.state["_state_version"] == 1


@pytest.mark.parametrize("damage", ["truncated", "deleted"])
def test_damaged_normalized_file_is_named_before_any_commit(make_pipeline: Any, damage: str) -> None:
    pipeline = _loaded_once(make_pipeline)
    load_id = pipeline.extract(ROWS, table_name="t")
    assert load_id is not None
    pipeline.normalize()
    parquet = _normalized_parquet(pipeline, load_id)
    if damage == "truncated":
        _truncate(parquet, 7)
    else:
        parquet.unlink()
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.load()
    error = _cause(failed)
    assert isinstance(error, sl.DamagedFileError)
    assert (error.path, error.load_id, error.table) == (str(parquet), load_id, "t")
    assert str(parquet) in str(failed.value) and "drop_pending_packages()" in str(failed.value)
    assert delta_version(pipeline, "t") == 0 and len(delta_rows(pipeline, "t")) == 1


# -- threads ----------------------------------------------------------------------------------


def test_reading_the_state_starts_no_engine(make_pipeline: Any) -> None:
    """``pipeline.state`` is the working folder's copy, as in dlt: a pipeline that only
    reads it does not start (or connect to) an engine."""
    loaded = _loaded_once(make_pipeline)
    reader = make_pipeline(loaded.pipeline_name)
    assert reader.state["_state_version"] == 1
    assert reader._spark is None


def test_second_thread_on_the_same_pipeline_is_refused(make_pipeline: Any) -> None:
    pipeline = make_pipeline()
    inside, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def slow_rows() -> Any:
        inside.set()
        assert release.wait(60)
        yield {"id": 1}

    def first_run() -> None:
        try:
            pipeline.run(slow_rows(), table_name="t")
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)

    thread = threading.Thread(target=first_run)
    thread.start()
    try:
        assert inside.wait(60)
        with pytest.raises(sl.PipelineLockedError, match="another process or thread"):
            pipeline.run([{"id": 2}], table_name="t")
    finally:
        release.set()
        thread.join(60)
    assert not failures
    assert [row["id"] for row in delta_rows(pipeline, "t")] == [1]
    # Once the first thread is done, the lock is free for any thread.
    pipeline.run([{"id": 3}], table_name="t")


class _DateThatWaits(datetime.date):
    """A date whose serialization waits until another thread has serialized tagged values:
    the other thread's tags then fall between this row's start and its check, every time."""

    others_done: threading.Event

    def isoformat(self) -> str:
        assert self.others_done.wait(60)
        return super().isoformat()


def _waiting_date(others_done: threading.Event) -> _DateThatWaits:
    value = _DateThatWaits(2024, 1, 2)
    value.others_done = others_done
    return value


def test_tagged_values_of_another_thread_do_not_unescape_a_nul_string() -> None:
    """Two threads serializing in lockstep: a string that starts with NUL stays escaped
    although the other thread tagged many values while its row was serialized."""
    others_done = threading.Event()
    lines: list[bytes] = []

    def nul_row() -> None:
        lines.append(serialize.dumps_row({"s": "\x00real", "d": _waiting_date(others_done)}))

    thread = threading.Thread(target=nul_row)
    thread.start()
    for day in range(1, 21):
        serialize.dumps_row({"d": datetime.date(2024, 1, day), "x": decimal.Decimal("1.5")})
    others_done.set()
    thread.join(60)
    assert orjson.loads(lines[0])["s"] == TAG_STRING + "\x00real"


def test_parallelized_resources_keep_nul_strings_beside_tagged_values(make_pipeline: Any) -> None:
    others_done = threading.Event()

    # Strings that, unescaped, would read back as dates.
    texts = [TAG_DATE + f"2024-01-{day:02d}" for day in range(1, 29)]

    @sl.resource(parallelized=True, table_name="nul")
    def nul_strings() -> Any:
        yield {"id": 0, "s": texts[0], "d": _waiting_date(others_done)}
        yield from ({"id": i, "s": text, "d": datetime.date(2024, 1, 2)} for i, text in enumerate(texts))

    @sl.resource(parallelized=True, table_name="tagged")
    def tagged_values() -> Any:
        for i in range(2000):
            yield {"id": i, "d": datetime.date(2024, 1, 1), "x": decimal.Decimal("1.5")}
        others_done.set()

    pipeline = make_pipeline()
    pipeline.run([nul_strings(), tagged_values()])
    rows = sorted(delta_rows(pipeline, "nul"), key=lambda row: (row["id"], str(row["s"])))
    assert [row["s"] for row in rows] == texts[:1] + texts
    assert {row["d"] for row in rows} == {datetime.date(2024, 1, 2)}
    assert len(delta_rows(pipeline, "tagged")) == 2000
