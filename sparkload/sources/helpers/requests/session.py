"""A ``requests.Session`` that times out by default (the whole body within the read
timeout), turns error statuses, connection errors and timeouts into errors that name the
URL without its credentials, and keeps credentials from redirects to other origins."""

from __future__ import annotations

import datetime
import importlib.metadata
import threading
from collections.abc import Iterable
from typing import Any

import requests
from requests.exceptions import ChunkedEncodingError
from urllib3.exceptions import MaxRetryError, ProtocolError
from urllib3.util.retry import Retry

from sparkload.exceptions import HTTPRequestError
from sparkload.sources.helpers.requests.errors import TRANSPORT_ERRORS, body_timeout, redacted_transport_error
from sparkload.sources.helpers.requests.origins import CredentialScope, guard_redirects, trusted_origins_of
from sparkload.sources.helpers.requests.redaction import redact_url

# dlt's default: a request never hangs a run for ever.
DEFAULT_TIMEOUT = 60.0


def _user_agent() -> str:
    try:
        return f"sparkload/{importlib.metadata.version('sparkload')}"
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        return "sparkload"


USER_AGENT = _user_agent()

TimeoutSeconds = float | datetime.timedelta
TRequestTimeout = TimeoutSeconds | tuple[TimeoutSeconds, TimeoutSeconds]


def timeout_seconds(timeout: TRequestTimeout | None) -> float | tuple[float, float] | None:
    """A timeout as requests takes it: seconds, or (connect, read) seconds."""
    if isinstance(timeout, tuple):
        connect, read = timeout
        return (_seconds(connect), _seconds(read))
    return None if timeout is None else _seconds(timeout)


def _seconds(value: TimeoutSeconds) -> float:
    return value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)


def raise_for_status(response: requests.Response, secret_params: Iterable[str] = ()) -> None:
    """Raise ``HTTPRequestError`` for a 4xx/5xx response; its URL is redacted (credential
    query parameters, ``secret_params`` too) and its message holds no header or body."""
    if response.status_code < 400:
        return
    request = response.request
    raise HTTPRequestError(
        method=(request.method or "GET") if request is not None else "GET",
        url=redact_url(response.url or (request.url if request is not None else "") or "", secret_params),
        status_code=response.status_code,
        reason=_reason(response.reason),
        response=response,
    )


def _reason(reason: str | bytes | None) -> str | None:
    if isinstance(reason, bytes):
        try:
            return reason.decode("utf-8")
        except UnicodeDecodeError:
            return reason.decode("iso-8859-1")
    return reason


class Session(requests.Session):
    """dlt's ``Session``: every request gets ``timeout`` unless it sets its own, and with
    ``raise_for_status`` an error status raises ``HTTPRequestError`` (a ``requests.HTTPError``).

    Beyond requests: the read timeout bounds the whole body, not each read of it (a server
    trickling a byte at a time cannot hold a run); a connection error or timeout names the
    request with its URL's credentials blanked; a redirect to another origin (scheme,
    host, port) goes on without the request's headers and auth unless that origin is in
    ``trusted_origins`` (see ``origins``); and with ``retry`` (a ``Client`` sets it) an
    error status or a body cut short is sent again, the response hooks running on each
    attempt.
    """

    def __init__(
        self,
        timeout: TRequestTimeout | None = DEFAULT_TIMEOUT,
        raise_for_status: bool = True,
        trusted_origins: Iterable[str] = (),
    ) -> None:
        super().__init__()
        self.timeout = timeout_seconds(timeout)
        self.raise_for_status = raise_for_status
        self.trusted_origins = trusted_origins_of(trusted_origins)
        self.headers["User-Agent"] = USER_AGENT
        # The retries of whole attempts (an error status, a body cut short), each attempt's
        # response hooks run on it as dlt's retries run them; a ``Client`` sets it. The
        # adapter's urllib3 retries cover only connecting and sending, where no response is.
        self.retry: Retry | None = None

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", self.timeout)
        response = super().request(method, url, *args, **kwargs)  # type: ignore[arg-type]
        if self.raise_for_status:
            raise_for_status(response)
        return response

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        # A request sent without request() (RESTClient's paging) still times out.
        kwargs.setdefault("timeout", self.timeout)
        # A guard set by the caller (RESTClient, for its first request's origin) stays.
        guard_redirects(request, CredentialScope.of(request.url or "", self.trusted_origins))
        stream = kwargs.get("stream") or False
        kwargs["stream"] = True  # the body is read below, within its deadline
        retry = self.retry
        while True:
            response, failure = self._attempt(request, stream, kwargs)
            following = _next_retry(retry, request, response, failure)
            if following is None:
                if failure is not None:
                    raise failure
                assert response is not None
                return response
            retry = following
            if response is not None:
                response.close()  # its connection back to the pool before the wait
            retry.sleep(response.raw if response is not None else None)

    def _attempt(
        self, request: requests.PreparedRequest, stream: bool, kwargs: dict[str, Any]
    ) -> tuple[requests.Response | None, requests.RequestException | None]:
        """One attempt: the response (its hooks run on it), or what failed. A response hook
        that raises for the status (rest_api's check) fails the attempt with its response."""
        try:
            response = super().send(request, **kwargs)
            if not stream:
                read_body(response, _read_timeout(kwargs["timeout"]))
        except requests.HTTPError as exc:
            return exc.response, exc
        except TRANSPORT_ERRORS as exc:
            return None, redacted_transport_error(exc, request)
        return response, None


