"""``HTTPRequestError``, one of the errors of ``sparkload.exceptions`` (which exports it): it is
also a ``requests.HTTPError``, so it is defined here, beside the import of requests, which
only a pipeline reading an HTTP source pays for."""

from __future__ import annotations

from typing import Any

from requests.exceptions import HTTPError as _RequestsHTTPError

from sparkload.exceptions import SparkloadError


class HTTPRequestError(SparkloadError, _RequestsHTTPError):
    """An HTTP request answered with an error status (after any retries).

    Also a ``requests.HTTPError``, so code written for ``requests`` (or dlt's helpers) still
    catches it. ``url`` is redacted: query parameters that carry credentials (``api_key``,
    ``token``, an ``APIKeyAuth`` parameter ...) and a password in the URL read ``***``; the
    message never holds a header (where bearer tokens travel) or a request body.
    """

    def __init__(
        self,
        *,
        method: str,
        url: str,
        status_code: int,
        reason: str | None,
        body: str | None = None,
        response: Any = None,
    ) -> None:
        kind = "client error" if status_code < 500 else "server error"
        message = f"{method} {url} failed with HTTP {status_code} {reason or ''}".rstrip() + f" ({kind})"
        if body:
            message += f": {body}"
        # The response goes to requests' own attribute (handlers read ``error.response``);
        # the request is left out, as its headers carry credentials.
        super().__init__(message, response=response)
        self.method = method
        self.url = url
        self.status_code = status_code
        self.reason = reason
        self.body = body
