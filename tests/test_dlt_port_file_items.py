"""The items ``filesystem()`` yields open and read the files they name, as dlt's
``FileItemDict``: a dlt transformer that opens each file (a ``.gz`` one decompressed) runs
unchanged. Real files on disk; the loaded table is read back with delta-rs."""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.sources.filesystem import FileItemDict, filesystem

PLAIN = b"id,name\n1,ann\n2,bob\n"
ZIPPED = b"id,name\n3,cy\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    (root / "a.csv").write_bytes(PLAIN)
    (root / "b.csv.gz").write_bytes(gzip.compress(ZIPPED))
    return root


def _items(folder: Path, **options: Any) -> dict[str, FileItemDict]:
    return {item["file_name"]: item for item in filesystem(str(folder), **options)}


def test_a_dlt_transformer_that_opens_each_file_loads_them(folder: Path, pipeline: sl.Pipeline) -> None:
    @sl.transformer
    def read_rows(items: list[FileItemDict]) -> Iterator[dict[str, Any]]:
        for item in items:
            with item.open(mode="rt", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    yield {**row, "file": item["file_name"]}

    pipeline.run((filesystem(str(folder), file_glob="*.csv*") | read_rows()).with_name("people"))
    assert user_columns(delta_rows(pipeline, "people", order_by="id")) == [
        {"id": "1", "name": "ann", "file": "a.csv"},
        {"id": "2", "name": "bob", "file": "a.csv"},
        {"id": "3", "name": "cy", "file": "b.csv.gz"},
    ]


def test_open_decompresses_gzip_files_as_dlt_does(folder: Path) -> None:
    items = _items(folder)
    plain, zipped = items["a.csv"], items["b.csv.gz"]
    assert isinstance(plain, FileItemDict) and zipped["encoding"] == "gzip"
    with zipped.open() as f:
        assert f.read() == ZIPPED  # "auto": a gzip file decompressed
    with zipped.open(compression="disable") as f:
        assert gzip.decompress(f.read()) == ZIPPED  # the stored bytes
    with plain.open(mode="r") as f:
        assert f.readlines() == ["id,name\n", "1,ann\n", "2,bob\n"]
    with plain.open() as f:
        assert f.read() == PLAIN
    with pytest.raises(ValueError, match=r"a\.csv is not gzip-compressed"):
        plain.open(compression="enable")


def test_read_bytes_gives_the_stored_bytes_and_read_text_the_text(folder: Path) -> None:
    items = _items(folder)
    assert items["a.csv"].read_bytes() == PLAIN
    assert gzip.decompress(items["b.csv.gz"].read_bytes()) == ZIPPED  # not decompressed, as dlt's
    assert items["b.csv.gz"].read_text() == ZIPPED.decode()
    assert items["a.csv"].read_text() == PLAIN.decode()
    assert items["a.csv"].local_file_path == str(folder / "a.csv")


def test_items_with_their_content_open_from_it(folder: Path) -> None:
    items = _items(folder, extract_content=True)
    for name in items:
        (folder / name).unlink()  # read from the content, not the file
    assert items["a.csv"].read_bytes() == PLAIN
    assert gzip.decompress(items["b.csv.gz"].read_bytes()) == ZIPPED  # the stored bytes, compressed
    with items["b.csv.gz"].open(mode="rt") as f:
        assert f.read() == ZIPPED.decode()
    with items["b.csv.gz"].open() as f:
        assert f.read() == ZIPPED


def test_bad_open_arguments_fail_naming_the_file(folder: Path) -> None:
    item = _items(folder)["a.csv"]
    with pytest.raises(ValueError, match=r"a\.csv.*compression must be one of auto, enable, disable"):
        item.open(compression="zip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"a\.csv.*mode 'wb' would write"):
        item.open(mode="wb")
    with pytest.raises(ValueError, match=r"a\.csv.*encoding apply to text mode only"):
        item.open(mode="rb", encoding="utf-8")
