"""A drop-in for ``requests`` (dlt's ``dlt.sources.helpers.requests``): the same functions
and exceptions, over sessions that retry and time out by default (see ``retry.Client``)::

    from sparkload.sources.helpers import requests

    response = requests.get("https://api.example.com/items")  # retried, times out, raises

The module-level functions share one ``Client``, which reads its settings from config the
first time it is used; ``init()`` (or ``client.configure()``) reads them again.
"""

from __future__ import annotations

from requests import (
    ConnectionError,
    ConnectTimeout,
    FileModeWarning,
    HTTPError,
    ReadTimeout,
    Request,
    RequestException,
    Response,
    Timeout,
    TooManyRedirects,
    URLRequired,
)
from requests.exceptions import ChunkedEncodingError, RetryError

from sparkload.exceptions import HTTPRequestError
from sparkload.sources.helpers.requests.retry import DEFAULT_RETRY_STATUS, Client, RetrySettings
from sparkload.sources.helpers.requests.session import DEFAULT_TIMEOUT, Session

client = Client()

get, post, put, patch, delete, options, head, request = (
    client.get,
    client.post,
    client.put,
    client.patch,
    client.delete,
    client.options,
    client.head,
    client.request,
)


def init(**settings: object) -> None:
    """Re-read the shared client's settings from config (and take any passed)."""
    client.configure(**settings)


__all__ = [
    "DEFAULT_RETRY_STATUS",
    "DEFAULT_TIMEOUT",
    "ChunkedEncodingError",
    "Client",
    "ConnectTimeout",
    "ConnectionError",
    "FileModeWarning",
    "HTTPError",
    "HTTPRequestError",
    "ReadTimeout",
    "Request",
    "RequestException",
    "Response",
    "RetryError",
    "RetrySettings",
    "Session",
    "Timeout",
    "TooManyRedirects",
    "URLRequired",
    "client",
    "delete",
    "get",
    "head",
    "init",
    "options",
    "patch",
    "post",
    "put",
    "request",
]
