"""A folder at a local path or an object-store URL, through pyarrow's filesystems.

Load packages live beside the dataset they load into (see ``common/package.py``), so
the same code must handle a local lake and ``s3://…``. Spark reads and writes the data
files by URI; this module does the small file work around them: manifests, listings,
deletion.
"""

from __future__ import annotations

import contextlib
import os

import pyarrow.fs as pafs


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding ``uri`` and the path of ``uri`` within it."""
    if "://" not in uri:
        return pafs.LocalFileSystem(), uri
    if uri[:6].lower() == "s3a://":
        # Hadoop's name for S3 (a JVM engine's); pyarrow knows the same store as s3://.
        uri = "s3://" + uri[6:]
    if uri[:5].lower() == "s3://":
        # A file opened for writing starts no upload until it holds a part's worth or
        # closes: a small file (a manifest, a lease, a staged schema) is then one PUT, not a
        # multipart upload's three requests. An upload that fails still fails its write, at
        # the close; an object store shows the object only once complete either way.
        uri += "?allow_delayed_open=true"
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, str(path)


def list_entries(fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
    """What lies directly in the folder ``path``; nothing when there is no such folder.

    pyarrow's ``allow_not_found`` has a race: when the listing finds no folder it checks
    once more, and raises if another writer created the folder in between. Such a folder
    was empty at the listing, so it is reported as empty.
    """
    try:
        return list(fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))
    except FileNotFoundError:
        return []


class Folder:
    def __init__(self, uri: str) -> None:
        self.uri = uri.rstrip("/")
        self._fs, self._path = filesystem(self.uri)

    @property
    def name(self) -> str:
        return self._path.rsplit("/", 1)[-1]

    @property
    def is_local(self) -> bool:
        return isinstance(self._fs, pafs.LocalFileSystem)

    def child(self, name: str) -> Folder:
        return Folder(f"{self.uri}/{name}")

    def _file(self, name: str) -> str:
        return f"{self._path}/{name}"

    def exists(self, name: str | None = None) -> bool:
        """Whether this folder (or the file ``name`` in it) exists."""
        path = self._path if name is None else self._file(name)
        return bool(self._fs.get_file_info(path).type != pafs.FileType.NotFound)

    def read(self, name: str) -> bytes:
        with self._fs.open_input_stream(self._file(name)) as stream:
            return bytes(stream.read())

    def write(self, name: str, data: bytes) -> None:
        """Write the file ``name`` so that a reader sees the old content or the new, never
        half: a local file is written aside, flushed to disk and renamed; an object store
        makes an object visible only once its upload completes."""
        if self.is_local:
            os.makedirs(self._path, exist_ok=True)
            target = self._file(name)
            partial = target + ".partial"
            with open(partial, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, target)
            return
        with self._fs.open_output_stream(self._file(name)) as stream:
            stream.write(data)

    def remove(self, name: str) -> None:
        """Delete the file ``name`` (nothing happens if it is not there)."""
        if self.exists(name):
            self._fs.delete_file(self._file(name))

    def subfolders(self) -> list[str]:
        """Names of the folders directly inside, sorted."""
        return sorted(
            i.base_name for i in list_entries(self._fs, self._path) if i.type == pafs.FileType.Directory
        )

    def file_sizes(self, suffix: str) -> dict[str, int]:
        """Name → size in bytes of the files directly inside whose name ends with ``suffix``."""
        return {
            i.base_name: int(i.size)
            for i in list_entries(self._fs, self._path)
            if i.type == pafs.FileType.File and i.base_name.endswith(suffix)
        }

    def has_files(self, suffix: str) -> bool:
        return any(i.base_name.endswith(suffix) for i in list_entries(self._fs, self._path))

    def delete(self) -> None:
        """Delete the folder and everything in it (nothing happens if it is not there)."""
        # The deletion finds what is there itself: a look first would cost an object
        # store two more requests (a HEAD and a listing).
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_dir(self._path)
