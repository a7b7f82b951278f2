"""Read a Delta table's transaction log directly (versions and commit metadata).

Only the newest commit files are read, through pyarrow's filesystems so local paths and
object-store URLs work alike. Used to report versions and to recognise a commit that a
load already made when the load is repeated.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow.fs as pafs

from sparkload.common.folder import filesystem, list_entries

_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


# The newest commit of a table as one listing of its log shows it: (version, size in bytes,
# modification time in ns). A table dropped and made anew may start again at version 0; its
# commit file is not the same file, so the stamp tells the two apart without reading it.
CommitStamp = tuple[int, int, int]


def _commit_files(uri: str) -> list[tuple[int, pafs.FileInfo]]:
    """(version, file) of every commit file in the log, ascending; one listing."""
    fs, path = filesystem(uri)
    found = []
    for info in list_entries(fs, f"{path.rstrip('/')}/_delta_log"):
        match = _COMMIT_FILE.match(info.base_name)
        if match:
            found.append((int(match.group(1)), info))
    return sorted(found, key=lambda entry: entry[0])


def commit_versions(uri: str) -> list[int]:
    """All commit versions present in the log, ascending; empty when there is no table."""
    return [version for version, _ in _commit_files(uri)]


def newest_commit(uri: str) -> CommitStamp | None:
    """The newest commit's stamp (``CommitStamp``); None when there is no table."""
    files = _commit_files(uri)
    if not files:
        return None
    version, info = files[-1]
    return version, info.size or 0, info.mtime_ns or 0


def table_exists(uri: str) -> bool:
    return bool(commit_versions(uri))


def latest_version(uri: str) -> int | None:
    versions = commit_versions(uri)
    return versions[-1] if versions else None


def commit_info(uri: str, version: int) -> dict[str, Any]:
    fs, path = filesystem(uri)
    with fs.open_input_stream(f"{path.rstrip('/')}/_delta_log/{version:020d}.json") as stream:
        for line in stream.read().splitlines():
            if not line.strip():
                continue
            action = orjson.loads(line)
            if "commitInfo" in action:
                return dict(action["commitInfo"])
    return {}


def removed_files(uri: str, version: int) -> tuple[list[str], list[str]] | None:
    """The data files commit ``version`` removed and the ones it added, as full URIs; None
    if a file carries a deletion vector (its rows are not the file's rows)."""
    fs, path = filesystem(uri)
    removed: list[str] = []
    added: list[str] = []
    with fs.open_input_stream(f"{path.rstrip('/')}/_delta_log/{version:020d}.json") as stream:
        for line in stream.read().splitlines():
            if not line.strip():
                continue
            action = orjson.loads(line)
            for kind, files in (("remove", removed), ("add", added)):
                if kind in action:
                    if action[kind].get("deletionVector"):
                        return None
                    files.append(_file_uri(uri, action[kind]["path"]))
    return removed, added


def _file_uri(uri: str, path: str) -> str:
    """A path from the log (relative to the table and percent-encoded, or a full URI)."""
    if "://" in path:
        return path
    return f"{uri.rstrip('/')}/{urllib.parse.unquote(path)}"


def commit_tags(uri: str, newest: int) -> Iterator[tuple[int, str | None]]:
    """(version, userMetadata) of the last ``newest`` commits, newest first; each commit
    file is read only when the caller asks for it."""
    for version in reversed(commit_versions(uri)[-newest:]):
        yield version, commit_info(uri, version).get("userMetadata")


def list_tables(dataset_uri: str) -> list[str]:
    """Names of the Delta tables directly under a dataset folder."""
    fs, path = filesystem(dataset_uri)
    names = []
    for info in list_entries(fs, path.rstrip("/")):
        if info.type == pafs.FileType.Directory and table_exists(
            f"{dataset_uri.rstrip('/')}/{info.base_name}"
        ):
            names.append(info.base_name)
    return sorted(names)
