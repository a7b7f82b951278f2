"""The REST API source's config type, where dlt's scripts import it from
(``dlt.sources.rest_api.typing``). The config is a plain mapping, checked when a source is
made from it (``config_check``)."""

from collections.abc import Mapping
from typing import Any

RESTAPIConfig = Mapping[str, Any]

__all__ = ["RESTAPIConfig"]
