"""A listed file that opens itself, as dlt's ``FileItemDict``: the ``FileItem`` fields plus
``open()``, ``read_bytes()`` and ``read_text()``, so a transformer written for dlt's
``filesystem`` that opens each file runs unchanged::

    @sl.transformer
    def lines(items):
        for item in items:
            with item.open(mode="rt") as f:  # a ``.gz`` file is decompressed
                yield from ({"line": line} for line in f)

Files are opened through pyarrow's filesystems, as they are listed. As dlt's, ``open()``
decompresses gzip only (the one compression ``mimetypes`` names and dlt reads), and an item
listed with ``extract_content`` is read from its content, not from the file again.
"""

from __future__ import annotations

import gzip
import io
from typing import IO, Any, Literal

from sparkload.sources.filesystem.listing import FileItem, file_at

Compression = Literal["auto", "disable", "enable"]
_COMPRESSIONS = ("auto", "enable", "disable")
_TEXT_OPTIONS = ("encoding", "errors", "newline")
_GZIP_MAGIC = b"\x1f\x8b"


class FileItemDict(dict[str, Any]):
    """One listed file (dlt's ``FileItemDict``): a dict of the ``FileItem`` fields that can
    open and read the file it names."""

    def __init__(self, mapping: FileItem | dict[str, Any]) -> None:
        super().__init__(mapping)

    @property
    def local_file_path(self) -> str:
        """The file's path on the local filesystem (of a ``file://`` URL)."""
        url = str(self["file_url"])
        if "://" in url and not url.startswith("file://"):
            raise ValueError(f"file {url} is not on the local filesystem: it has no local path")
        return file_at(url)[1]

    def open(  # noqa: A003 - dlt's name
        self, mode: str = "rb", compression: Compression = "auto", **kwargs: Any
    ) -> IO[Any]:
        """The file opened for reading: ``mode`` "rb" (bytes) or "r"/"rt" (text, with
        ``encoding``, ``errors`` and ``newline`` as ``open()`` takes them). ``compression``:
        "auto" decompresses a file whose ``encoding`` is gzip (``a.csv.gz``), "enable"
        decompresses any file as gzip, "disable" reads the stored bytes."""
        if compression not in _COMPRESSIONS:
            raise ValueError(
                f"FileItemDict.open() of {self.get('file_url')}: compression must be one of "
                f"{', '.join(_COMPRESSIONS)}, got {compression!r}"
            )
        if any(flag in mode for flag in "wax+"):
            raise ValueError(
                f"FileItemDict.open() of {self.get('file_url')}: mode {mode!r} would write; "
                "listed files open for reading only"
            )
        text_options = {key: kwargs.pop(key) for key in _TEXT_OPTIONS if key in kwargs}
        if kwargs:
            raise TypeError(
                f"FileItemDict.open() of {self.get('file_url')}: "
                f"unexpected options {', '.join(sorted(kwargs))}"
            )
        if "t" not in mode and text_options:
            raise ValueError(
                f"FileItemDict.open() of {self.get('file_url')}: {', '.join(sorted(text_options))} "
                f"apply to text mode only, not mode {mode!r}"
            )
        gzipped = compression == "enable" or (compression == "auto" and self.get("encoding") == "gzip")
        binary = self._stored(gzipped)
        if "b" in mode:
            return binary
        return io.TextIOWrapper(binary, **text_options)

    def read_bytes(self) -> bytes:
        """The file's stored bytes (not decompressed, as dlt's): its ``file_content`` when
        listed with it."""
        content = self.get("file_content")
        if content is not None:
            return bytes(content)
        with self.open(mode="rb", compression="disable") as f:
            return bytes(f.read())

    def read_text(
        self, encoding: str = "utf-8", errors: str = "strict", compression: Compression = "auto"
    ) -> str:
        """The file's text (decompressed where ``open()`` decompresses it)."""
        with self.open(mode="rt", compression=compression, encoding=encoding, errors=errors) as f:
            return str(f.read())

    def _stored(self, gzipped: bool) -> IO[bytes]:
        """The file's bytes as a binary stream, decompressed as gzip if ``gzipped``."""
        content = self.get("file_content")
        fs, path = file_at(str(self["file_url"]))
        if gzipped:
            # A file that is not gzip fails here, named, not at a later read, unnamed.
            if content is not None:
                head = bytes(content[:2])
            else:
                with fs.open_input_file(path) as f:
                    head = f.read(2)
            if head != _GZIP_MAGIC:
                raise ValueError(f"file {self['file_url']} is not gzip-compressed: it cannot be decompressed")
        if content is not None:
            return io.BytesIO(gzip.decompress(content) if gzipped else content)
        # pyarrow's files are file-like; a plain one is seekable, a decompressed one is read
        # through once (and closing it closes the file beneath).
        opened: Any = fs.open_input_stream(path, compression="gzip") if gzipped else fs.open_input_file(path)
        return opened
