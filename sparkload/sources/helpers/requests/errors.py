"""Errors of a request that name its method and URL with the credentials blanked.

requests and urllib3 put the URL with its query in the messages of connection errors and
timeouts (``Max retries exceeded with url: /items?api_key=...``), and a broken JSON body
fails with ``Expecting value: line 1 column 1`` and no URL at all. These functions make
the errors sparkload raises instead: of the same requests classes, so handlers written
for requests still catch them.
"""

from __future__ import annotations

from collections.abc import Iterable

import requests
from requests.exceptions import ChunkedEncodingError, ContentDecodingError, RetryError

from sparkload.common.json_types import JSONValue
from sparkload.config.resolved import redact_text
from sparkload.exceptions import UnexpectedResponseError
from sparkload.sources.helpers.requests.redaction import redact_url

# The errors whose messages quote the URL: the transport's, not an error status (an
# HTTPRequestError is redacted already).
TRANSPORT_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    RetryError,
    ChunkedEncodingError,
    ContentDecodingError,
)
_REDACTED_MARK = "_sparkload_redacted"


def describe(request: requests.PreparedRequest | None, secret_params: Iterable[str] = ()) -> str:
    """``METHOD url`` of ``request``, the URL redacted."""
    if request is None:
        return "a request"
    return f"{request.method or 'GET'} {redact_url(request.url or '', secret_params)}"


def redacted_transport_error(
    error: requests.RequestException,
    request: requests.PreparedRequest | None,
    secret_params: Iterable[str] = (),
) -> requests.RequestException:
    """``error`` again, of its class, with a message that names the request and quotes the
    cause with the URL's credentials blanked; it carries no request (whose headers hold
    credentials). Given one made here, the same error back."""
    if getattr(error, _REDACTED_MARK, False):
        return error
    secret_params = tuple(secret_params)
    text = str(error)
    if request is not None and request.url:
        # urllib3 quotes the path with its query, or the whole URL through a proxy.
        path = request.path_url
        for raw, shown in (
            (request.url, redact_url(request.url, secret_params)),
            (path, redact_url(path, secret_params)),
        ):
            text = text.replace(raw, shown)
    redacted = type(error)(
        f"{describe(request, secret_params)} failed: {redact_text(text)}", response=error.response
    )
    setattr(redacted, _REDACTED_MARK, True)
    return redacted


def body_timeout(
    request: requests.PreparedRequest | None, seconds: float, secret_params: Iterable[str] = ()
) -> requests.ReadTimeout:
    """The error of a response whose body did not arrive in ``seconds``."""
    error = requests.ReadTimeout(
        f"{describe(request, secret_params)}: the response was not read in full within "
        f"{seconds:g} s (request_timeout bounds the whole body, not each read)"
    )
    setattr(error, _REDACTED_MARK, True)
    return error


def json_body(response: requests.Response, expected: str, secret_params: Iterable[str] = ()) -> JSONValue:
    """``response``'s body as JSON, or an ``UnexpectedResponseError`` naming the URL, the
    status, the content type and ``expected`` (what the body was to hold). The body itself
    is not quoted: it may echo credentials or personal data."""
    try:
        return response.json()
    except ValueError as exc:  # requests' JSONDecodeError, whichever JSON library it uses
        body = response.content or b""
        found = f"{len(body)} bytes that are not JSON ({exc})" if body.strip() else "an empty body"
        raise UnexpectedResponseError(
            method=(response.request.method or "GET") if response.request is not None else "GET",
            url=redact_url(response.url or "", secret_params),
            status_code=response.status_code,
            content_type=response.headers.get("Content-Type"),
            found=found,
            expected=expected,
            response=response,
        ) from None
