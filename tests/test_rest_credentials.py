"""Credentials of the REST helpers stay where they belong: with the origin (scheme, host,
port) they were configured for, across redirects and next-page links; out of error
messages, DEBUG logs and the pipeline's trace, whether they came from ``sl.secrets``, were
passed to an auth class as they are, or were obtained by the OAuth2 flow.

Two real HTTP servers on 127.0.0.1, on two ports: two origins.
"""

from __future__ import annotations

import json
import logging
import socket
import time
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from http_api import Answer, APIRequest, FakeAPI
from requests.auth import AuthBase

import sparkload as sl
from sparkload.pipeline.trace_file import TRACE_FILE
from sparkload.sources.helpers import requests as sl_requests
from sparkload.sources.helpers.rest_client import RESTClient
from sparkload.sources.helpers.rest_client.auth import (
    APIKeyAuth,
    BearerTokenAuth,
    OAuth2ClientCredentials,
)
from sparkload.sources.helpers.rest_client.paginators import HeaderLinkPaginator, JSONLinkPaginator

API_KEY = "key-7f3e2a91c4"
CLIENT_HEADER = "client-header-5b8d0e"
TOKEN = "bearer-4c1f9a77e2"


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FakeAPI, FakeAPI]]:
    """``home`` (where the credentials are configured) and ``other`` (another port)."""
    with FakeAPI() as home, FakeAPI() as other:
        other.route("/landing", lambda r: (200, {}, {"data": [{"id": 2}]}))
        other.route("/page2", lambda r: (200, {}, {"data": [{"id": 2}], "next": None}))
        other.route("/header_page2", lambda r: (200, {}, [{"id": 2}]))
        home.route("/landing", lambda r: (200, {}, {"data": [{"id": 1}]}))
        home.route("/moved_away", lambda r: (302, {"Location": f"{other.url}/landing"}, {}))
        home.route("/moved_here", lambda r: (302, {"Location": "/landing"}, {}))
        home.route("/page1", lambda r: (200, {}, {"data": [{"id": 1}], "next": f"{other.url}/page2"}))
        home.route(
            "/header_page1",
            lambda r: (200, {"Link": f'<{other.url}/header_page2>; rel="next"'}, [{"id": 1}]),
        )
        yield home, other


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_BACKOFF_FACTOR", "0.01")


def credentials_in(request: APIRequest) -> dict[str, str]:
    """Whatever of the configured credentials ``request`` carried."""
    found = {
        name: request.headers[name]
        for name in ("Authorization", "X-API-Key", "X-Client")
        if name in request.headers
    }
    if "api_key" in request.query:
        found["api_key"] = request.query["api_key"]
    return found


AUTHS = {
    "bearer": (lambda: BearerTokenAuth(TOKEN), {"Authorization": f"Bearer {TOKEN}"}),
    "api key header": (
        lambda: APIKeyAuth(name="X-API-Key", api_key=API_KEY, location="header"),
        {"X-API-Key": API_KEY},
    ),
    "api key query": (
        lambda: APIKeyAuth(name="api_key", api_key=API_KEY, location="query"),
        {"api_key": API_KEY},
    ),
}


# -- 1. redirects --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(AUTHS))
def test_a_redirect_to_another_origin_gets_neither_the_auth_nor_the_client_s_headers(
    servers: tuple[FakeAPI, FakeAPI], kind: str
) -> None:
    home, other = servers
    make_auth, sent = AUTHS[kind]
    client = RESTClient(home.url, headers={"X-Client": CLIENT_HEADER}, auth=make_auth())
    response = client.get("/moved_away")
    assert response.json() == {"data": [{"id": 2}]}
    assert credentials_in(home.asked("/moved_away")[-1]) == {**sent, "X-Client": CLIENT_HEADER}
    assert credentials_in(other.asked("/landing")[-1]) == {}


