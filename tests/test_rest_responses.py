"""Responses that would hang or confuse a run: a paginator pointed back at a page it read
(a next link or cursor that never changes), a body trickled a byte at a time, a page that is
not JSON. Each ends in an error that names the URL (credentials blanked), in bounded time.

The servers are real, on 127.0.0.1: ``FakeAPI`` for JSON answers, and a raw socket server
for answers no well-behaved server gives.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from http_api import Answer, APIRequest, FakeAPI

import sparkload as sl
from sparkload.sources.helpers import requests as sl_requests
from sparkload.sources.helpers.rest_client import RESTClient
from sparkload.sources.helpers.rest_client.auth import APIKeyAuth
from sparkload.sources.helpers.rest_client.paginators import (
    HeaderLinkPaginator,
    JSONLinkPaginator,
    JSONResponseCursorPaginator,
)

KEY = "resp-key-93d0b6a2f1"
# Enough for the code before the guard to end by itself, after many repeated pages.
LOOP_LIMIT = 30


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_BACKOFF_FACTOR", "0.01")


# -- 6. paginators that never move on ------------------------------------------------------------


@pytest.fixture(scope="module")
def looping() -> Iterator[FakeAPI]:
    """Endpoints whose next page is always the same one (up to LOOP_LIMIT requests)."""
    with FakeAPI() as api:

        def stuck(answer: Callable[[APIRequest, bool], Answer]) -> Callable[[APIRequest], Answer]:
            def handler(request: APIRequest) -> Answer:
                return answer(request, len(api.asked(request.path)) < LOOP_LIMIT)

            return handler

        api.route(
            "/self_link",
            stuck(
                lambda r, more: (
                    200,
                    {},
                    {"data": [{"id": 1}], "next": f"{api.url}/self_link" if more else None},
                )
            ),
        )
        api.route(
            "/header_self_link",
            stuck(
                lambda r, more: (
                    200,
                    {"Link": f'<{api.url}/header_self_link>; rel="next"'} if more else {},
                    [{"id": 1}],
                )
            ),
        )
        api.route(
            "/stuck_cursor",
            stuck(
                lambda r, more: (
                    200,
                    {},
                    {"results": [{"id": 1}], "cursors": {"next": "c1" if more else None}},
                )
            ),
        )
        api.route(
            "/cycle",  # p=1 -> p=2 -> p=1 ...
            stuck(
                lambda r, more: (
                    200,
                    {},
                    {
                        "data": [{"id": 1}],
                        "next": f"{api.url}/cycle?p={2 if r.query.get('p') != '2' else 1}" if more else None,
                    },
                )
            ),
        )
        yield api


LOOPS = [
    ("/self_link", lambda: JSONLinkPaginator(next_url_path="next"), "data"),
    ("/header_self_link", HeaderLinkPaginator, None),
    ("/stuck_cursor", lambda: JSONResponseCursorPaginator(cursor_path="cursors.next"), "results"),
    ("/cycle", lambda: JSONLinkPaginator(next_url_path="next"), "data"),
    ("/self_link", lambda: None, None),  # auto-detected: a JSON link
]


@pytest.mark.parametrize(
    ("path", "make", "selector"), LOOPS, ids=["json link", "header link", "cursor", "cycle", "auto-detected"]
)
def test_a_paginator_given_the_same_next_page_twice_stops_with_an_error(
    looping: FakeAPI, path: str, make: Callable[[], Any], selector: str | None
) -> None:
    before = len(looping.asked(path))
    client = RESTClient(looping.url, auth=APIKeyAuth(name="api_key", api_key=KEY, location="query"))
    with pytest.raises(Exception) as failure:  # noqa: B017 (the class is checked below)
        list(client.paginate(path, paginator=make(), data_selector=selector))
    asked = len(looping.asked(path)) - before
    assert asked <= 3, asked  # the page it points back at, read once more at most
    assert isinstance(failure.value, sl.PaginatorLoopError)
    message = str(failure.value)
    assert "already given" in message and looping.url in message
    assert KEY not in message and "api_key=***" in message
    assert failure.value.url is not None and KEY not in failure.value.url


def test_a_paginator_reused_for_a_second_paging_starts_afresh() -> None:
    with FakeAPI() as api:
        api.route("/a", lambda r: (200, {}, {"data": [{"id": 1}], "next": f"{api.url}/b"}))
        api.route("/b", lambda r: (200, {}, {"data": [{"id": 2}], "next": None}))
        client = RESTClient(api.url, paginator=JSONLinkPaginator(), data_selector="data")
        paginator = JSONLinkPaginator()
        for _ in range(2):  # the same paginator object twice: /b is not "given twice"
            pages = list(client.paginate("/a", paginator=paginator))
            assert [row["id"] for page in pages for row in page] == [1, 2]


# -- a raw server for answers no well-behaved server gives ---------------------------------------


class RawServer:
    """Accepts connections on 127.0.0.1 and lets ``answer(conn)`` write whatever it likes
    after the request's head has been read."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self._answer = answer
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            with contextlib.suppress(OSError):  # the client gave up: what the timeout tests want
                self._answer(conn)


