"""What the readers learn of a listed file before the engine reads it: how it is compressed,
its first line (a CSV file's header), whether its compressed stream is whole, and, for a
text encoding the engines do not all read, a UTF-8 copy to read instead.

Files are opened through pyarrow's filesystems (as they are listed), decompressed by
pyarrow; only a header line or, for a compressed file, a pass over its stream is read here.
"""

from __future__ import annotations

import codecs
import os
import posixpath
from collections.abc import Iterator
from typing import NamedTuple

import pyarrow as pa

from sparkload.common import context
from sparkload.exceptions import ResourceError, UnreadableFileError
from sparkload.sources.filesystem.listing import file_at

# The suffixes the engines' text readers take as a compression codec (Hadoop's and Sail's).
COMPRESSIONS = frozenset({"gz", "bz2", "zst", "lz4", "deflate", "snappy", "xz", "br"})
# Those pyarrow decompresses as the engines do (Hadoop's ``.lz4`` is not LZ4's frame format).
_PYARROW_CODECS = {"gz": "gzip", "bz2": "bz2", "zst": "zstd", "br": "brotli"}
_CHUNK = 1024 * 1024
_PLAIN_ENCODINGS = frozenset({"utf-8", "ascii"})


class Inspected(NamedTuple):
    """One file as the engine is to read it: ``file_url`` (the listed file, or its UTF-8
    copy), its compression suffix ("" for none), its first line (None if not read) and
    whether nothing follows that line (a header-only CSV file)."""

    file_url: str
    compression: str
    first_line: bytes | None
    header_only: bool = False


def compression_of(file_url: str) -> str:
    """The compression suffix of a file name as the engines read it (``a.csv.gz``: ``gz``)."""
    suffix = posixpath.splitext(file_url)[1].lstrip(".").lower()
    return suffix if suffix in COMPRESSIONS else ""


def needs_transcoding(encoding: str | None) -> bool:
    """Whether files in ``encoding`` must be copied as UTF-8 for the engine: Sail reads UTF-8
    only, and Apache Spark splits lines by the byte ``\\n`` (wrong in UTF-16)."""
    if encoding is None:
        return False
    try:
        name = codecs.lookup(encoding).name
    except LookupError as exc:
        raise ResourceError(
            f"a file reader was given encoding={encoding!r}, which Python does not know"
        ) from exc
    return name not in _PLAIN_ENCODINGS


def inspect(file_url: str, first_line: bool) -> Inspected:
    """Read what the grouping of files needs: the first line if asked, and the whole stream of
    a compressed file, so that a damaged one fails here, named, rather than inside the
    engine's read of many files, unnamed."""
    compression = compression_of(file_url)
    if not first_line and not _checkable(file_url, compression):
        return Inspected(file_url, compression, None)
    line, rows_follow = b"", False
    with _opened(file_url, compression) as chunks:
        for chunk in chunks:
            if first_line and not line.endswith(b"\n"):
                head, newline, chunk = chunk.partition(b"\n")
                line += head + newline
            rows_follow = rows_follow or (line.endswith(b"\n") and bool(chunk.strip()))
            if not _checkable(file_url, compression) and (not first_line or rows_follow):
                break
    if not first_line:
        return Inspected(file_url, compression, None)
    return Inspected(file_url, compression, line.rstrip(b"\r\n"), header_only=not rows_follow)


def transcode(file_url: str, encoding: str, target: str) -> None:
    """Copy the text file ``file_url`` (decompressed) in ``encoding`` to ``target`` as UTF-8."""
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        with _opened(file_url, compression_of(file_url)) as chunks, open(target, "wb") as out:
            for chunk in chunks:
                out.write(decoder.decode(chunk).encode("utf-8"))
            out.write(decoder.decode(b"", final=True).encode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ResourceError(f"file {file_url} is not {encoding} text: {exc}") from exc


def _checkable(file_url: str, compression: str) -> bool:
    """Whether pyarrow can decompress the file to check it."""
    return bool(compression) and _codec(file_url) is not None


def _codec(file_url: str) -> str | None:
    codec = _PYARROW_CODECS.get(compression_of(file_url))
    return codec if codec is not None and pa.Codec.is_available(codec) else None


class _opened:
    """The file's decompressed bytes in chunks; a damaged stream raises naming the file."""

    def __init__(self, file_url: str, compression: str) -> None:
        self.file_url = file_url
        fs, path = file_at(file_url)
        codec = _codec(file_url) if compression else None
        self._codec = codec
        self._stream = fs.open_input_stream(path, compression=codec)

    def __enter__(self) -> Iterator[bytes]:
        return self._chunks()

    def _chunks(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self._stream.read(_CHUNK)
            except (OSError, pa.ArrowException) as exc:
                resource = context.resource_name() or "?"
                raise UnreadableFileError(resource, self.file_url, self._codec or "text", str(exc)) from exc
            if not chunk:
                return
            yield bytes(chunk)

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


def copy_name(folder: str, index: int, file_url: str) -> str:
    """A plain name in ``folder`` for the UTF-8 copy of the ``index``th file (its suffix kept
    without the compression, which the copy does not have)."""
    base = posixpath.basename(file_url)
    if compression_of(base):
        base = posixpath.splitext(base)[0]
    suffix = posixpath.splitext(base)[1]
    return os.path.join(folder, f"{index:05d}{suffix if suffix.isascii() and suffix[1:].isalnum() else ''}")
