"""A transformer's optional argument that config does not set keeps its default on every call,
not only on the first (config is read once per run and its answer reused)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import sparkload as sl


def test_an_unconfigured_optional_argument_keeps_its_default_on_every_call() -> None:
    seen: list[Any] = []

    @sl.transformer
    def tagged(item: int, tag: str | None = None, limit: int = 3) -> Iterator[dict[str, Any]]:
        seen.append((tag, limit))
        yield {"n": item, "tag": tag}

    assert list(sl.resource([1, 2, 3], name="numbers") | tagged()) == [
        {"n": 1, "tag": None},
        {"n": 2, "tag": None},
        {"n": 3, "tag": None},
    ]
    assert seen == [(None, 3)] * 3