def answer_with(status: str, content_type: str | None, body: bytes) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
        if content_type:
            head += f"Content-Type: {content_type}\r\n"
        conn.sendall(head.encode() + b"\r\n" + body)

    return answer


# -- 7. a body trickled a byte at a time ---------------------------------------------------------

TRICKLE_BYTES = 16  # at 0.5 s a byte: 8 s, four times the timeout


def trickle(conn: socket.socket) -> None:
    body = b'{"data": [' + b" " * (TRICKLE_BYTES - 12) + b"]}"
    conn.sendall(
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    )
    for byte in body:
        conn.sendall(bytes([byte]))
        time.sleep(0.5)


def test_a_trickled_body_times_out_within_the_request_timeout() -> None:
    with RawServer(trickle) as server:
        client = sl_requests.Client(request_timeout=2, request_max_attempts=1)
        started = time.monotonic()
        with pytest.raises(sl_requests.ReadTimeout) as failure:
            client.get(f"{server.url}/slow?api_key={KEY}")
        elapsed = time.monotonic() - started
    assert 1.9 <= elapsed < 3.5, elapsed
    message = str(failure.value)
    assert f"GET {server.url}/slow?api_key=***" in message and "2 s" in message
    assert KEY not in message


def test_a_trickled_page_of_a_rest_client_times_out_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_TIMEOUT", "1")  # as a deployment sets it
    monkeypatch.setenv("RUNTIME__REQUEST_MAX_ATTEMPTS", "1")
    with RawServer(trickle) as server:
        client = RESTClient(server.url, auth=APIKeyAuth(name="k", api_key=KEY, location="query"))
        started = time.monotonic()
        with pytest.raises(sl_requests.ReadTimeout) as failure:
            list(client.paginate("/items"))
        elapsed = time.monotonic() - started
    assert elapsed < 2.5, elapsed
    assert KEY not in str(failure.value) and "k=***" in str(failure.value)


def test_a_body_that_arrives_in_time_is_read_whole() -> None:
    body = b'{"data": [' + b",".join(b'{"id": %d}' % n for n in range(20000)) + b"]}"
    with RawServer(answer_with("200 OK", "application/json", body)) as server:
        response = sl_requests.Client(request_timeout=5, request_max_attempts=1).get(f"{server.url}/big")
    assert len(response.json()["data"]) == 20000


# -- 8. a page that is not JSON ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "body", "found"),
    [
        ("application/json", b'{"data": [{"id": 1}, {"id"', "bytes that are not JSON"),
        ("text/html; charset=utf-8", b"<html><body>Service paused</body></html>", "bytes that are not JSON"),
        ("application/json", b"", "an empty body"),
    ],
    ids=["truncated json", "html", "empty"],
)
def test_a_page_that_is_not_json_names_the_url_status_and_content_type(
    content_type: str, body: bytes, found: str
) -> None:
    with RawServer(answer_with("200 OK", content_type, body)) as server:
        client = RESTClient(server.url, auth=APIKeyAuth(name="api_key", api_key=KEY, location="query"))
        with pytest.raises(ValueError) as failure:  # a JSON decoding error is one too
            list(client.paginate("/items", params={"page": 3}))
    error = failure.value
    message = str(error)
    assert f"GET {server.url}/items?page=3&api_key=*** answered HTTP 200" in message
    assert f"Content-Type {content_type}" in message and found in message
    assert "expected a JSON body" in message
    assert KEY not in message
    assert isinstance(error, sl.UnexpectedResponseError)
    assert (error.status_code, error.content_type) == (200, content_type)


def test_a_last_page_that_repeats_its_cursor_but_says_no_more_is_no_loop() -> None:
    """An API whose last page gives back the cursor it was asked with, and has_more false
    (or no records): paging ends there, as in dlt."""

    def pages(request: APIRequest) -> Answer:
        cursor = request.query.get("cursor")
        if cursor is None:
            return 200, {}, {"results": [{"id": 1}], "next": "c1", "more": True}
        return 200, {}, {"results": [], "next": cursor, "more": False}

    with FakeAPI() as api:
        api.route("/items", pages)
        for paginator in (
            JSONResponseCursorPaginator(cursor_path="next", has_more_path="more"),
            JSONResponseCursorPaginator(cursor_path="next", stop_after_empty_page=True),
        ):
            client = RESTClient(api.url, paginator=paginator, data_selector="results")
            assert [row["id"] for page in client.paginate("/items") for row in page] == [1]
