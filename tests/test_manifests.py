"""The manifests a package carries between stages are typed records whose JSON is the one
packages already on disk have: a package written before the records existed is read, and
written back, key for key (``tests/data/manifests`` holds a package's two manifests as the
previous release wrote them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import sparkload as sl
from sparkload.common.folder import Folder
from sparkload.common.hints import LoadHints
from sparkload.common.package import LoadPackage, list_packages
from sparkload.extract.jobs import ExtractedTable
from sparkload.extract.manifest import ExtractManifest
from sparkload.normalize.manifest import NormalizeManifest
from sparkload.normalize.normalizer import NormalizedTable

WRITTEN_BEFORE = Path(__file__).parent / "data" / "manifests"


def _written_before(name: str) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((WRITTEN_BEFORE / name).read_bytes())
    return data


def test_an_extract_manifest_on_disk_reads_as_a_record_and_writes_back_unchanged() -> None:
    data = _written_before("extract.json")
    manifest = ExtractManifest.from_dict(data)
    assert isinstance(manifest.tables[0], ExtractedTable)
    assert isinstance(manifest.tables[0].hints, LoadHints)
    assert (manifest.base_version, manifest.refresh, manifest.tables[0].rows) == (0, None, 2)
    assert manifest.to_dict() == data


def test_a_normalize_manifest_on_disk_reads_as_a_record_and_writes_back_unchanged() -> None:
    data = _written_before("normalize.json")
    manifest = NormalizeManifest.from_dict(data)
    assert [type(table) for table in manifest.tables] == [NormalizedTable, NormalizedTable]
    assert isinstance(manifest.hints["orders"], LoadHints)
    nested = manifest.tables[1]
    assert nested.name == "orders__tags"
    assert manifest.files_of(nested) == data["files"]["orders__tags"]
    assert manifest.to_dict() == data


def test_keys_added_in_later_releases_default_when_a_manifest_lacks_them() -> None:
    extract = {
        key: value
        for key, value in _written_before("extract.json").items()
        if key not in ("pipeline_name", "refresh")
    }
    assert ExtractManifest.from_dict(extract).refresh is None
    normalize = {
        key: value
        for key, value in _written_before("normalize.json").items()
        if key not in ("refresh", "files")
    }
    manifest = NormalizeManifest.from_dict(normalize)
    assert (manifest.refresh, manifest.files) == (None, {})


def test_a_package_extracted_and_normalized_carries_records_that_the_load_reads(tmp_path: Path) -> None:
    @sl.resource(primary_key="id", write_disposition="merge")
    def orders():  # type: ignore[no-untyped-def]
        yield [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}]

    pipeline = sl.pipeline(
        "manifests",
        destination=sl.destinations.delta(str(tmp_path / "lake")),
        pipelines_dir=str(tmp_path / "work"),
    )
    pipeline.extract(orders())
    (extracted,) = list_packages(Folder(str(tmp_path / "work" / "manifests" / "packages")))
    extract = ExtractManifest.read(extracted)
    assert [(table.name, table.rows) for table in extract.tables] == [("orders", 2)]
    assert extract.pipeline_name == "manifests"
    pipeline.normalize()
    staged_root = tmp_path / "lake" / "manifests_dataset" / "_sparkload_packages" / "manifests"
    (staged,) = list_packages(Folder(str(staged_root)))
    normalize = NormalizeManifest.read(staged)
    assert normalize.load_id == extract.load_id == staged.load_id
    assert {table.name: table.rows for table in normalize.tables} == {"orders": 2, "orders__tags": 2}
    assert all(normalize.files_of(table) for table in normalize.tables)
    info = pipeline.load()
    assert {entry.table: entry.rows for entry in info.tables} == {"orders": 2, "orders__tags": 2}


@pytest.mark.parametrize("name", ["extract.json", "normalize.json"])
def test_a_record_written_to_a_package_is_read_back_equal(tmp_path: Path, name: str) -> None:
    kind = ExtractManifest if name == "extract.json" else NormalizeManifest
    record = kind.from_dict(_written_before(name))
    package = LoadPackage(Folder(str(tmp_path)), record.load_id)
    record.write(package)
    assert kind.read(package) == record
