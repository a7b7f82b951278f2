"""How often a load reads its tables in a bucket, counted in the request log of a real S3
API server on 127.0.0.1 (moto's server mode, ``tests/s3_server.py``).

Each engine read of a Delta table resolves the table's snapshot: a listing of its log, a GET
of ``_last_checkpoint`` and reads of its newest commits, each a request to the store. What a
load asks of a table several times (its schema) is read once per commit, and the state
table's rows are not read at all while the local copy holds the state its newest commit
made."""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import deltalake
import pytest
from conftest import user_columns

import sparkload as sl
from sparkload.common.folder import Folder
from sparkload.common.package import LoadPackage
from sparkload.common.system_columns import LOAD_ID
from sparkload.pipeline.state import STATE_TABLE

if TYPE_CHECKING:
    from s3_server import S3Bucket

pytest_plugins = ("s3_server",)
pytestmark = [pytest.mark.timeout(300)]

_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
_REQUEST = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/')


class Requests:
    """The requests the server logged for one bucket from the moment this was made."""

    def __init__(self, bucket: S3Bucket) -> None:
        self.bucket = bucket
        self._start = len(self._all())

    def _all(self) -> list[tuple[str, str]]:
        found = []
        for line in self.bucket.server.log.read_text(errors="replace").splitlines():
            match = _REQUEST.search(_COLOURS.sub("", line))
            if match and match["path"].startswith(f"/{self.bucket.name}"):
                found.append((match["method"], match["path"]))
        return found

    def since(self) -> list[tuple[str, str]]:
        return self._all()[self._start :]

    def snapshot_reads(self, table: str) -> int:
        """How many times the engine resolved ``table``'s snapshot (a GET of its log's
        ``_last_checkpoint`` each time)."""
        suffix = f"/{table}/_delta_log/_last_checkpoint"
        return sum(1 for method, path in self.since() if method == "GET" and path.endswith(suffix))

    def data_file_reads(self, table: str) -> int:
        """GETs of ``table``'s data files (its rows, not its log)."""
        return sum(
            1
            for method, path in self.since()
            if method == "GET" and f"/{table}/" in path and path.split("?")[0].endswith(".parquet")
        )


def bucket_pipeline(bucket: S3Bucket, tmp_path: Path, working: str = "work") -> sl.Pipeline:
    return sl.pipeline(
        "orders",
        destination=sl.destinations.delta(f"{bucket.url}/lake"),
        dataset_name="shop",
        pipelines_dir=tmp_path / working,
    )