def _next_retry(
    retry: Retry | None,
    request: requests.PreparedRequest,
    response: requests.Response | None,
    failure: requests.RequestException | None,
) -> Retry | None:
    """The retry state for another attempt, or None when the attempt stands (it succeeded,
    its failure is not worth retrying, or the attempts have run out)."""
    if retry is None:
        return None
    method, url = request.method or "GET", request.url or ""
    try:
        if isinstance(failure, ChunkedEncodingError):
            # A body cut short: a read error to urllib3, counted and waited for as one.
            return retry.increment(method, url, error=ProtocolError(str(failure)))
        if response is None or isinstance(failure, TRANSPORT_ERRORS):
            return None
        if not retry.is_retry(method, response.status_code, "Retry-After" in response.headers):
            return None
        return retry.increment(method, url, response=response.raw)
    except (MaxRetryError, ProtocolError):  # run out, or read errors are not retried
        return None


def _read_timeout(timeout: object) -> float | None:
    """The read part of a requests timeout (a number, a pair or a urllib3 ``Timeout``)."""
    if isinstance(timeout, tuple):
        timeout = timeout[1]
    if timeout is None or isinstance(timeout, (int, float)):
        return timeout
    read = getattr(timeout, "read_timeout", None)
    return read if isinstance(read, (int, float)) else None


def read_body(response: requests.Response, seconds: float | None) -> None:
    """Read ``response``'s body, all of it within ``seconds`` of its headers.

    urllib3's read timeout is per socket read, so a body trickled a byte at a time never
    times out; here a timer shuts the socket down for reading when the time is up (urllib3's
    ``shutdown``, made to interrupt a blocked read from another thread), which ends the read
    at once, and the response fails with a ``ReadTimeout`` naming the redacted URL.
    """
    if seconds is None:
        _ = response.content
        return
    interrupted = threading.Event()

    def interrupt() -> None:
        try:
            response.raw.shutdown()
        except (AttributeError, RuntimeError, ValueError, OSError):
            return  # read in full and released meanwhile, or a urllib3 without shutdown()
        interrupted.set()

    timer = threading.Timer(seconds, interrupt)
    timer.daemon = True
    timer.start()
    failure: requests.RequestException | None = None
    try:
        try:
            _ = response.content
        except TRANSPORT_ERRORS as exc:
            failure = exc
    finally:
        # Joined: a read broken by the shutdown may end before interrupt() has said so.
        timer.cancel()
        timer.join()
    if interrupted.is_set():  # a body without a length reads as ended when the socket is shut
        response.close()
        raise body_timeout(response.request, seconds)
    if failure is not None:
        raise redacted_transport_error(failure, response.request) from None
