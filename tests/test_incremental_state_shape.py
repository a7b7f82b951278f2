"""A resource state whose ``incremental`` entry is not the dict of cursors (a script that
wrote over it, a state edited by hand) is refused naming the entry, before any cursor is
read from it or written into it."""

# Incrementals are declared as call defaults, as in dlt.
# ruff: noqa: B008

from __future__ import annotations

from collections.abc import Iterator

import pytest

import sparkload as sl


@sl.resource
def events(
    updated_at: sl.sources.incremental[int] = sl.sources.incremental("updated_at", initial_value=1),
) -> Iterator[dict[str, int]]:
    yield {"updated_at": 2}


@pytest.mark.parametrize("entry", [["updated_at"], "updated_at", 7])
def test_an_incremental_entry_that_is_not_a_dict_is_named(entry: object) -> None:
    with pytest.raises(
        sl.ResourceError, match=r"incremental 'updated_at': the resource state's 'incremental' entry"
    ):
        events.cursor_starts({"incremental": entry})


def test_a_state_without_the_entry_starts_at_the_initial_value() -> None:
    assert events.cursor_starts({}) == {"updated_at": 1}