def test_a_tables_schema_is_read_once_per_commit(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    pipeline.run([{"id": 1, "name": "a"}], table_name="items", write_disposition="merge", primary_key="id")
    dataset = pipeline.destination_dataset

    first = Requests(s3_bucket)
    schema = dataset.table("items").schema()
    assert first.snapshot_reads("items") > 0
    assert schema is not None and "name" in schema.fieldNames()
    # Asked again, by new table objects as each step of a load makes them: no engine read.
    again = Requests(s3_bucket)
    assert [dataset.table("items").schema() for _ in range(2)] == [schema, schema]
    assert again.snapshot_reads("items") == 0

    # A new commit (with a new column) is read anew.
    pipeline.run(
        [{"id": 2, "name": "b", "size": 3}], table_name="items", write_disposition="merge", primary_key="id"
    )
    schema = dataset.table("items").schema()
    assert schema is not None and "size" in schema.fieldNames()


@sl.resource(write_disposition="append")
def numbered(upto: int, updated: Any = sl.incremental("n")) -> Any:  # noqa: B008 (dlt's form)
    yield from ({"n": n} for n in range(1, upto + 1))


def bucket_rows(bucket: S3Bucket, pipeline: sl.Pipeline, table: str) -> list[int]:
    found = deltalake.DeltaTable(
        f"{pipeline.dataset_uri}/{table}", storage_options=bucket.server.storage_options()
    )
    return sorted(row["n"] for row in user_columns(found.to_pyarrow_table().to_pylist()))


def test_a_run_reads_no_state_rows_while_its_local_copy_is_the_newest_commit(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    bucket_pipeline(s3_bucket, tmp_path).run(numbered(3))

    # The same pipeline in a new process: its working folder holds the state the newest
    # commit of the state table made.
    again = bucket_pipeline(s3_bucket, tmp_path)
    assert again is not None
    requests = Requests(s3_bucket)
    again.run(numbered(5))
    assert requests.data_file_reads(STATE_TABLE) == 0
    assert again._destination_state.engine_reads == 0
    assert bucket_rows(s3_bucket, again, "numbered") == [1, 2, 3, 4, 5]


def test_a_state_another_machine_committed_is_read(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """The local copy is skipped only while its commit is the newest: a run on another
    machine commits a newer state, and the next run here reads it."""
    here = bucket_pipeline(s3_bucket, tmp_path, working="machine_a")
    here.run(numbered(3))
    bucket_pipeline(s3_bucket, tmp_path, working="machine_b").run(numbered(6))

    here_again = bucket_pipeline(s3_bucket, tmp_path, working="machine_a")
    here_again.run(numbered(7))
    assert here_again._destination_state.engine_reads >= 1
    assert bucket_rows(s3_bucket, here_again, "numbered") == [1, 2, 3, 4, 5, 6, 7]


def test_already_committed_reads_each_newest_commit_once(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """ "Did this load commit?" asks the newest commits' tags, then (Sail's MERGE commits
    carry none) the statistics of the files they added: one listing of the log and one read
    of each commit file answer both."""
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    for n in range(3):
        pipeline.run(
            [{"id": n, "name": "a"}], table_name="items", write_disposition="merge", primary_key="id"
        )
    table = pipeline.destination_dataset.table("items")
    versions = table.version()
    assert versions is not None

    requests = Requests(s3_bucket)
    recent = table.recent_commits()
    tags = list(recent.tags())
    assert recent.holds_value(LOAD_ID, "9" * 20) is False  # newer than every load: in no file
    assert recent.holds_value(LOAD_ID, pipeline.last_trace.last_load_info.loads_ids[-1]) is True
    commit_files = re.compile(r"/items/_delta_log/\d{20}\.json$")
    read = [path for method, path in requests.since() if method == "GET" and commit_files.search(path)]
    listings = [path for method, path in requests.since() if "list-type=2" in path]
    assert len(tags) == versions + 1
    assert len(read) == len(set(read)) == versions + 1
    assert len(listings) == 1


def test_a_merge_load_lists_its_create_records_once(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """Whether the load set out to create a table is recorded in its package (``Creates``):
    the folder is listed once per load, not asked once per table."""
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    rows = [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": ["c"]}]
    pipeline.run(rows, table_name="items", write_disposition="merge", primary_key="id")

    requests = Requests(s3_bucket)
    rows = [{"id": 2, "tags": ["d"]}, {"id": 3, "tags": ["e"]}]
    pipeline.run(rows, table_name="items", write_disposition="merge", primary_key="id")
    creates = [(method, path) for method, path in requests.since() if "creates" in path]
    assert len(creates) == 1 and "list-type=2" in creates[0][1]  # one listing, for both tables
    found = deltalake.DeltaTable(
        f"{pipeline.dataset_uri}/items__tags", storage_options=s3_bucket.server.storage_options()
    )
    assert sorted(row["value"] for row in found.to_pyarrow_table().to_pylist()) == ["a", "b", "d", "e"]


def test_a_manifest_is_written_to_a_bucket_in_one_request(s3_bucket: S3Bucket) -> None:
    """A small file (a manifest, a schema beside staged rows) is one PUT, not a multipart
    upload's three requests (start, part, completion); what is written reads back whole."""
    folder = Folder(f"{s3_bucket.url}/packages/one")
    requests = Requests(s3_bucket)
    folder.write("loaded.json", b'{"items": {"version": 3}}')
    assert requests.since() == [("PUT", f"/{s3_bucket.name}/packages/one/loaded.json")]
    assert folder.read("loaded.json") == b'{"items": {"version": 3}}'
    # Another write replaces it whole.
    folder.write("loaded.json", b"{}")
    assert folder.read("loaded.json") == b"{}"


def test_a_write_to_a_missing_bucket_fails_naming_the_object(s3_bucket: S3Bucket) -> None:
    """The one PUT is sent when the file closes: a missing bucket still fails the write."""
    folder = Folder(f"s3://{s3_bucket.name}-missing/packages/one")
    with pytest.raises(OSError, match="loaded.json"):
        folder.write("loaded.json", b"{}")


def _log_listings(requests: Requests, table: str) -> int:
    """Listings of ``table``'s log, sparkload's and the engine's."""
    return sum(1 for _, path in requests.since() if "list-type=2" in path and f"/{table}/_delta_log/" in path)


def test_a_merge_load_lists_each_tables_log_once_per_step(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """A load's checks list each table's log once, its preparation once, "already
    committed?" once, and each commit once under the table's lock for every read before its
    write (``one_listing_per_table``), besides the version recorded after the commit."""
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    rows = [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": ["c"]}]
    pipeline.run(rows, table_name="items", write_disposition="merge", primary_key="id")

    requests = Requests(s3_bucket)
    rows = [{"id": 2, "tags": ["d"]}, {"id": 3, "tags": ["e"]}]
    pipeline.run(rows, table_name="items", write_disposition="merge", primary_key="id")
    # The engine's listings (one per resolution of a table's snapshot) are counted too:
    # 29 and 22 when each question listed the log anew.
    assert _log_listings(requests, "items") <= 23
    assert _log_listings(requests, "items__tags") <= 16
    assert sorted(row["value"] for row in _nested_rows(s3_bucket, pipeline)) == ["a", "b", "d", "e"]


def _nested_rows(bucket: S3Bucket, pipeline: sl.Pipeline) -> list[dict[str, Any]]:
    found = deltalake.DeltaTable(
        f"{pipeline.dataset_uri}/items__tags", storage_options=bucket.server.storage_options()
    )
    return list(found.to_pyarrow_table().to_pylist())


def test_a_load_reads_its_manifests_once_each(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """The load step hands the normalize manifest it read to the loader, and the loader
    reads what is committed so far (``loaded.json``) in one read, not a look and a read."""
    pipeline = bucket_pipeline(s3_bucket, tmp_path)
    requests = Requests(s3_bucket)
    pipeline.run([{"id": 1, "tags": ["a"]}], table_name="items", write_disposition="merge", primary_key="id")
    manifests = collections.Counter(
        (method, path.rsplit("/", 1)[-1])
        for method, path in requests.since()
        if path.endswith(("/normalize.json", "/loaded.json"))
    )
    # The normalize manifest's other reads are the pipeline's, before the load; when the
    # loader read both manifests itself: 5 HEADs and 3 GETs of it, 3 HEADs of loaded.json.
    assert manifests["GET", "normalize.json"] == 2 and manifests["HEAD", "normalize.json"] == 4
    assert manifests["HEAD", "loaded.json"] == 2 and manifests["GET", "loaded.json"] == 1
    assert manifests["PUT", "loaded.json"] == 3  # the claim, then each table's commit


def test_a_missing_manifest_is_one_request(s3_bucket: S3Bucket) -> None:
    package = LoadPackage(Folder(f"{s3_bucket.url}/packages"), "1.5")
    requests = Requests(s3_bucket)
    assert package.read_if_present("loaded.json") is None
    assert len(requests.since()) == 1
    package.write("loaded.json", {"items": {"rows": 1}})
    assert package.read_if_present("loaded.json") == {"items": {"rows": 1}}


def test_a_folder_is_deleted_without_a_look_first(s3_bucket: S3Bucket) -> None:
    """Deleting a package's folder asks nothing before it deletes (the deletion itself
    finds what is there); a folder not there is no error."""
    folder = Folder(f"{s3_bucket.url}/packages/one")
    folder.write("loaded.json", b"{}")
    requests = Requests(s3_bucket)
    folder.delete()
    assert [method for method, _ in requests.since()].count("HEAD") == 1  # the deletion's own
    assert not folder.exists("loaded.json")
    folder.delete()
