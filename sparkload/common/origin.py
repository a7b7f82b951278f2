"""Where a resource reads its data: the dataset OpenLineage names as a run's input.

A source that knows its origin (a database table, an HTTP endpoint, a bucket folder) marks
the resources it makes with ``mark_origin``; the pipeline's lineage (``pipeline/lineage.py``)
reads the mark with ``origin_of``. It lives in the layer every stage shares because the
sources make the mark and the pipeline reads it, and neither may import the other.

An origin never holds a secret: ``without_credentials`` takes user, password and query
(where tokens and keys travel) out of a URL before it becomes one.
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse

# The attribute the mark is kept in: a resource's copies (``copy.copy``) keep it.
_ATTRIBUTE = "_sparkload_origin"


@dataclasses.dataclass(frozen=True)
class Origin:
    """A dataset by OpenLineage's naming conventions: ``namespace`` (``postgres://host:5432``,
    ``https://api.example.com``, ``s3://bucket``, ``file``) and ``name`` within it."""

    namespace: str
    name: str


def mark_origin(resource: object, origin: Origin) -> None:
    """Record that ``resource`` reads ``origin``."""
    setattr(resource, _ATTRIBUTE, origin)


def origin_of(resource: object) -> Origin | None:
    """The origin ``mark_origin`` recorded for ``resource``, if any."""
    found = getattr(resource, _ATTRIBUTE, None)
    return found if isinstance(found, Origin) else None


def without_credentials(url: str) -> str:
    """``url`` with no user, password, query or fragment: ``scheme://host[:port]/path``."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def location_origin(uri: str) -> Origin:
    """A file or object-store location as OpenLineage names it: a local path is namespace
    ``file`` and its absolute path; ``s3://bucket/key`` is ``s3://bucket`` and ``key``
    (likewise for the other stores: ``scheme://authority`` and the path within it)."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme in ("", "file") or len(parts.scheme) == 1:  # a Windows drive letter too
        path = parts.path if parts.scheme == "file" else uri
        return Origin("file", os.path.abspath(path).rstrip("/") or "/")
    bare = urllib.parse.urlsplit(without_credentials(uri))
    return Origin(f"{bare.scheme}://{bare.netloc}", bare.path.strip("/"))


def endpoint_origin(base_url: str, path: str) -> Origin:
    """An HTTP endpoint: namespace ``scheme://host[:port]`` of the URL it is requested at,
    name its path (``v1/orders``; placeholders as written), with no credentials or query.
    ``path`` may be a whole URL of its own, which then stands instead of ``base_url``."""
    url = path if urllib.parse.urlsplit(path).scheme else f"{base_url.rstrip('/')}/{path.lstrip('/')}"
    return location_origin(url)
