"""A forward proxy on 127.0.0.1 that answers for the web APIs dlt's templates call.

The templates name their APIs by their real addresses (``https://api.github.com/...``) and
are run unchanged; both sides get ``HTTPS_PROXY``/``HTTP_PROXY`` pointing here. A ``CONNECT``
is answered by terminating TLS with a certificate for the requested host, issued on the
spot by a local CA (trustme) that the clients trust through ``REQUESTS_CA_BUNDLE`` and
``SSL_CERT_FILE``. Requests are answered from canned pages per host and path (``api_data``);
a path with several pages is paginated as that API does (see ``Pages``). A page that is text
(a CSV file) is answered as it is, with its content type.
"""

from __future__ import annotations

import json
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trustme


@dataclass(frozen=True)
class Pages:
    """The pages one path answers with, and how a client is told of the next one:
    ``"link"`` as GitHub does (a ``Link: <...?page=N>; rel="next"`` header, the page asked
    for by ``page``), ``"next_url"`` as PokeAPI does (``{"count", "next", "results"}``, the
    page asked for by ``offset``), ``None`` for a single page returned as it is."""

    pages: tuple[Any, ...]
    style: str | None = None
    # Pages other than JSON are text answered as they are (a raw file's download).
    content_type: str = "application/json"

    def answer(self, url: str, query: dict[str, str]) -> tuple[Any, dict[str, str]]:
        if self.style == "link":
            page = int(query.get("page", "1"))
            headers = {}
            if page < len(self.pages):
                headers["Link"] = f'<{_with_query(url, query, page=str(page + 1))}>; rel="next"'
            return self.pages[page - 1], headers
        if self.style == "next_url":
            offset = int(query.get("offset", "0"))
            page_size = len(self.pages[0])
            index = offset // page_size
            following = offset + page_size
            more = index + 1 < len(self.pages)
            body = {
                "count": sum(len(p) for p in self.pages),
                "next": _with_query(url, query, offset=str(following)) if more else None,
                "previous": None,
                "results": self.pages[index],
            }
            return body, {}
        return self.pages[0], {}


def _with_query(url: str, query: dict[str, str], **changed: str) -> str:
    return f"{url}?{urllib.parse.urlencode({**query, **changed})}"


class ApiProxy:
    """The running proxy: its address, the CA file clients trust, the requests it served."""

    def __init__(self, routes: dict[tuple[str, str], Pages], folder: Path) -> None:
        self.routes = routes
        self.ca = trustme.CA()
        self.ca_file = folder / "proxy-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self.requests: list[str] = []
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def context_for(self, host: str) -> ssl.SSLContext:
        """A server-side TLS context with a certificate for ``host``, made once per host."""
        with self._lock:
            if host not in self._contexts:
                context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                self.ca.issue_cert(host).configure_cert(context)
                self._contexts[host] = context
            return self._contexts[host]

    def environment(self) -> dict[str, str]:
        """What a client process needs to reach the APIs through this proxy. Local addresses
        stay direct: the embedded engine's gRPC client honours the proxy variables too."""
        local = "127.0.0.1,localhost"
        return {
            "HTTPS_PROXY": self.url,
            "HTTP_PROXY": self.url,
            "https_proxy": self.url,
            "http_proxy": self.url,
            "NO_PROXY": local,
            "no_proxy": local,
            "REQUESTS_CA_BUNDLE": str(self.ca_file),
            "SSL_CERT_FILE": str(self.ca_file),
        }

    def answer(self, scheme: str, host: str, target: str) -> tuple[int, Any, dict[str, str]]:
        parsed = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        path = parsed.path.rstrip("/") or "/"
        self.requests.append(f"{host}{target}")
        pages = self.routes.get((host, path))
        if pages is None:
            return 404, {"message": "Not Found", "host": host, "path": path}, {}
        body, headers = pages.answer(f"{scheme}://{host}{parsed.path}", query)
        return 200, body, {"Content-Type": pages.content_type, **headers}

    def serve(self) -> None:
        self._server.serve_forever(poll_interval=0.1)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler_for(proxy: ApiProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The host a CONNECT tunnel was opened to: requests inside it name only their path.
        tunnel_host: str | None = None

        def do_CONNECT(self) -> None:  # noqa: N802 (http.server's naming)
            host = self.path.rsplit(":", 1)[0]
            self.send_response(200, "Connection established")
            self.end_headers()
            self.wfile.flush()
            tls = proxy.context_for(host).wrap_socket(self.connection, server_side=True)
            # From here on the same handler reads the client's requests from the tunnel.
            self.connection = tls
            self.rfile = tls.makefile("rb")
            self.wfile = tls.makefile("wb")
            self.tunnel_host = host
            self.close_connection = False
            while not self.close_connection:
                try:
                    self.handle_one_request()
                except (TimeoutError, ssl.SSLError, ConnectionError):
                    break
            self.close_connection = True

        def do_GET(self) -> None:  # noqa: N802
            if self.tunnel_host is not None:
                scheme, host, target = "https", self.tunnel_host, self.path
            else:
                # A plain-HTTP proxy request names the absolute URL.
                parsed = urllib.parse.urlsplit(self.path)
                scheme, host = parsed.scheme, parsed.hostname or ""
                target = parsed.path + (f"?{parsed.query}" if parsed.query else "")
            status, body, headers = proxy.answer(scheme, host, target)
            headers.setdefault("Content-Type", "application/json")
            payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # the requests served are kept in proxy.requests

    return Handler


def _directly(make: Callable[[], ApiProxy]) -> ApiProxy:
    return make()


@contextmanager
def running_proxy(
    routes: dict[tuple[str, str], Pages],
    folder: Path,
    opened_by: Callable[[Callable[[], ApiProxy]], ApiProxy] = _directly,
) -> Iterator[ApiProxy]:
    """The proxy, serving until the block ends. ``opened_by`` makes it (its listening socket
    is opened then): a network namespace's ``inside`` makes one that listens in there."""
    proxy = opened_by(lambda: ApiProxy(routes, folder))
    thread = threading.Thread(target=proxy.serve, name="api-proxy", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.close()
        thread.join(timeout=5)
