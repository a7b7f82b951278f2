"""``sparkload.sources.helpers.requests``: sessions that retry, back off, honour Retry-After
and time out, against a real HTTP server on 127.0.0.1 (tests/http_api.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests as plain_requests
from http_api import FakeAPI

import sparkload as sl
from sparkload.sources.helpers import requests


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with FakeAPI() as server:
        server.route("/ok", lambda r: (200, {}, {"ok": True, "n": len(server.asked("/ok"))}))
        server.route("/slow", lambda r: (time.sleep(0.6), (200, {}, {}))[1])
        yield server


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    # Through config, as a user would set it: the retries below wait 10 ms, 20 ms ...
    monkeypatch.setenv("RUNTIME__REQUEST_BACKOFF_FACTOR", "0.01")


def test_a_429_with_retry_after_is_waited_out_and_retried(api: FakeAPI) -> None:
    api.fail_next("/ok", 429, retry_after="1")
    started = time.monotonic()
    response = requests.Client().get(f"{api.url}/ok")
    assert response.json() == {"ok": True, "n": 2}
    assert time.monotonic() - started >= 0.95  # the server's 1 s, not the 10 ms backoff


def test_503_flaps_and_a_dropped_connection_are_retried(api: FakeAPI) -> None:
    api.fail_next("/ok", 503, 502)
    api.drop_next("/ok")
    response = requests.Client().post(f"{api.url}/ok", json={"a": 1})  # POSTs are retried too
    assert response.status_code == 200
    assert len(api.asked("/ok")) == 4


def test_max_attempts_from_config_bounds_the_retries(api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_MAX_ATTEMPTS", "3")
    api.fail_next("/ok", 503, 503, 503, 503)
    with pytest.raises(sl.HTTPRequestError) as failure:
        requests.Client().get(f"{api.url}/ok")
    assert len(api.asked("/ok")) == 3
    assert failure.value.status_code == 503
    assert isinstance(failure.value, plain_requests.HTTPError)  # what requests code catches


def test_a_404_is_not_retried_and_names_the_url_without_its_key(api: FakeAPI) -> None:
    with pytest.raises(plain_requests.HTTPError) as failure:
        requests.get(f"{api.url}/missing", params={"api_key": "s3cr3t-key", "q": "x"})
    error = failure.value
    assert isinstance(error, sl.HTTPRequestError)
    assert len(api.asked("/missing")) == 1
    assert error.url == f"{api.url}/missing?api_key=***&q=x"
    assert f"GET {api.url}/missing?api_key=***&q=x failed with HTTP 404" in str(error)
    assert "s3cr3t-key" not in str(error) + repr(error.args)


def test_requests_time_out_by_default_from_config(api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_TIMEOUT", "0.2")
    monkeypatch.setenv("RUNTIME__REQUEST_MAX_ATTEMPTS", "2")
    client = requests.Client()
    assert client.settings.timeout == 0.2 and client.settings.max_attempts == 2
    with pytest.raises((plain_requests.Timeout, plain_requests.ConnectionError)):
        client.get(f"{api.url}/slow")
    assert len(api.asked("/slow")) == 2  # the timeout was retried once


def test_settings_given_in_code_win_over_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__REQUEST_MAX_ATTEMPTS", "9")
    settings = requests.Client(request_max_attempts=2, request_timeout=5).settings
    assert (settings.max_attempts, settings.timeout, settings.backoff_factor) == (2, 5.0, 0.01)


def test_the_module_offers_requests_names(api: FakeAPI) -> None:
    """dlt's module API: get/post/Session/Client and requests' exceptions, by the same names."""
    session = requests.Session(raise_for_status=False)
    assert session.get(f"{api.url}/missing").status_code == 404
    assert requests.HTTPError is plain_requests.HTTPError
    assert isinstance(requests.client, requests.Client)
