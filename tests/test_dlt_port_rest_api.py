"""The ``rest_api`` source and its OAuth auth as dlt has them, against a real HTTP server on
127.0.0.1: response actions call the functions given (not copies of them), a ``resolve``
param the path does not use fails naming resource and param, and an OAuth token whose
``token_expiry`` has passed is fetched again."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from http_api import Answer, APIRequest, FakeAPI
from requests import Response

from sparkload.exceptions import ConfigValueError
from sparkload.sources.helpers.rest_client import RESTClient
from sparkload.sources.helpers.rest_client.auth import OAuth2ClientCredentials
from sparkload.sources.rest_api import rest_api_resources


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPI]:
    def issues(r: APIRequest) -> Answer:
        return 200, {}, [{"number": 1, "title": "one"}, {"number": 2, "title": "two"}]

    def comments(r: APIRequest) -> Answer:
        number = int(r.path.split("/")[2])
        if number == 2:
            return 404, {}, {"message": "no comments"}
        return 200, {}, [{"id": 10 * number, "body": "hi", "email": "a@b.c"}]

    with FakeAPI() as server:
        server.route("/issues", issues)
        server.route("/comments", comments)
        yield server


class Counter:
    """A callable object whose count the test reads after the run."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, response: Response, *args: Any, **kwargs: Any) -> None:
        self.calls += 1


class Recorder:
    def __init__(self) -> None:
        self.statuses: list[int] = []

    def record(self, response: Response, *args: Any, **kwargs: Any) -> None:
        self.statuses.append(response.status_code)


def _drop_email(response: Response, *args: Any, **kwargs: Any) -> Response:
    rows = response.json()
    for row in rows:
        row.pop("email", None)
    response._content = json.dumps(rows).encode()
    return response


def _rows(resources: list[Any], name: str) -> list[dict[str, Any]]:
    [resource] = [r for r in resources if r.name == name]
    return list(resource)


def _config(api: FakeAPI, comments: dict[str, Any]) -> dict[str, Any]:
    return {
        "client": {"base_url": api.url, "paginator": "single_page"},
        "resources": ["issues", {"name": "comments", **comments}],
    }


def test_response_actions_call_the_functions_given(api: FakeAPI) -> None:
    counter, recorder = Counter(), Recorder()
    config = _config(
        api,
        {
            "endpoint": {
                "path": "comments/{issue}",
                "params": {"issue": {"type": "resolve", "resource": "issues", "field": "number"}},
                "response_actions": [
                    recorder.record,  # a function alone: every response
                    {"status_code": 404, "action": "ignore"},
                    {"status_code": 200, "action": [counter, _drop_email]},
                ],
            }
        },
    )
    rows = _rows(rest_api_resources(config), "comments")
    assert rows == [{"id": 10, "body": "hi"}]
    assert recorder.statuses == [200, 404]  # the recorder given, not a copy of it
    assert counter.calls == 1


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("retry", r"response_actions\[0\]\.action' must be 'ignore', a function or a list of functions"),
        ([_drop_email, "ignore"], r"must be 'ignore', a function or a list of functions"),
        (None, r"must be 'ignore', a function or a list of functions, not None"),
    ],
)
def test_a_response_action_dlt_cannot_run_is_refused(api: FakeAPI, action: Any, message: str) -> None:
    config = _config(
        api, {"endpoint": {"path": "issues", "response_actions": [{"status_code": 404, "action": action}]}}
    )
    with pytest.raises(ConfigValueError, match=message):
        rest_api_resources(config)


def test_a_resolve_param_the_path_does_not_use_is_refused(api: FakeAPI) -> None:
    config = _config(
        api,
        {
            "endpoint": {
                "path": "comments/1",
                "params": {"issue": {"type": "resolve", "resource": "issues", "field": "number"}},
            }
        },
    )
    with pytest.raises(
        ConfigValueError, match=r"resource 'comments' has the resolve param 'issue'.*'comments/1'"
    ):
        rest_api_resources(config)


def test_a_parent_record_without_the_resolved_field_names_resource_and_param(api: FakeAPI) -> None:
    config = _config(
        api,
        {
            "endpoint": {
                "path": "comments/{issue}",
                "params": {"issue": {"type": "resolve", "resource": "issues", "field": "id"}},
            }
        },
    )
    with pytest.raises(
        Exception, match=r"resource 'comments': a record of 'issues' has no 'id' for the param 'issue'"
    ):
        _rows(rest_api_resources(config), "comments")


def test_an_oauth_token_past_its_token_expiry_is_fetched_again() -> None:
    counter = itertools.count(1)
    sent: list[str] = []

    def token(r: APIRequest) -> Answer:
        return 200, {}, {"access_token": f"tok{next(counter)}", "expires_in": 3600}

    def items(r: APIRequest) -> Answer:
        sent.append(r.headers.get("Authorization", ""))
        return 200, {}, [{"id": 1}]

    with FakeAPI() as server:
        server.route("/oauth/token", token)
        server.route("/items", items)
        auth = OAuth2ClientCredentials(f"{server.url}/oauth/token", client_id="app", client_secret="s3cret")
        client = RESTClient(server.url, auth=auth)
        client.get("/items")
        client.get("/items")
        assert sent == ["Bearer tok1", "Bearer tok1"] and not auth.is_token_expired()
        first_expiry = auth.token_expiry
        assert first_expiry is not None
        auth.token_expiry = first_expiry.subtract(seconds=3600)  # as dlt's tests expire it
        assert auth.is_token_expired()
        client.get("/items")
        assert sent[-1] == "Bearer tok2"
        assert auth.token_expiry is not None and auth.token_expiry > first_expiry.subtract(seconds=3600)