def test_a_redirect_within_the_origin_keeps_the_credentials(servers: tuple[FakeAPI, FakeAPI]) -> None:
    home, _ = servers
    auth = APIKeyAuth(name="X-API-Key", api_key=API_KEY, location="header")
    client = RESTClient(home.url, headers={"X-Client": CLIENT_HEADER}, auth=auth)
    assert client.get("/moved_here").json() == {"data": [{"id": 1}]}
    assert credentials_in(home.asked("/landing")[-1]) == {"X-API-Key": API_KEY, "X-Client": CLIENT_HEADER}


def test_a_redirect_of_helpers_requests_to_another_origin_drops_the_headers_given(
    servers: tuple[FakeAPI, FakeAPI],
) -> None:
    home, other = servers
    response = sl_requests.get(
        f"{home.url}/moved_away", headers={"X-API-Key": API_KEY, "X-Client": CLIENT_HEADER}
    )
    assert response.status_code == 200
    assert credentials_in(home.asked("/moved_away")[-1]) == {"X-API-Key": API_KEY, "X-Client": CLIENT_HEADER}
    assert credentials_in(other.asked("/landing")[-1]) == {}
    # The neutral headers go on: the target still knows who asks and what is accepted.
    assert other.asked("/landing")[-1].headers["User-Agent"].startswith("sparkload")


def test_trusted_origins_lets_the_credentials_follow_a_redirect(servers: tuple[FakeAPI, FakeAPI]) -> None:
    home, other = servers
    auth = APIKeyAuth(name="X-API-Key", api_key=API_KEY, location="header")
    client = RESTClient(home.url, headers={"X-Client": CLIENT_HEADER}, auth=auth, trusted_origins=[other.url])
    client.get("/moved_away")
    assert credentials_in(other.asked("/landing")[-1]) == {"X-API-Key": API_KEY, "X-Client": CLIENT_HEADER}

    session_client = sl_requests.Client(trusted_origins=[other.url])
    session_client.get(f"{home.url}/moved_away", headers={"X-API-Key": API_KEY})
    assert credentials_in(other.asked("/landing")[-1]) == {"X-API-Key": API_KEY}


# -- 2. next links -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(AUTHS))
@pytest.mark.parametrize(
    ("path", "paginator", "selector"),
    [("/page1", JSONLinkPaginator, "data"), ("/header_page1", HeaderLinkPaginator, None)],
    ids=["json link", "header link"],
)
def test_a_next_page_on_another_origin_is_asked_for_without_credentials(
    servers: tuple[FakeAPI, FakeAPI], kind: str, path: str, paginator: Any, selector: str | None
) -> None:
    home, other = servers
    make_auth, sent = AUTHS[kind]
    client = RESTClient(
        home.url, headers={"X-Client": CLIENT_HEADER}, auth=make_auth(), paginator=paginator()
    )
    pages = list(client.paginate(path, data_selector=selector))
    assert [row["id"] for page in pages for row in page] == [1, 2]
    assert credentials_in(home.asked(path)[-1]) == {**sent, "X-Client": CLIENT_HEADER}
    next_path = "/page2" if path == "/page1" else "/header_page2"
    assert credentials_in(other.asked(next_path)[-1]) == {}


def test_trusted_origins_lets_the_credentials_follow_a_next_link(servers: tuple[FakeAPI, FakeAPI]) -> None:
    home, other = servers
    client = RESTClient(
        home.url,
        auth=BearerTokenAuth(TOKEN),
        paginator=JSONLinkPaginator(),
        data_selector="data",
        trusted_origins=[other.url],
    )
    assert len(list(client.paginate("/page1"))) == 2
    assert credentials_in(other.asked("/page2")[-1]) == {"Authorization": f"Bearer {TOKEN}"}


