"""The filesystem source against real files on disk: the listing (dlt's file items, globs,
pages, content) and the readers, which read CSV, JSON Lines and Parquet through the engine;
a folder that grows between runs and a file rewritten in place load incrementally by
modification date. Tables are read back with delta-rs."""

from __future__ import annotations

import datetime
import gzip
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.common.system_columns import SYSTEM_COLUMNS
from sparkload.sources.filesystem import filesystem, read_csv, read_jsonl, read_parquet, readers

# The engine sessions that run this file (noxfile.py says why).
pytestmark = [pytest.mark.cluster]


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


@pytest.mark.jvm
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


@pytest.mark.jvm
def test_reader_options_pass_through_and_a_file_name_column(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    _write(tmp_path / "semi" / "x.csv", "1;a\n2;b\n")
    reader = readers(str(tmp_path / "semi"), file_glob="*.csv").read_csv(
        sep=";", header=False, file_name_column="source_file"
    )
    pipeline.run(reader.with_name("semi"))
    rows = sorted(user_columns(delta_rows(pipeline, "semi")), key=lambda row: row["_c0"])
    assert [(row["_c0"], row["_c1"]) for row in rows] == [(1, "a"), (2, "b")]
    assert all(row["source_file"].endswith("/semi/x.csv") for row in rows)


@pytest.mark.jvm
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


def dlt_rows(files: list[Path], **pandas_kwargs: Any) -> list[dict[str, Any]]:
    """The rows dlt's ``read_csv`` loads from ``files``: each file read on its own by pandas
    (columns by the file's own header), its records together; a column a file lacks is NULL
    in its rows, as in the table dlt creates."""
    records: list[dict[str, Any]] = []
    for file in files:
        records += pd.read_csv(file, **pandas_kwargs).to_dict(orient="records")
    columns = {name for record in records for name in record}
    return _sorted_rows([{name: _none_for_nan(record.get(name)) for name in columns} for record in records])


def _none_for_nan(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def _sorted_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: sorted((k, repr(v)) for k, v in row.items()))


def _loaded(pipeline: sl.Pipeline, table: str) -> list[dict[str, Any]]:
    return _sorted_rows(user_columns(delta_rows(pipeline, table)))


@pytest.mark.jvm
def test_csv_columns_are_matched_by_name_not_by_position(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    files = [
        _write(tmp_path / "names" / "a.csv", "first,last\nann,lee\n"),
        _write(tmp_path / "names" / "b.csv", "last,first\nsmith,bob\n"),
        _write(tmp_path / "names" / "c.csv", "first,last\ncy,young\n"),  # read with a.csv
    ]
    pipeline.run((filesystem(str(tmp_path / "names"), file_glob="*.csv") | read_csv()).with_name("names"))
    assert _loaded(pipeline, "names") == dlt_rows(files)
    assert {row["first"]: row["last"] for row in delta_rows(pipeline, "names")} == {
        "ann": "lee",
        "bob": "smith",
        "cy": "young",
    }


@pytest.mark.jvm
def test_csv_files_with_other_columns_and_compressions_load_together(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    files = [
        _write(folder / "a.csv", "id,x\n1,a\n"),
        _write(folder / "b.csv", "id,y,amount\n2,b,1.5\n"),
    ]
    folder.joinpath("c.csv.gz").write_bytes(gzip.compress(b"amount,id\n2.5,3\n"))
    files.append(folder / "c.csv.gz")
    pipeline.run((filesystem(str(folder), file_glob="*") | read_csv()).with_name("mixed"))
    assert _loaded(pipeline, "mixed") == dlt_rows(files)
    assert schema_types(pipeline, "mixed") == {
        "id": "int64",
        "x": "string",
        "y": "string",
        "amount": "double",
    }


@pytest.mark.jvm
def test_csv_files_in_another_encoding_load(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    folder = tmp_path / "utf16"
    files = [folder / "a.csv", folder / "b.csv.gz"]
    folder.mkdir()
    files[0].write_text("id,name\n1,zoë\n2,jürgen\n", encoding="utf-16")
    files[1].write_bytes(gzip.compress("name,id\nåsa,3\n".encode("utf-16")))
    reader = readers(str(folder), file_glob="*").read_csv(encoding="utf-16", file_name_column="file")
    pipeline.run(reader.with_name("people"))
    loaded = _loaded(pipeline, "people")
    assert [{k: v for k, v in row.items() if k != "file"} for row in loaded] == dlt_rows(
        files, encoding="utf-16"
    )
    assert {row["name"]: row["file"] for row in loaded} == {
        "zoë": f"file://{files[0]}",
        "jürgen": f"file://{files[0]}",
        "åsa": f"file://{files[1]}",
    }


def schema_types(pipeline: sl.Pipeline, table: str) -> dict[str, str]:
    """A table's user columns and their Arrow types, as delta-rs reads the table."""
    import deltalake

    schema = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").to_pyarrow_table().schema
    return {field.name: str(field.type) for field in schema if field.name not in SYSTEM_COLUMNS}


NAMES_THAT_LOOK_LIKE_PATTERNS = [
    "data1.csv",
    "data[1].csv",
    "a b.csv",
    "a%20b.csv",
    "x{1,2}.csv",
    "[!a].csv",
    "q?*.csv",
]


@pytest.mark.parametrize("files_per_page", [100, pytest.param(1, marks=pytest.mark.jvm)])
def test_file_names_are_not_read_as_globs_or_url_escapes(
    pipeline: sl.Pipeline, tmp_path: Path, files_per_page: int
) -> None:
    folder = tmp_path / "odd names"
    for name in NAMES_THAT_LOOK_LIKE_PATTERNS:
        _write(folder / name, f'name\n"{name}"\n')
    _write(folder / "a.csv", "name\na.csv\n")  # what [!a].csv would match as a glob
    files = filesystem(str(folder), file_glob="*.csv", files_per_page=files_per_page)
    pipeline.run((files | read_csv()).with_name("names"))
    loaded = sorted(row["name"] for row in delta_rows(pipeline, "names"))
    assert loaded == sorted([*NAMES_THAT_LOOK_LIKE_PATTERNS, "a.csv"])


def test_the_listing_keeps_inside_the_bucket_and_out_of_symlink_loops(tmp_path: Path) -> None:
    bucket = tmp_path / "bucket"
    _write(tmp_path / "outside.csv", "x\n")
    _write(bucket / "a.csv", "x\n")
    _write(bucket / "sub" / "b.csv", "x\n")
    (bucket / "loop").symlink_to("..")  # the folder holding the bucket
    (bucket / "sub" / "back").symlink_to("..")  # the bucket itself: a loop
    (bucket / "also_sub").symlink_to("sub")  # inside the bucket: listed, as fsspec lists it
    (bucket / "out.csv").symlink_to(tmp_path / "outside.csv")
    (bucket / "in.csv").symlink_to(bucket / "a.csv")
    listed = sorted(item["relative_path"] for item in _items(filesystem(str(bucket), file_glob="**/*")))
    assert listed == ["a.csv", "also_sub/b.csv", "in.csv", "sub/b.csv"]


@pytest.mark.parametrize(
    ("name", "reader"),
    [("broken.csv.gz", read_csv), ("broken.jsonl.gz", read_jsonl)],
)
@pytest.mark.jvm
def test_a_damaged_compressed_file_is_named(
    pipeline: sl.Pipeline, tmp_path: Path, name: str, reader: Any
) -> None:
    folder = tmp_path / "gz"
    folder.mkdir()
    whole = gzip.compress(b'{"id": 1}\n' * 1000 if "jsonl" in name else b"id\n" + b"1\n" * 1000)
    (folder / f"good{name[6:]}").write_bytes(whole)
    (folder / name).write_bytes(whole[: len(whole) // 2])  # cut short
    with pytest.raises(
        sl.exceptions.PipelineStepFailed, match=rf"file 'file://{folder}/{name}' cannot be read"
    ) as failure:
        pipeline.run((filesystem(str(folder), file_glob="*") | reader()).with_name("damaged"))
    cause = failure.value.__cause__
    assert isinstance(cause, sl.exceptions.UnreadableFileError)
    assert (cause.resource, cause.file) == ("damaged", f"file://{folder}/{name}")


@pytest.mark.jvm
def test_a_header_only_csv_loads_no_rows(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    # dlt reads it with pandas: a frame without rows, no records, no table.
    _write(tmp_path / "empty" / "a.csv", "id,name\n")
    info = pipeline.run((filesystem(str(tmp_path / "empty"), file_glob="*.csv") | read_csv()).with_name("t"))
    assert info.row_counts == {}
    # Beside a file with rows, its columns take the other files' types, as by name.
    files = [
        _write(tmp_path / "some" / "a.csv", "id,name\n"),
        _write(tmp_path / "some" / "b.csv", "name,id\nann,1\n"),
    ]
    pipeline.run((filesystem(str(tmp_path / "some"), file_glob="*.csv") | read_csv()).with_name("some"))
    assert _loaded(pipeline, "some") == dlt_rows(files)
    assert schema_types(pipeline, "some") == {"id": "int64", "name": "string"}


@pytest.mark.parametrize(("row_order", "last_value_func"), [("desc", min), ("asc", max)])
def test_the_listing_follows_the_incrementals_row_order(
    pipeline: sl.Pipeline, tmp_path: Path, row_order: str, last_value_func: Any
) -> None:
    # Path order is not date order; one file lies past the range the cursor moves towards.
    day = 86_400
    folder = tmp_path / "days"
    mtimes = (
        {"a": 2, "b": 5, "c": 1, "d": 3, "e": 4}
        if last_value_func is min
        else {"a": 3, "b": 0, "c": 4, "d": 2, "e": 1}
    )
    for name, days in mtimes.items():
        _write(folder / f"{name}.csv", f"id\n{days}\n", 1_700_000_000 + days * day)

    def at(days: int) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(1_700_000_000 + days * day, datetime.timezone.utc)

    # A backfill of days 1..4: with min from day 4 down to day 0, with max from day 1 up to day 5.
    start, end = (at(4), at(0)) if last_value_func is min else (at(1), at(5))
    files = filesystem(str(folder), file_glob="*.csv")
    files.apply_hints(
        incremental=sl.sources.incremental(
            "modification_date",
            initial_value=start,
            end_value=end,
            last_value_func=last_value_func,
            row_order=row_order,
        )
    )
    listed = [item["file_name"] for item in _items(files)]
    # dlt's order: the direction the cursor moves in, so the file past the range comes last.
    assert listed == (
        ["c.csv", "a.csv", "d.csv", "e.csv"]
        if last_value_func is min
        else ["e.csv", "d.csv", "a.csv", "c.csv"]
    )
    pipeline.run((files | read_csv()).with_name("days"))
    assert sorted(row["id"] for row in delta_rows(pipeline, "days")) == [1, 2, 3, 4]


@pytest.mark.jvm
def test_a_column_read_as_other_types_in_other_files_keeps_every_value(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    # Read apart (other headers), a column is a number in one file and text in another:
    # it is text, as one read of both files infers it; no value is cast away.
    _write(tmp_path / "types" / "a.csv", "id,amount\n1,2\n")
    _write(tmp_path / "types" / "b.csv", "amount,id,note\n2.5,x,y\n")
    pipeline.run((filesystem(str(tmp_path / "types"), file_glob="*.csv") | read_csv()).with_name("types"))
    assert schema_types(pipeline, "types") == {"id": "string", "amount": "double", "note": "string"}
    assert _loaded(pipeline, "types") == _sorted_rows(
        [{"id": "1", "amount": 2.0, "note": None}, {"id": "x", "amount": 2.5, "note": "y"}]
    )


@pytest.mark.jvm
def test_jsonl_and_parquet_files_of_other_columns_and_compressions_load_by_name(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    _write(tmp_path / "j" / "a.jsonl", '{"id": 1, "x": "a"}\n')
    (tmp_path / "j" / "b.jsonl.gz").write_bytes(gzip.compress(b'{"y": "b", "id": 2}\n'))
    pq.write_table(pa.table({"id": [1], "x": ["a"]}), _write(tmp_path / "p" / "a.parquet", ""))
    pq.write_table(pa.table({"y": ["b"], "id": [2]}), _write(tmp_path / "p" / "b.parquet", ""))
    pipeline.run(readers(str(tmp_path / "j"), file_glob="*").read_jsonl().with_name("j"))
    pipeline.run(readers(str(tmp_path / "p"), file_glob="*").read_parquet().with_name("p"))
    expected = _sorted_rows([{"id": 1, "x": "a", "y": None}, {"id": 2, "x": None, "y": "b"}])
    assert _loaded(pipeline, "j") == expected
    assert _loaded(pipeline, "p") == expected
