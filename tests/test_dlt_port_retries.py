"""Retries as dlt's requests client makes them, against a real HTTP server on 127.0.0.1: a
body cut short (``ChunkedEncodingError``) is asked for again, and the response hooks run
once on each attempt (an error status's too)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests as plain_requests
from http_api import Answer, APIRequest, FakeAPI
from requests import Response

from sparkload.sources.helpers import requests
from sparkload.sources.helpers.rest_client import RESTClient
from sparkload.sources.helpers.rest_client.paginators import SinglePagePaginator
from sparkload.sources.rest_api import rest_api_resources

ROWS = [{"id": n, "text": "x" * 40} for n in range(20)]


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    def rows(r: APIRequest) -> Answer:
        return 200, {}, ROWS

    with FakeAPI() as server:
        server.route("/rows", rows)
        yield server


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_BACKOFF_FACTOR", "0.01")


def test_a_body_cut_short_is_asked_for_again(api: FakeAPI) -> None:
    api.cut_next("/rows")
    response = requests.Client().get(f"{api.url}/rows")
    assert response.json() == ROWS
    assert len(api.asked("/rows")) == 2


def test_a_body_cut_short_every_time_fails_once_the_attempts_run_out(
    api: FakeAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_MAX_ATTEMPTS", "3")
    api.cut_next("/rows", times=5)
    with pytest.raises(plain_requests.exceptions.ChunkedEncodingError, match="/rows"):
        requests.Client().get(f"{api.url}/rows")
    assert len(api.asked("/rows")) == 3


def test_response_hooks_run_on_each_attempt(api: FakeAPI) -> None:
    seen: list[int] = []

    def hook(response: Response, *args: Any, **kwargs: Any) -> None:
        seen.append(response.status_code)
        response.json()  # reads the body: a cut one fails here, inside the hook

    api.fail_next("/rows", 503)
    api.cut_next("/rows")
    pages = list(
        RESTClient(api.url).paginate("/rows", paginator=SinglePagePaginator(), hooks={"response": [hook]})
    )
    assert pages == [ROWS]
    assert seen == [503, 200, 200]  # the error status, the cut body, the whole one
    assert len(api.asked("/rows")) == 3


def test_rest_api_response_actions_see_each_attempt(api: FakeAPI) -> None:
    seen: list[int] = []
    api.fail_next("/rows", 503)
    api.cut_next("/rows")
    config = {
        "client": {"base_url": api.url, "paginator": "single_page"},
        "resources": [
            {
                "name": "rows",
                "endpoint": {"path": "rows", "response_actions": [lambda r: seen.append(r.status_code)]},
            }
        ],
    }
    [resource] = rest_api_resources(config)
    assert list(resource) == ROWS
    assert seen[0] == 503 and seen[-1] == 200 and len(seen) == 3