def test_the_rest_api_source_keeps_its_auth_from_a_next_link_elsewhere(
    servers: tuple[FakeAPI, FakeAPI],
) -> None:
    from sparkload.sources.rest_api import rest_api_source

    home, other = servers
    source = rest_api_source(
        {
            "client": {
                "base_url": home.url,
                "auth": {"type": "api_key", "name": "X-API-Key", "api_key": API_KEY},
                "headers": {"X-Client": CLIENT_HEADER},
                "paginator": {"type": "json_link", "next_url_path": "next"},
            },
            "resources": [{"name": "items", "endpoint": {"path": "page1", "data_selector": "data"}}],
        }
    )
    assert [row["id"] for row in source.resources["items"]] == [1, 2]
    assert credentials_in(other.asked("/page2")[-1]) == {}

    trusting = rest_api_source(
        {
            "client": {
                "base_url": home.url,
                "auth": {"type": "api_key", "name": "X-API-Key", "api_key": API_KEY},
                "paginator": {"type": "json_link", "next_url_path": "next"},
                "trusted_origins": [other.url],
            },
            "resources": [{"name": "items", "endpoint": {"path": "page1", "data_selector": "data"}}],
        }
    )
    assert [row["id"] for row in trusting.resources["items"]] == [1, 2]
    assert credentials_in(other.asked("/page2")[-1]) == {"X-API-Key": API_KEY}


# -- 3. connection errors and timeouts -----------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def all_text(error: BaseException) -> str:
    """What a log or a trace shows of ``error``: its message and its whole traceback."""
    return str(error) + "".join(traceback.format_exception(error))


def test_a_connection_error_names_the_url_without_its_query_credentials() -> None:
    key = "conn-key-31c5d9e8"
    client = sl_requests.Client(request_max_attempts=1)
    url = f"http://127.0.0.1:{closed_port()}/items?page=2&api_key={key}"
    with pytest.raises(sl_requests.ConnectionError) as failure:
        client.get(url)
    assert key not in all_text(failure.value)
    assert "api_key=***" in str(failure.value) and "page=2" in str(failure.value)


# A read timeout that used up the retries is a ConnectionError in requests (MaxRetryError).
TIMED_OUT = (sl_requests.Timeout, sl_requests.ConnectionError)


def test_a_timeout_names_the_url_without_its_query_credentials(servers: tuple[FakeAPI, FakeAPI]) -> None:
    home, _ = servers
    home.route("/slow", lambda r: (time.sleep(1.5), (200, {}, {}))[1])
    key = "slow-key-8e2b41f0"
    client = sl_requests.Client(request_timeout=0.3, request_max_attempts=1)
    with pytest.raises(TIMED_OUT) as failure:
        client.get(f"{home.url}/slow", params={"token": key})
    assert key not in all_text(failure.value)
    assert f"GET {home.url}/slow?token=***" in str(failure.value)

    # RESTClient, with an API key in a parameter of any name.
    rest = RESTClient(home.url, auth=APIKeyAuth(name="k", api_key=key, location="query"))
    with pytest.raises(TIMED_OUT) as failure:
        rest.get("/slow", timeout=0.3)
    assert key not in all_text(failure.value)
    assert "k=***" in str(failure.value)


def test_a_timeout_in_a_run_leaves_no_query_credential_in_the_trace(
    servers: tuple[FakeAPI, FakeAPI], make_pipeline: Any
) -> None:
    home, _ = servers
    home.route("/slow_items", lambda r: (time.sleep(1.5), (200, {}, []))[1])
    key = "trace-key-0d6a3b95"

    @sl.resource(table_name="items")
    def items() -> Iterator[Any]:
        client = sl_requests.Client(request_timeout=0.3, request_max_attempts=1)
        yield client.get(f"{home.url}/slow_items?api_key={key}").json()

    pipeline = make_pipeline("rest_timeout")
    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(items())
    assert key not in all_text(failure.value)
    text = (pipeline.working_dir / TRACE_FILE).read_text()
    assert key not in text
    assert "api_key=***" in json.loads(text)["error"]["message"]


# -- 4. tokens given to auth classes or obtained by OAuth2 ---------------------------------------


