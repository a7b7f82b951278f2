"""The filesystem source against real files on disk: the listing (dlt's file items, globs,
pages, content) and the readers, which read CSV, JSON Lines and Parquet through the engine;
a folder that grows between runs and a file rewritten in place load incrementally by
modification date. Tables are read back with delta-rs."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.sources.filesystem import filesystem, read_csv, read_parquet, readers


def _write(path: Path, text: str, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    _write(root / "a.csv", "id,name\n1,ann\n2,bob\n", 1_700_000_000)
    _write(root / "b.csv", "id,name\n3,cy\n", 1_700_000_100)
    _write(root / "notes.txt", "not data\n")
    _write(root / "2024" / "c.csv", "id,name\n4,dee\n", 1_700_000_200)
    return root


def _items(resource: Any) -> list[dict[str, Any]]:
    return list(resource)


def test_the_listing_gives_dlts_file_items(folder: Path) -> None:
    [item] = _items(filesystem(str(folder), file_glob="a.csv"))
    assert item == {
        "file_url": f"file://{folder}/a.csv",
        "file_name": "a.csv",
        "relative_path": "a.csv",
        "mime_type": "text/csv",
        "encoding": None,
        "modification_date": datetime.datetime.fromtimestamp(1_700_000_000, datetime.timezone.utc),
        "size_in_bytes": len("id,name\n1,ann\n2,bob\n"),
    }
    [with_content] = _items(filesystem(f"file://{folder}", file_glob="a.csv", extract_content=True))
    assert with_content["file_content"] == b"id,name\n1,ann\n2,bob\n"


@pytest.mark.parametrize(
    ("glob", "expected"),
    [
        ("*", ["a.csv", "b.csv", "notes.txt"]),
        ("*.csv", ["a.csv", "b.csv"]),
        ("**/*.csv", ["2024/c.csv", "a.csv", "b.csv"]),
        ("2024/*.csv", ["2024/c.csv"]),
        ("*.json", []),
    ],
)
def test_globs_match_as_fsspec_does(folder: Path, glob: str, expected: list[str]) -> None:
    assert (
        sorted(item["relative_path"] for item in _items(filesystem(str(folder), file_glob=glob))) == expected
    )


def test_files_come_in_pages(folder: Path) -> None:
    pages = list(filesystem(str(folder), file_glob="**/*.csv", files_per_page=2).iter_pages())
    assert [len(page) for page in pages] == [2, 1]


def test_a_missing_folder_lists_nothing(tmp_path: Path) -> None:
    assert _items(filesystem(str(tmp_path / "nowhere"))) == []


def test_credentials_are_refused_with_the_sparkload_way(folder: Path) -> None:
    with pytest.raises(TypeError, match="Spark session"):
        filesystem(str(folder), credentials={"aws_access_key_id": "x"})


def test_csv_files_load_through_the_engine(pipeline: sl.Pipeline, folder: Path) -> None:
    info = pipeline.run((filesystem(str(folder), file_glob="**/*.csv") | read_csv()).with_name("people"))
    assert info.row_counts == {"people": 4}
    rows = sorted(user_columns(delta_rows(pipeline, "people")), key=lambda row: row["id"])
    assert rows == [
        {"id": 1, "name": "ann"},
        {"id": 2, "name": "bob"},
        {"id": 3, "name": "cy"},
        {"id": 4, "name": "dee"},
    ]


def test_reader_options_pass_through_and_a_file_name_column(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    _write(tmp_path / "semi" / "x.csv", "1;a\n2;b\n")
    reader = readers(str(tmp_path / "semi"), file_glob="*.csv").read_csv(
        sep=";", header=False, file_name_column="source_file"
    )
    pipeline.run(reader.with_name("semi"))
    rows = sorted(user_columns(delta_rows(pipeline, "semi")), key=lambda row: row["_c0"])
    assert [(row["_c0"], row["_c1"]) for row in rows] == [(1, "a"), (2, "b")]
    assert all(row["source_file"].endswith("/semi/x.csv") for row in rows)


def test_jsonl_and_parquet_files_load(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    _write(tmp_path / "j" / "e.jsonl", '{"id": 1, "tags": ["x", "y"]}\n{"id": 2, "tags": []}\n')
    pq.write_table(pa.table({"id": [7, 8], "amount": [1.5, 2.5]}), _write(tmp_path / "p" / "f.parquet", ""))
    pipeline.run(readers(str(tmp_path / "j"), file_glob="*.jsonl").read_jsonl().with_name("events"))
    pipeline.run(
        (filesystem(str(tmp_path / "p"), file_glob="*.parquet") | read_parquet()).with_name("amounts")
    )
    assert sorted(row["id"] for row in delta_rows(pipeline, "events")) == [1, 2]
    assert sorted(row["value"] for row in delta_rows(pipeline, "events__tags")) == ["x", "y"]
    assert sorted((row["id"], row["amount"]) for row in delta_rows(pipeline, "amounts")) == [
        (7, 1.5),
        (8, 2.5),
    ]


def test_a_growing_folder_loads_only_new_and_changed_files(pipeline: sl.Pipeline, folder: Path) -> None:
    def run() -> Any:
        files = filesystem(str(folder), file_glob="**/*.csv")
        files.apply_hints(incremental=sl.sources.incremental("modification_date"))
        reader = (files | read_csv(file_name_column="file")).with_name("people")
        reader.apply_hints(write_disposition="merge", primary_key="id")
        return pipeline.run(reader)

    assert run().row_counts == {"people": 4}
    assert run().row_counts == {}  # nothing new
    _write(folder / "d.csv", "id,name\n5,eve\n", 1_700_000_300)  # the folder grows
    _write(folder / "a.csv", "id,name\n1,ANN\n2,bob\n", 1_700_000_400)  # rewritten in place
    assert run().row_counts == {"people": 3}
    rows = {row["id"]: row["name"] for row in delta_rows(pipeline, "people")}
    assert rows == {1: "ANN", 2: "bob", 3: "cy", 4: "dee", 5: "eve"}


def test_the_files_example_runs_offline(tmp_path: Path) -> None:
    import subprocess
    import sys

    example = Path(__file__).parents[1] / "examples" / "files_csv.py"
    env = {
        **os.environ,
        "SPARKLOAD_EXAMPLE_DIR": str(tmp_path),
        "SPARKLOAD_PIPELINES_DIR": str(tmp_path / "p"),
    }
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    rows = deltalake_rows(tmp_path / "lake")
    assert rows == {1: 10.0, 2: 3.25, 3: 1.0}


def deltalake_rows(lake: Path) -> dict[int, float]:
    import deltalake

    [table] = [path for path in lake.glob("*/orders") if (path / "_delta_log").is_dir()]
    return {
        row["id"]: row["amount"] for row in deltalake.DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    }
