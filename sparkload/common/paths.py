"""Names that become folders, and local paths every reader and writer can reach.

Invariants:
- a name that becomes one folder (a pipeline's working directory, its lock file, its
  staging folder beside the dataset) is checked by ``check_folder_name`` before anything
  is read or written: it can never name a parent, an absolute path or a nested folder;
- a table name reaches a dataset folder only in dlt's normal form (``check_table_name``);
- a folder that must be on this machine's disk (``pipelines_dir``) is taken from what the
  user gave by ``local_folder``, which refuses a URL instead of making a folder named
  ``s3:`` of it;
- ``reachable_path`` is the one place a local path becomes the path handed to the engine,
  to delta-rs and to pyarrow. Their URL parsers disagree on characters such as a space,
  ``%``, ``#``, ``?`` or ``\\``: Sail 0.7 writes a table's log to ``my%20lake`` and its
  data files to ``my%2520lake``, delta-rs reads ``a%20b`` as ``a b`` and ``\\`` as ``/``,
  and a percent-encoded ``file://`` URI fares no better. A path with such a character is
  handed to them as a symbolic link of plain characters to the same folder, so every
  consumer sees the one folder the user named; Hadoop's JVM filesystems follow it too.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import urllib.parse
from pathlib import Path

from sparkload.exceptions import InvalidNameError

FOLDER_NAME_RULE = (
    "the name becomes a folder name: use letters, digits, '_', '-' and '.' "
    "(not '.' or '..', at most 200 characters)"
)
TABLE_NAME_RULE = "a table in a dataset is named in dlt's normal form (lowercase letters, digits, '_')"
LOCAL_FOLDER_RULE = (
    "the pipelines' working folders hold each pipeline's run lock, extracted files, traces and "
    "a copy of its state, which need a local filesystem (dlt too requires a local pipelines_dir): "
    "use a local folder; the destination (and a catalog's staging_url) may be in a bucket, "
    "and the state is read back from there on a machine whose working folder is empty"
)
# Room for the lock file's ``.<name>.lock`` within the 255 bytes most filesystems allow.
_MAX_FOLDER_NAME = 200
_FOLDER_NAME = re.compile(r"[\w.-]+")
_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
# Characters every URL parser reads as themselves in a path.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/._~+=,@-]*")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_links_lock = threading.Lock()


def check_folder_name(argument: str, name: str) -> str:
    """``name`` if it is one plain folder name; else ``InvalidNameError`` naming ``argument``.
    Path separators, ``.``/``..``, NUL and control characters are refused by the pattern
    (word characters, ``-`` and ``.`` only), so the folder is always a child of its parent."""
    if (
        not isinstance(name, str)
        or name in (".", "..")
        or len(name.encode()) > _MAX_FOLDER_NAME
        or not _FOLDER_NAME.fullmatch(name)
    ):
        raise InvalidNameError(argument, str(name), FOLDER_NAME_RULE)
    return name


def folder_name_from(text: str) -> str:
    """``text`` made a valid folder name (for default names taken from a script's name)."""
    name = re.sub(r"[^\w.-]+", "_", text, flags=re.ASCII).strip(".") or "pipeline"
    return name[:_MAX_FOLDER_NAME]


def check_table_name(name: str) -> str:
    """``name`` if it is a normalized table name (one folder in a dataset, one SQL identifier)."""
    if not isinstance(name, str) or not _TABLE_NAME.fullmatch(name):
        raise InvalidNameError("table_name", str(name), TABLE_NAME_RULE)
    return name


def local_folder(argument: str, value: str | os.PathLike[str]) -> Path:
    """The local folder ``value`` (a path, or a ``file://`` URL) given as ``argument``; any
    other URL is refused with ``InvalidNameError``: as a path, ``s3://bucket/work`` would
    silently become the local folders ``s3:/bucket/work``."""
    text = os.fspath(value)
    if text.startswith("file://"):
        return Path(text[len("file://") :])
    if _URL.match(text):
        raise InvalidNameError(argument, _without_credentials(text), LOCAL_FOLDER_RULE)
    return Path(text)


def _without_credentials(url: str) -> str:
    """``url`` as it may be shown: a user and password in it are replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"***@{host}"))


def reachable_path(uri: str) -> str:
    """The path to hand the engine, delta-rs and pyarrow for the folder ``uri``: itself for
    a URL or a local path of plain characters, else a symbolic link of plain characters
    to it (made once, in this user's ``sparkload-paths`` folder of the temp directory)."""
    if "://" in uri or _PLAIN_PATH.fullmatch(uri):
        return uri
    target = os.path.abspath(uri)
    # The link needs a folder to point at; the dataset's folder is made as its first write would.
    os.makedirs(target, exist_ok=True)
    link = os.path.join(_links_folder(), hashlib.sha256(target.encode()).hexdigest()[:24])
    with _links_lock:
        if not (os.path.islink(link) and os.readlink(link) == target):
            # Made aside and renamed: a process reading the link meanwhile sees a whole one.
            partial = f"{link}.{os.getpid()}.{threading.get_ident()}"
            os.symlink(target, partial)
            os.replace(partial, link)
    return link


def _links_folder() -> str:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = os.path.join(tempfile.gettempdir(), f"sparkload-paths-{uid}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder
