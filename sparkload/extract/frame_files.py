"""The source files a Spark DataFrame item reads, as the reader that made it knows them, so
that a failure to stage the item names the file to blame.

An engine reads a page of files as one DataFrame, and lazily: a damaged file fails the
staging write, with an error that names the file by an engine path at best. The reader
registers how to find the file; the extractor asks only when the write has failed, so a
load that succeeds pays nothing for it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class UnreadableFile(NamedTuple):
    file: str  # as the user listed it
    kind: str  # the reader's format
    error: str  # the engine's message for that file alone


FindUnreadable = Callable[[], UnreadableFile | None]

_finders: weakref.WeakKeyDictionary[DataFrame, FindUnreadable] = weakref.WeakKeyDictionary()


def remember(frame: DataFrame, find_unreadable: FindUnreadable) -> None:
    """``find_unreadable`` names the first of ``frame``'s files the engine cannot read."""
    _finders[frame] = find_unreadable


def unreadable_file(frame: DataFrame) -> UnreadableFile | None:
    """The file of ``frame`` to blame for a failure, where its reader can tell."""
    find = _finders.get(frame)
    return find() if find is not None else None
