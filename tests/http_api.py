"""A small JSON API on 127.0.0.1 for the REST tests: a real ``http.server`` in a thread.

Routes are functions of an ``APIRequest`` returning ``(status, headers, body)``; every
request is recorded (method, path, query, headers, cookies, JSON body) so a test can assert
what the client asked. ``fail_next(path, *statuses)`` makes the next requests to a path
answer with those statuses first (a 429 with ``Retry-After``, a 503 flap ...); ``drop_next``
closes the connection without an answer; ``cut_next`` sends the headers and half the body,
then closes (a body cut short).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

Answer = tuple[int, dict[str, str], Any]


@dataclass
class APIRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    cookies: dict[str, str]
    body: Any = None
    raw_body: bytes = b""


@dataclass
class _Failure:
    status: int
    headers: dict[str, str] = field(default_factory=dict)


class _Cut:
    """Answer, but close the connection halfway through the body."""


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed mid-request (the kill tests) resets its connection: not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeAPI:
    """``with FakeAPI() as api: api.route("/items", handler)``; ``api.url`` is its base URL."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, Callable[[APIRequest], Answer]]] = []
        self.requests: list[APIRequest] = []
        self._failures: dict[str, list[_Failure | _Cut | None]] = {}
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes: without this, Nagle's algorithm and
                # the client's delayed ACK hold each answer back 40 ms.
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def _serve(self) -> None:
                api._serve(self)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FakeAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def route(self, prefix: str, handler: Callable[[APIRequest], Answer]) -> None:
        """Serve paths equal to ``prefix`` or below it (``prefix/...``); the longest wins."""
        self.routes.append((prefix, handler))
        self.routes.sort(key=lambda r: -len(r[0]))

    def fail_next(self, path: str, *statuses: int, retry_after: str | None = None) -> None:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        with self._lock:
            self._failures.setdefault(path, []).extend(_Failure(s, dict(headers)) for s in statuses)

    def drop_next(self, path: str, times: int = 1) -> None:
        with self._lock:
            self._failures.setdefault(path, []).extend([None] * times)

    def cut_next(self, path: str, times: int = 1) -> None:
        with self._lock:
            self._failures.setdefault(path, []).extend(_Cut() for _ in range(times))

    def asked(self, path: str) -> list[APIRequest]:
        """The requests that reached ``path`` (failed ones too), in order."""
        return [r for r in self.requests if r.path == path]

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        body: Any = None
        if raw and handler.headers.get("Content-Type", "").startswith("application/json"):
            body = json.loads(raw)
        cookies = SimpleCookie(handler.headers.get("Cookie", ""))
        request = APIRequest(
            method=handler.command,
            path=parts.path,
            query=dict(parse_qsl(parts.query, keep_blank_values=True)),
            headers={k: v for k, v in handler.headers.items()},
            cookies={k: m.value for k, m in cookies.items()},
            body=body,
            raw_body=raw,
        )
        with self._lock:
            self.requests.append(request)
            pending = self._failures.get(request.path)
            failure = pending.pop(0) if pending else ...
        if failure is None:  # drop the connection: the client sees it closed mid-request
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        if isinstance(failure, _Failure):
            status, headers, payload = failure.status, failure.headers, {"error": "try later"}
        else:
            status, headers, payload = self._answer(request)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if isinstance(failure, _Cut):  # the promised length, half of it sent
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        handler.wfile.write(data)

    def _answer(self, request: APIRequest) -> Answer:
        for prefix, handler in self.routes:
            if request.path == prefix or request.path.startswith(prefix.rstrip("/") + "/"):
                return handler(request)
        return 404, {}, {"message": "Not Found"}


# -- a paged dataset served every common way ---------------------------------------------------
RECORDS = 250
PAGE_SIZE = 10  # 25 pages


def record(number: int) -> dict[str, Any]:
    return {
        "id": number,
        "title": f"issue {number}",
        "updated_at": f"2024-01-{1 + number // 10:02d}T00:{number % 60:02d}:00Z",
    }


def records(start: int, count: int, total: int = RECORDS) -> list[dict[str, Any]]:
    """Records ``start`` (0-based) onwards, at most ``count``, of ``total``."""
    return [record(n + 1) for n in range(start, min(start + count, total))]


def add_paged_endpoints(api: FakeAPI) -> None:
    """The same 250 records in 25 pages behind each paging style:

    ``/json_link``   ``{"data": [...], "next": <url>|null}``, page ``p`` (1-based) in the URL
    ``/header_link`` a bare list, ``Link: <...>; rel="next"``
    ``/offset``      ``{"items": [...], "total": 250}`` by ``offset``/``limit``
    ``/offset_open`` ``{"items": [...]}`` by ``offset``/``limit``, no total (ends empty)
    ``/page_number`` ``{"results": [...], "total_pages": 25}``, ``page`` 1-based
    ``/cursor``      ``{"results": [...], "cursors": {"next": <token>|null}}``, ``cursor``
    ``/single``      ``{"data": [all 250]}``
    """

    def json_link(r: APIRequest) -> Answer:
        page = int(r.query.get("p", "1"))
        more = page * PAGE_SIZE < RECORDS
        nxt = f"{api.url}/json_link?p={page + 1}" if more else None
        return 200, {}, {"data": records((page - 1) * PAGE_SIZE, PAGE_SIZE), "next": nxt}

    def header_link(r: APIRequest) -> Answer:
        page = int(r.query.get("page", "1"))
        headers = {}
        if page * PAGE_SIZE < RECORDS:
            headers["Link"] = (
                f'<{api.url}/header_link?page={page + 1}>; rel="next", <{api.url}/header_link>; rel="first"'
            )
        return 200, headers, records((page - 1) * PAGE_SIZE, PAGE_SIZE)

    def offset(r: APIRequest) -> Answer:
        start, limit = int(r.query["offset"]), int(r.query["limit"])
        return 200, {}, {"items": records(start, limit), "total": RECORDS}

    def offset_open(r: APIRequest) -> Answer:
        start, limit = int(r.query["offset"]), int(r.query["limit"])
        return 200, {}, {"items": records(start, limit)}

    def page_number(r: APIRequest) -> Answer:
        page = int(r.query["page"])
        return (
            200,
            {},
            {"results": records((page - 1) * PAGE_SIZE, PAGE_SIZE), "total_pages": RECORDS // PAGE_SIZE},
        )

    def cursor(r: APIRequest) -> Answer:
        start = int(r.query.get("cursor", "c0")[1:])
        nxt = f"c{start + PAGE_SIZE}" if start + PAGE_SIZE < RECORDS else None
        return 200, {}, {"results": records(start, PAGE_SIZE), "cursors": {"next": nxt}}

    api.route("/json_link", json_link)
    api.route("/header_link", header_link)
    api.route("/offset", offset)
    api.route("/offset_open", offset_open)
    api.route("/page_number", page_number)
    api.route("/cursor", cursor)
    api.route("/single", lambda r: (200, {}, {"data": records(0, RECORDS)}))
