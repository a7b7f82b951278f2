"""Read a Delta table's transaction log directly (versions and commit metadata).

Only the newest commit files are read, through pyarrow's filesystems so local paths and
object-store URLs work alike. Used to report versions and to recognise a commit that a
load already made when the load is repeated.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Any

import orjson
import pyarrow.fs as pafs

from sparkload.common.folder import filesystem, list_entries

_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


# The newest commit of a table as one listing of its log shows it: (version, size in bytes,
# modification time in ns). A table dropped and made anew may start again at version 0; its
# commit file is not the same file, so the stamp tells the two apart without reading it.
CommitStamp = tuple[int, int, int]


class _Held:
    """The listings taken within one ``one_listing_per_table``: of every table, or of the
    table at ``only``."""

    def __init__(self, only: str | None) -> None:
        self.only = only
        self.listings: dict[str, list[tuple[int, pafs.FileInfo]]] = {}

    def holds(self, uri: str) -> bool:
        return self.only is None or self.only == uri


# The listings held in this context; None outside ``one_listing_per_table``. A context
# variable: threads (the side-by-side commits) start outside it.
_held: contextvars.ContextVar[_Held | None] = contextvars.ContextVar("held_listings", default=None)


@contextlib.contextmanager
def one_listing_per_table(only: str | None = None) -> Iterator[None]:
    """Within: each table's log (or only the one at ``only``) is listed once, and every
    question asked of it (does it exist, its newest commit, its schema's stamp, its newest
    commits' tags) is answered from that listing, until this process commits to a table
    (``forget_listings``). In a bucket each listing is a request.

    For a stretch in which no other writer's commit needs to be seen: a step that reads
    the tables and decides from them before any commit (a load's checks, the preparation
    of its commits: the tables as of one moment, as if another writer's commit meanwhile
    came just after the step, where the next step or the commit sees it), or a commit's
    reads of its own table under that table's lock, where no other writer commits."""
    token = _held.set(_Held(only))
    try:
        yield
    finally:
        _held.reset(token)


def forget_listings() -> None:
    """This process committed to a table: what was listed before is not its log now."""
    held = _held.get()
    if held is not None:
        held.listings.clear()


def _commit_files(uri: str) -> list[tuple[int, pafs.FileInfo]]:
    """(version, file) of every commit file in the log, ascending; one listing (or the one
    held by ``one_listing_per_table``)."""
    held = _held.get()
    if held is None or not held.holds(uri):
        return _list_commit_files(uri)
    if uri not in held.listings:
        held.listings[uri] = _list_commit_files(uri)
    return held.listings[uri]


def _list_commit_files(uri: str) -> list[tuple[int, pafs.FileInfo]]:
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


def _actions(uri: str, version: int) -> Iterator[dict[str, Any]]:
    """The actions of commit ``version``, in the order the commit file lists them."""
    fs, path = filesystem(uri)
    with fs.open_input_stream(f"{path.rstrip('/')}/_delta_log/{version:020d}.json") as stream:
        lines = stream.read().splitlines()
    for line in lines:
        if line.strip():
            yield dict(orjson.loads(line))


def _commit_info(actions: Iterable[dict[str, Any]]) -> dict[str, Any]:
    for action in actions:
        if "commitInfo" in action:
            return dict(action["commitInfo"])
    return {}


def removed_files(uri: str, version: int) -> tuple[list[str], list[str]] | None:
    """The data files commit ``version`` removed and the ones it added, as full URIs; None
    if a file carries a deletion vector (its rows are not the file's rows)."""
    removed: list[str] = []
    added: list[str] = []
    for action in _actions(uri, version):
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
    return LogTail(uri, newest).tags()


# Delta keeps string statistics to a prefix of this many characters; a longer value's
# maximum is no value of the column.
_EXACT_STRING_STATISTICS = 32


def holds_value(uri: str, column: str, value: str, newest: int) -> bool | None:
    """``LogTail.holds_value`` of the table's ``newest`` newest commits."""
    return LogTail(uri, newest).holds_value(column, value)


class RecentCommits:
    """A table's newest commits as its history tells them: their tags, and nothing of the
    rows they added (``holds_value`` cannot tell)."""

    def __init__(self, tags: Iterable[tuple[int, str | None]]) -> None:
        self._tags = tags

    def tags(self) -> Iterator[tuple[int, str | None]]:
        """(version, userMetadata) of the newest commits, newest first."""
        return iter(self._tags)

    def holds_value(self, column: str, value: str) -> bool | None:
        return None


class LogTail(RecentCommits):
    """The ``newest`` newest commits of the table at ``uri``, from one listing of its log,
    each commit file read at most once whatever is asked of it: "did this load commit?"
    reads the tags, then the statistics, of the same commits (in a bucket each listing
    and read is a request)."""

    def __init__(self, uri: str, newest: int) -> None:
        self.uri = uri
        self.versions = commit_versions(uri)
        self.newest = newest
        self._read: dict[int, list[dict[str, Any]]] = {}
        super().__init__(())

    def actions(self, version: int) -> list[dict[str, Any]]:
        if version not in self._read:
            self._read[version] = list(_actions(self.uri, version))
        return self._read[version]

    def tags(self) -> Iterator[tuple[int, str | None]]:
        """(version, userMetadata) of the commits, newest first; each commit file is read
        only when the caller asks for it."""
        for version in reversed(self.versions[-self.newest :]):
            yield version, _commit_info(self.actions(version)).get("userMetadata")

    def holds_value(self, column: str, value: str) -> bool | None:
        """Whether a row of the table has ``value`` in the string column ``column``, as
        the statistics of the files these commits added tell, for a value only one writer
        ever writes (a load id): True when an added file has it as its smallest or largest
        value of ``column``; False when these commits are all the table's commits and no
        added file holds a value of ``column`` at or above it (a file that has the value
        has it as its largest value or below); None when the statistics cannot tell (a
        file without them, or whose range spans the value, or an older commit not read)."""
        versions = self.versions
        undecided = not versions or versions[0] != 0 or len(versions) > self.newest
        for version in reversed(versions[-self.newest :]):
            for action in self.actions(version):
                added = action.get("add")
                if not added:
                    continue
                stats = orjson.loads(added.get("stats") or "{}")
                if stats.get("numRecords") == 0:
                    continue
                low = (stats.get("minValues") or {}).get(column)
                high = (stats.get("maxValues") or {}).get(column)
                if value in (low, high):
                    return True
                exact = isinstance(high, str) and len(high) < _EXACT_STRING_STATISTICS
                if not exact or str(high).encode() >= value.encode():
                    undecided = True
        return None if undecided else False


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
