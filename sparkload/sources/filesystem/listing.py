"""The files under a bucket URL that match a glob, as dlt's ``FileItem`` dicts.

Listing goes through pyarrow's filesystems (local paths, ``file://``, ``s3://``, ``gs://``,
``abfs://``), the same the load packages use; matching uses wcmatch's globs, which treat
``**`` as any depth and ``*`` as one path segment, as fsspec's glob does for dlt.
"""

from __future__ import annotations

import datetime
import mimetypes
import os
from collections.abc import Iterator
from typing import Any, TypedDict

import pyarrow.fs as pafs
from wcmatch import glob as wglob

from sparkload.common.folder import filesystem

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


def list_files(bucket_url: str, file_glob: str = "*", extract_content: bool = False) -> Iterator[FileItem]:
    """The files under ``bucket_url`` whose path relative to it matches ``file_glob``, in
    path order. Without a ``/`` or ``**`` in the glob only the folder itself is listed."""
    fs, root, url = bucket_root(bucket_url)
    recursive = "/" in file_glob or "**" in file_glob
    selector = pafs.FileSelector(root, recursive=recursive, allow_not_found=True)
    infos = [info for info in fs.get_file_info(selector) if info.type == pafs.FileType.File]
    for info in sorted(infos, key=lambda i: i.path):
        relative = info.path[len(root) :].lstrip("/")
        if not wglob.globmatch(relative, file_glob, flags=_GLOB_FLAGS):
            continue
        yield _file_item(fs, info, url, relative, extract_content)


def _file_item(
    fs: pafs.FileSystem, info: pafs.FileInfo, url: str, relative: str, extract_content: bool
) -> FileItem:
    mime_type, encoding = mimetypes.guess_type(info.base_name)
    item: FileItem = {
        "file_url": f"{url}/{relative}",
        "file_name": info.base_name,
        "relative_path": relative,
        "mime_type": mime_type or "application/octet-stream",
        "encoding": encoding,
        "modification_date": _utc(info.mtime),
        "size_in_bytes": int(info.size or 0),
    }
    if extract_content:
        with fs.open_input_stream(info.path) as stream:
            item["file_content"] = stream.read()
    return item


def _utc(mtime: Any) -> datetime.datetime:
    """A listing's modification time as an aware UTC datetime (local filesystems give it
    naive, in UTC)."""
    if mtime is None:
        return datetime.datetime.fromtimestamp(0, datetime.timezone.utc)
    if mtime.tzinfo is None:
        return mtime.replace(tzinfo=datetime.timezone.utc)
    return mtime.astimezone(datetime.timezone.utc)
