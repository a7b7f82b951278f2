"""The one place a listed file's URL becomes the path handed to an engine's file reader.

A listed file is named as dlt names it (``file:///data/a[1].csv``, ``s3://bucket/a b.csv``):
its characters are the file's own. Engines do not take such a name as it is:

- Apache Spark globs every reader path (Hadoop's globber): ``{}[]*?`` are patterns, so
  ``data[1].csv`` reads ``data1.csv``; a backslash escapes them. ``%`` is a plain character.
- Sail takes the path as a URL: ``%20`` is decoded to a space, and ``{}[]*`` are patterns
  or refused; so every character but ``/`` is percent-encoded.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import quote

from sparkload.engine.capabilities import reader_paths_are_globs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Hadoop's glob metacharacters (what Spark's ``isGlobPath`` looks for), the backslash first.
_HADOOP_GLOB = re.compile(r"([\\{}\[\]*?])")


def engine_paths(spark: SparkSession, file_urls: list[str]) -> list[str]:
    """``file_urls`` as ``spark``'s file readers must be given them to read those files and
    no others."""
    globs = reader_paths_are_globs(spark)
    return [engine_path(url, globs) for url in file_urls]


def engine_path(file_url: str, globs: bool) -> str:
    """``file_url`` for an engine whose readers glob their paths (``globs``) or decode them
    as URLs."""
    scheme, sep, rest = file_url.partition("://")
    if not sep:  # a bare local path
        scheme, rest = "file", file_url
    escaped = _HADOOP_GLOB.sub(r"\\\1", rest) if globs else quote(rest, safe="/")
    return f"{scheme}://{escaped}"
