"""The files under a bucket URL that match a glob, as dlt's ``FileItem`` dicts.

Listing goes through pyarrow's filesystems (local paths, ``file://``, ``s3://``, ``gs://``,
``abfs://``), the same the load packages use; matching uses wcmatch's globs, which treat
``**`` as any depth and ``*`` as one path segment, as fsspec's glob does for dlt. A local
folder is walked here, following symbolic links only inside it.
"""

from __future__ import annotations

import datetime
import mimetypes
import os
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, TypedDict, cast

import pyarrow.fs as pafs
from wcmatch import glob as wglob

from sparkload.common.folder import filesystem
from sparkload.exceptions import ResourceError
from sparkload.extract.incremental import Incremental

_GLOB_FLAGS = wglob.GLOBSTAR | wglob.DOTGLOB


class FileItem(TypedDict, total=False):
    """One listed file (dlt's ``FileItem``). ``file_url`` identifies it; ``relative_path``
    is its path under the bucket URL; ``file_content`` is set with ``extract_content``."""

    file_url: str
    file_name: str
    relative_path: str
    mime_type: str
    encoding: str | None
    modification_date: datetime.datetime
    size_in_bytes: int
    file_content: bytes


def bucket_root(bucket_url: str) -> tuple[pafs.FileSystem, str, str]:
    """The filesystem, the folder's path in it, and the URL files under it are named by: a
    local path becomes a ``file://`` URL of its absolute path, as dlt names local files."""
    if "://" not in bucket_url:
        bucket_url = "file://" + os.path.abspath(bucket_url)
    if bucket_url.startswith("file://"):
        path = os.path.abspath(bucket_url[len("file://") :])
        return pafs.LocalFileSystem(), path, "file://" + path
    fs, path = filesystem(bucket_url)
    return fs, path.rstrip("/"), bucket_url.rstrip("/")


def file_at(file_url: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and path of a listed file. Only the bucket goes through URL parsing:
    a file's name may hold characters a URI may not (a space, ``%``, ``[``)."""
    scheme, sep, rest = file_url.partition("://")
    if not sep or scheme == "file":
        return pafs.LocalFileSystem(), os.path.abspath(rest if sep else file_url)
    bucket, _, key = rest.partition("/")
    fs, path = filesystem(f"{scheme}://{bucket}")
    return fs, f"{path.rstrip('/')}/{key}"


def list_files(bucket_url: str, file_glob: str = "*", extract_content: bool = False) -> Iterator[FileItem]:
    """The files under ``bucket_url`` whose path relative to it matches ``file_glob``, in
    path order. Without a ``/`` or ``**`` in the glob only the folder itself is listed."""
    fs, root, url = bucket_root(bucket_url)
    recursive = "/" in file_glob or "**" in file_glob
    if isinstance(fs, pafs.LocalFileSystem):
        found = list(_local_files(root, recursive))
    else:
        selector = pafs.FileSelector(root, recursive=recursive, allow_not_found=True)
        found = [
            _Found(info.path[len(root) :].lstrip("/"), info.size, info.mtime)
            for info in fs.get_file_info(selector)
            if info.type == pafs.FileType.File
        ]
    for file in sorted(found, key=lambda f: f.relative):
        if not wglob.globmatch(file.relative, file_glob, flags=_GLOB_FLAGS):
            continue
        yield _file_item(fs, f"{root}/{file.relative}", file, url, extract_content)


def in_row_order(files: Iterable[FileItem], incremental: Incremental[Any]) -> list[FileItem]:
    """The listed files sorted by ``incremental``'s cursor as dlt sorts them, in the order
    the cursor moves in: ``row_order`` is relative to ``last_value_func`` ("asc" moves
    towards the range's end: ascending with ``max``, descending with ``min``)."""
    cursor = incremental.cursor_path
    order, func = incremental.row_order, incremental.last_value_func
    descending = (order == "asc" and func is min) or (order == "desc" and func is max)
    listed: list[dict[str, Any]] = [dict(item) for item in files]  # looked up by a cursor name
    if any(cursor not in item for item in listed):
        raise ResourceError(
            f"filesystem(): the files cannot be ordered by '{cursor}' (row_order): no such field"
        )
    return cast(list[FileItem], sorted(listed, key=lambda item: item[cursor], reverse=descending))


class _Found(NamedTuple):
    relative: str  # the path under the bucket root, "/"-separated
    size: int | None
    mtime: datetime.datetime | None


def _local_files(root: str, recursive: bool) -> Iterator[_Found]:
    """The files under the local folder ``root``, following symbolic links only where they
    stay inside it: a link out of the folder is not the bucket's (fsspec's and Python's
    globs follow it, listing whatever it reaches), and a link to a folder already being
    walked (``loop -> ..``) would list the same files forever deeper."""
    top = os.path.realpath(root)
    if not os.path.isdir(top):
        return
    yield from _walk(root, "", top, (top,), recursive)


def _walk(folder: str, prefix: str, top: str, walking: tuple[str, ...], recursive: bool) -> Iterator[_Found]:
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return  # gone since it was listed
    for entry in entries:
        relative = f"{prefix}{entry.name}"
        real = os.path.realpath(entry.path)
        if entry.is_symlink() and not _inside(real, top):
            continue
        try:
            if entry.is_dir():
                if recursive and real not in walking:
                    yield from _walk(entry.path, f"{relative}/", top, (*walking, real), recursive)
            elif entry.is_file():
                stat = entry.stat()
                yield _Found(
                    relative,
                    stat.st_size,
                    datetime.datetime.fromtimestamp(stat.st_mtime, datetime.timezone.utc),
                )
        except FileNotFoundError:
            continue  # a dangling link, or removed since the folder was read


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _file_item(fs: pafs.FileSystem, path: str, found: _Found, url: str, extract_content: bool) -> FileItem:
    name = found.relative.rsplit("/", 1)[-1]
    mime_type, encoding = mimetypes.guess_type(name)
    item: FileItem = {
        "file_url": f"{url}/{found.relative}",
        "file_name": name,
        "relative_path": found.relative,
        "mime_type": mime_type or "application/octet-stream",
        "encoding": encoding,
        "modification_date": _utc(found.mtime),
        "size_in_bytes": int(found.size or 0),
    }
    if extract_content:
        # The stored bytes, as dlt's: pyarrow would otherwise decompress a ``.gz`` file by its
        # suffix, and a FileItemDict's open() would then decompress it again.
        with fs.open_input_stream(path, compression=None) as stream:
            item["file_content"] = stream.read()
    return item


def _utc(mtime: datetime.datetime | None) -> datetime.datetime:
    """A listing's modification time as an aware UTC datetime (local filesystems give it
    naive, in UTC)."""
    if mtime is None:
        return datetime.datetime.fromtimestamp(0, datetime.timezone.utc)
    if mtime.tzinfo is None:
        return mtime.replace(tzinfo=datetime.timezone.utc)
    return mtime.astimezone(datetime.timezone.utc)
