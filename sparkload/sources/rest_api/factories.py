"""Paginators, auth and response hooks from their ``rest_api`` config: a name, a dict with
``type`` and the class's arguments, or an instance."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from requests import Response
from requests.auth import AuthBase

from sparkload.exceptions import ConfigValueError, IgnoreResponseException
from sparkload.sources.helpers.requests.session import raise_for_status
from sparkload.sources.helpers.rest_client.auth import (
    APIKeyAuth,
    BearerTokenAuth,
    HttpBasicAuth,
    OAuth2ClientCredentials,
)
from sparkload.sources.helpers.rest_client.client import Hooks
from sparkload.sources.helpers.rest_client.paginators import (
    BasePaginator,
    HeaderCursorPaginator,
    HeaderLinkPaginator,
    JSONLinkPaginator,
    JSONResponseCursorPaginator,
    OffsetPaginator,
    PageNumberPaginator,
    SinglePagePaginator,
)

_T = TypeVar("_T")
# A response action: a function of the response, or dlt's dict of when (``status_code``,
# ``content``) and what (``action``), its values as the config gives them.
ResponseAction = Callable[[Response], object] | Mapping[str, Any]

PAGINATORS: dict[str, type[BasePaginator] | None] = {
    "json_link": JSONLinkPaginator,
    "json_response": JSONLinkPaginator,
    "header_link": HeaderLinkPaginator,
    "header_cursor": HeaderCursorPaginator,
    "auto": None,  # detected from the first response
    "single_page": SinglePagePaginator,
    "cursor": JSONResponseCursorPaginator,
    "offset": OffsetPaginator,
    "page_number": PageNumberPaginator,
}

AUTHS: dict[str, type[AuthBase]] = {
    "bearer": BearerTokenAuth,
    "api_key": APIKeyAuth,
    "http_basic": HttpBasicAuth,
    "oauth2_client_credentials": OAuth2ClientCredentials,
}


def register_paginator(name: str, paginator_class: type[BasePaginator]) -> None:
    """Make ``{"type": name, ...}`` build ``paginator_class`` (dlt's ``register_paginator``)."""
    if not (isinstance(paginator_class, type) and issubclass(paginator_class, BasePaginator)):
        raise ValueError(f"a paginator must subclass BasePaginator, not {paginator_class!r}")
    PAGINATORS[name] = paginator_class


def register_auth(name: str, auth_class: type[AuthBase]) -> None:
    if not (isinstance(auth_class, type) and issubclass(auth_class, AuthBase)):
        raise ValueError(f"an auth must subclass requests' AuthBase, not {auth_class!r}")
    AUTHS[name] = auth_class


def create_paginator(config: object, where: str) -> BasePaginator | None:
    if config is None or isinstance(config, BasePaginator):
        return config
    if isinstance(config, str):
        return _build(PAGINATORS, config, {}, f"{where}", "paginator")
    if isinstance(config, Mapping):
        arguments = {k: v for k, v in config.items() if k != "type"}
        return _build(PAGINATORS, config.get("type", "auto"), arguments, where, "paginator")
    raise ConfigValueError(f"rest_api config: '{where}' must be a name, a dict or a paginator", key=where)


def create_auth(config: object, where: str) -> AuthBase | None:
    if config is None or isinstance(config, AuthBase):
        return config
    if isinstance(config, str):
        return _build(AUTHS, config, {}, where, "auth")
    if isinstance(config, Mapping):
        arguments = {k: v for k, v in config.items() if k != "type"}
        return _build(AUTHS, config.get("type", "bearer"), arguments, where, "auth")
    raise ConfigValueError(f"rest_api config: '{where}' must be a name, a dict or an auth object", key=where)


def _build(
    classes: Mapping[str, type[_T] | None],
    kind: object,
    arguments: Mapping[str, object],
    where: str,
    what: str,
) -> _T | None:
    if not isinstance(kind, str) or kind not in classes:
        raise ConfigValueError(
            f"rest_api config: '{where}' names no {what} {kind!r}; known: {', '.join(classes)}",
            key=f"{where}.type",
        )
    cls = classes[kind]
    if cls is None:
        return None
    try:
        return cls(**arguments)
    except TypeError as exc:  # an argument the class does not take, or one it needs
        raise ConfigValueError(f"rest_api config: '{where}' ({cls.__name__}): {exc}", key=where) from None
    except ValueError as exc:  # a missing secret, a bad location …: the message names no value
        raise ConfigValueError(f"rest_api config: '{where}': {exc}", key=where) from None


def response_hooks(actions: list[ResponseAction] | None, secret_params: tuple[str, ...]) -> Hooks | None:
    """Response hooks for ``response_actions``: each action matching a response (by status
    and/or a substring of the body) ignores it (ends paging quietly) or runs its functions;
    any other error status raises as usual."""
    if not actions:
        return None
    hooks: list[Callable[..., None]] = [_action_hook(action) for action in actions]

    def check(response: Response, *args: object, **kwargs: object) -> None:
        raise_for_status(response, secret_params)

    return {"response": [*hooks, check]}


def _action_hook(action: Any) -> Callable[..., None]:
    def hook(response: Response, *args: object, **kwargs: object) -> None:
        if callable(action):
            action(response)
            return
        status, content, then = action.get("status_code"), action.get("content"), action.get("action")
        if status is None and content is None and not callable(then) and not isinstance(then, list):
            return
        if status is not None and response.status_code != status:
            return
        if content is not None and content not in response.text:
            return
        if then == "ignore":
            raise IgnoreResponseException()
        for func in then if isinstance(then, list) else [then]:
            func(response)

    return hook