def test_a_token_passed_to_an_auth_class_is_redacted_in_the_trace(make_pipeline: Any) -> None:
    token = "literal-token-6a9c2e14"

    @sl.resource(table_name="items")
    def items() -> Iterator[Any]:
        auth = BearerTokenAuth(token)
        yield {"id": 1}
        raise ValueError(f"the API refused {auth.token}")

    pipeline = make_pipeline("rest_literal_token")
    with pytest.raises(sl.PipelineStepFailed):
        pipeline.run(items())
    text = (pipeline.working_dir / TRACE_FILE).read_text()
    assert token not in text
    assert "the API refused ***" in text
    last = pipeline.last_trace
    assert last is not None and token not in str(last) + last.describe()


def test_a_token_obtained_by_oauth2_is_redacted_in_the_trace(make_pipeline: Any) -> None:
    token = "oauth-token-e5b17f3d92"

    def token_endpoint(request: APIRequest) -> Answer:
        return 200, {}, {"access_token": token, "expires_in": 3600}

    def echo(request: APIRequest) -> Answer:
        # An API that quotes the token it refuses, as some do in their error bodies.
        return 200, {}, {"error": f"token {request.headers['Authorization'][7:]} lacks a scope"}

    with FakeAPI() as api:
        api.route("/token", token_endpoint)
        api.route("/items", echo)

        @sl.resource(table_name="items")
        def items() -> Iterator[Any]:
            auth = OAuth2ClientCredentials(
                f"{api.url}/token", client_id="id-1234", client_secret="cs-98765432"
            )
            body = RESTClient(api.url, auth=auth).get("/items").json()
            raise RuntimeError(body["error"])
            yield

        pipeline = make_pipeline("rest_oauth_token")
        with pytest.raises(sl.PipelineStepFailed) as failure:
            pipeline.run(items())
    assert token in str(failure.value)  # the caller's exception is its own, unchanged
    text = (pipeline.working_dir / TRACE_FILE).read_text()
    assert token not in text
    assert "token *** lacks a scope" in text
    last = pipeline.last_trace
    assert last is not None and token not in str(last) + last.describe()


# -- 5. a secret in a URL's path -----------------------------------------------------------------


def test_a_secret_in_the_path_is_not_in_the_debug_log(
    servers: tuple[FakeAPI, FakeAPI], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    home, _ = servers
    home.route("/users", lambda r: (200, {}, {"data": []}))
    monkeypatch.setenv("SOURCES__REST_PATHS__USER_TOKEN", "path-token-2f7c9b06")
    token = sl.secrets["sources.rest_paths.user_token"]
    caplog.set_level(logging.DEBUG, logger="sparkload")
    RESTClient(home.url).get(f"/users/{token}/items")
    assert home.asked(f"/users/{token}/items")  # sent as it is
    assert "path-token-2f7c9b06" not in caplog.text
    assert f"GET {home.url}/users/***/items" in caplog.text


class _HeaderAuth(AuthBase):
    """An auth of the user's own, adding a header sparkload knows nothing of."""

    def __call__(self, request: Any) -> Any:
        request.headers["X-Own-Secret"] = "own-secret-44b1"
        return request


def test_an_auth_of_the_user_s_own_is_kept_from_other_origins_too(servers: tuple[FakeAPI, FakeAPI]) -> None:
    home, other = servers
    RESTClient(home.url, auth=_HeaderAuth()).get("/moved_away")
    assert home.asked("/moved_away")[-1].headers.get("X-Own-Secret") == "own-secret-44b1"
    assert "X-Own-Secret" not in other.asked("/landing")[-1].headers


def test_trusted_origins_that_are_not_urls_are_refused_with_their_key() -> None:
    from sparkload.sources.rest_api import rest_api_source

    with pytest.raises(sl.ConfigValueError) as failure:
        rest_api_source(
            {
                "client": {"base_url": "http://127.0.0.1:1", "trusted_origins": ["cdn.example.com"]},
                "resources": ["items"],
            }
        )
    assert failure.value.key == "client.trusted_origins"
    assert "'cdn.example.com' is not an http(s) URL" in str(failure.value)
    # One URL alone is one origin, not a list of its characters.
    assert RESTClient("http://a", trusted_origins="https://cdn.example.com").trusted_origins == (
        "https://cdn.example.com",
    )
