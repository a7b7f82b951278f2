"""``RESTClient`` with paginators and auth, as ``dlt.sources.helpers.rest_client``::

from sparkload.sources.helpers.rest_client import RESTClient
from sparkload.sources.helpers.rest_client.paginators import HeaderLinkPaginator

github = RESTClient("https://api.github.com", paginator=HeaderLinkPaginator())
for page in github.paginate("/repos/dlt-hub/dlt/issues"):
    ...  # a list of records; yield it from a resource as it is
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from requests.auth import AuthBase

from sparkload.sources.helpers.rest_client.client import Hooks, PageData, RESTClient
from sparkload.sources.helpers.rest_client.jsonpath import TJsonPath
from sparkload.sources.helpers.rest_client.paginators import BasePaginator

__all__ = ["PageData", "RESTClient", "paginate"]


def paginate(
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
    json: Any = None,
    auth: AuthBase | None = None,
    paginator: BasePaginator | None = None,
    data_selector: TJsonPath | None = None,
    hooks: Hooks | None = None,
    *,
    data: Any = None,
) -> Iterator[PageData[Any]]:
    """The pages of one URL, without making a client first."""
    return RESTClient(base_url=url, headers=headers).paginate(
        path="",
        method=method,
        params=params,
        json=json,
        auth=auth,
        paginator=paginator,
        data_selector=data_selector,
        hooks=hooks,
        data=data,
    )
