"""``RESTClient``: every paginator over a 25-page endpoint, auto-detection, every auth
scheme (an OAuth2 token expiring mid-run too), against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from http_api import PAGE_SIZE, RECORDS, Answer, APIRequest, FakeAPI, add_paged_endpoints, records

import sparkload as sl
from sparkload.sources.helpers.rest_client import PageData, RESTClient, paginate
from sparkload.sources.helpers.rest_client.auth import (
    APIKeyAuth,
    BearerTokenAuth,
    HttpBasicAuth,
    OAuth2ClientCredentials,
)
from sparkload.sources.helpers.rest_client.paginators import (
    BasePaginator,
    HeaderLinkPaginator,
    JSONLinkPaginator,
    JSONResponseCursorPaginator,
    OffsetPaginator,
    PageNumberPaginator,
    SinglePagePaginator,
)

ALL_IDS = list(range(1, RECORDS + 1))
PAGES = RECORDS // PAGE_SIZE


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPI]:
    with FakeAPI() as server:
        add_paged_endpoints(server)
        yield server


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_BACKOFF_FACTOR", "0.01")


def ids(pages: list[PageData[Any]]) -> list[int]:
    return [row["id"] for page in pages for row in page]


PAGINATED = [
    ("/json_link", lambda: JSONLinkPaginator(next_url_path="next"), "data", PAGES),
    ("/header_link", HeaderLinkPaginator, None, PAGES),
    ("/offset", lambda: OffsetPaginator(limit=PAGE_SIZE, total_path="total"), "items", PAGES),
    # No total: it pages until a page comes back empty, one request more.
    ("/offset_open", lambda: OffsetPaginator(limit=PAGE_SIZE, total_path=None), "items", PAGES + 1),
    ("/page_number", lambda: PageNumberPaginator(base_page=1, total_path="total_pages"), "results", PAGES),
    (
        "/cursor",
        lambda: JSONResponseCursorPaginator(cursor_path="cursors.next", cursor_param="cursor"),
        "$.results",
        PAGES,
    ),
]


@pytest.mark.parametrize(
    ("path", "make", "selector", "requests_made"), PAGINATED, ids=[p[0] for p in PAGINATED]
)
def test_each_paginator_reads_all_25_pages(
    api: FakeAPI, path: str, make: Callable[[], BasePaginator], selector: str | None, requests_made: int
) -> None:
    before = len(api.asked(path))
    client = RESTClient(api.url, paginator=make(), data_selector=selector)
    pages = list(client.paginate(path))
    assert ids(pages) == ALL_IDS
    assert len(api.asked(path)) - before == requests_made
    last = pages[-1]
    assert (
        isinstance(last, list) and last.response.status_code == 200 and last.paginator.has_next_page is False
    )
    assert last.response.url.startswith(f"{api.url}{path}")


def test_pages_are_fetched_only_as_they_are_used(api: FakeAPI) -> None:
    before = len(api.asked("/json_link"))
    pages = RESTClient(api.url).paginate("/json_link")
    first = next(pages)
    assert [r["id"] for r in first] == list(range(1, PAGE_SIZE + 1))
    assert len(api.asked("/json_link")) - before == 1  # not 25: one page in memory at a time
    pages.close()


DETECTED = [
    ("/json_link", JSONLinkPaginator),
    ("/header_link", HeaderLinkPaginator),
    ("/cursor", JSONResponseCursorPaginator),
    ("/single", SinglePagePaginator),
]


@pytest.mark.parametrize(("path", "kind"), DETECTED, ids=[p[0] for p in DETECTED])
def test_paginator_and_records_are_detected_when_not_given(
    api: FakeAPI, path: str, kind: type[BasePaginator]
) -> None:
    pages = list(RESTClient(api.url).paginate(path))
    assert ids(pages) == ALL_IDS
    assert all(type(page.paginator) is kind for page in pages)


def test_page_number_paging_is_detected_from_a_total_pages_count(api: FakeAPI) -> None:
    response = RESTClient(api.url).get("/page_number", params={"page": 1})
    paginator, score = RESTClient(api.url).pagination_factory.create_paginator(response)
    assert isinstance(paginator, PageNumberPaginator) and score == 0.5
    assert str(paginator.total_path) == "total_pages"


def test_paginate_leaves_the_callers_params_alone_and_the_module_function_pages(api: FakeAPI) -> None:
    params = {"limit": PAGE_SIZE}
    client = RESTClient(api.url, paginator=OffsetPaginator(limit=PAGE_SIZE))
    assert len(ids(list(client.paginate("/offset", params=params)))) == RECORDS
    assert params == {"limit": PAGE_SIZE}
    assert ids(list(paginate(f"{api.url}/header_link"))) == ALL_IDS


# -- auth ------------------------------------------------------------------------------------------
def guarded(check: Callable[[APIRequest], bool]) -> Callable[[APIRequest], Answer]:
    """A 3-page endpoint that answers 401 unless ``check`` passes."""

    def answer(r: APIRequest) -> Answer:
        if not check(r):
            return 401, {}, {"message": "Bad credentials"}
        page = int(r.query.get("page", "1"))
        headers = {"Link": f'<{r.path}?page={page + 1}>; rel="next"'} if page < 3 else {}
        return 200, headers, records((page - 1) * PAGE_SIZE, PAGE_SIZE)

    return answer


AUTHS: list[tuple[str, Callable[[APIRequest], bool], Any]] = [
    ("bearer", lambda r: r.headers.get("Authorization") == "Bearer tok-1", lambda: BearerTokenAuth("tok-1")),
    ("key_header", lambda r: r.headers.get("X-API-Key") == "k-1", lambda: APIKeyAuth("X-API-Key", "k-1")),
    (
        "key_query",
        lambda r: r.query.get("auth_code") == "k-2",
        lambda: APIKeyAuth("auth_code", "k-2", "query"),
    ),
    (
        "key_cookie",
        lambda r: r.cookies.get("session") == "k-3",
        lambda: APIKeyAuth("session", "k-3", "cookie"),
    ),
    (
        "basic",
        lambda r: r.headers.get("Authorization") == "Basic " + base64.b64encode(b"ada:pw-1").decode(),
        lambda: HttpBasicAuth("ada", "pw-1"),
    ),
]


@pytest.mark.parametrize(("name", "check", "make"), AUTHS, ids=[a[0] for a in AUTHS])
def test_each_auth_scheme_is_sent_on_every_page(
    api: FakeAPI, name: str, check: Callable[[APIRequest], bool], make: Callable[[], Any]
) -> None:
    api.route(f"/auth/{name}", guarded(check))
    auth = make()
    pages = list(RESTClient(api.url, auth=auth).paginate(f"/auth/{name}"))
    assert len(ids(pages)) == 3 * PAGE_SIZE
    assert len(api.asked(f"/auth/{name}")) == 3
    assert "-1" not in repr(auth) and "-2" not in repr(auth) and "-3" not in repr(auth)


def test_a_refused_key_fails_naming_the_url_with_the_key_redacted(api: FakeAPI) -> None:
    api.route("/auth/refused", guarded(lambda r: False))
    client = RESTClient(api.url, auth=APIKeyAuth("auth_code", "wrong-key-9", "query"))
    with pytest.raises(sl.HTTPRequestError) as failure:
        list(client.paginate("/auth/refused", params={"q": "x"}))
    error = failure.value
    assert error.status_code == 401
    assert error.url == f"{api.url}/auth/refused?q=x&auth_code=***"
    assert "wrong-key-9" not in str(error)
    assert len(api.asked("/auth/refused")) == 1  # a 401 is not retried


def test_an_oauth2_token_is_fetched_and_renewed_before_it_expires(api: FakeAPI) -> None:
    lifetime = 1.0
    issued: dict[str, float] = {}
    counter = itertools.count(1)
    lock = threading.Lock()

    def token(r: APIRequest) -> Answer:
        form = dict(pair.split("=") for pair in r.raw_body.decode().split("&"))
        if (form.get("client_id"), form.get("client_secret"), form.get("grant_type")) != (
            "app",
            "s3cret",
            "client_credentials",
        ):
            return 401, {}, {"error": "invalid_client"}
        with lock:
            value = f"tok{next(counter)}"
            issued[value] = time.monotonic()
        return 200, {}, {"access_token": value, "expires_in": lifetime, "token_type": "bearer"}

    def valid(r: APIRequest) -> bool:
        value = r.headers.get("Authorization", "").removeprefix("Bearer ")
        return value in issued and time.monotonic() - issued[value] < lifetime

    def slow_pages(r: APIRequest) -> Answer:
        time.sleep(0.06)
        if not valid(r):
            return 401, {}, {"message": "token expired"}
        page = int(r.query.get("page", "1"))
        headers = {"Link": f'<{r.path}?page={page + 1}>; rel="next"'} if page < PAGES else {}
        return 200, headers, records((page - 1) * PAGE_SIZE, PAGE_SIZE)

    api.route("/oauth/token", token)
    api.route("/oauth/items", slow_pages)
    auth = OAuth2ClientCredentials(f"{api.url}/oauth/token", client_id="app", client_secret="s3cret")
    pages = list(RESTClient(api.url, auth=auth).paginate("/oauth/items"))

    assert ids(pages) == ALL_IDS  # no page was refused: each token was renewed in time
    assert len(issued) >= 2  # 25 pages of 60 ms outlive a 1 s token
    assert "s3cret" not in repr(auth)


def test_auth_without_its_secret_says_which_argument_is_missing() -> None:
    with pytest.raises(ValueError, match="BearerTokenAuth needs 'token'"):
        BearerTokenAuth(sl.secrets.value)
    with pytest.raises(ValueError, match="location must be one of"):
        APIKeyAuth("k", "v", location="body")


# -- pages as resource items -----------------------------------------------------------------------
class ForeignPage(list):  # type: ignore[type-arg]
    """A page type of another library (dlt's ``PageData`` is one): a list subclass with context."""

    def __init__(self, rows: list[dict[str, Any]], response: Any) -> None:
        super().__init__(rows)
        self.response = response


def test_pages_yielded_by_a_resource_are_pages_of_items(api: FakeAPI, pipeline: sl.Pipeline) -> None:
    client = RESTClient(api.url, paginator=HeaderLinkPaginator())

    @sl.resource(primary_key="id")
    def issues() -> Iterator[Any]:
        yield from client.paginate("/header_link")

    @sl.resource
    def foreign() -> Iterator[Any]:
        yield ForeignPage(records(0, 3), response=None)

    @sl.transformer(data_from=foreign)
    def labels(page: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        assert type(page) is not dict  # a transformer gets the whole page, as in dlt
        for row in page:
            yield {"issue_id": row["id"], "label": "bug"}

    pipeline.run([issues, foreign, labels])
    loaded = sorted(row["id"] for row in pipeline.table("issues").select("id").collect())
    assert loaded == ALL_IDS
    assert pipeline.table("foreign").count() == 3
    assert sorted(r["issue_id"] for r in pipeline.table("labels").collect()) == [1, 2, 3]
