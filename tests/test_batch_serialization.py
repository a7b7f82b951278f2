"""The extract hot path serializes many rows in one orjson call (``dumps_rows``) and cuts the
list's JSON into lines; these lines must be byte for byte those of ``dumps_row``, one row at
a time, or the batch must be handed back (None) to the per-row path.

The property runs the round-trip test's item generator (nested dicts and lists, NaN and
infinities, ints beyond 2**53, strings that begin with NUL, datetimes, decimals, bytes),
plus strings holding the very text the cut looks for; the examples pin each reason to pass a
batch on.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import property_settings
from test_round_trip import item_lists

from sparkload.extract.serialize import dumps_row, dumps_rows


def _one_by_one(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(dumps_row(row) for row in rows)


_TRICKY_TEXT = st.sampled_from(["},{", '"},{"', "null", "a\\b", "\x00x", 'q"\x00', "}", "{", ""])


@property_settings(suite_examples=300)
@given(rows=item_lists(allow_nan=True), extra=st.lists(_TRICKY_TEXT, max_size=3))
def test_a_batch_gives_the_lines_of_its_rows_or_goes_row_by_row(
    rows: list[dict[str, Any]], extra: list[str]
) -> None:
    rows = [{**row, **{f"t{i}": text for i, text in enumerate(extra)}} for row in rows]
    try:
        expected = _one_by_one(rows)
    except TypeError:
        assert dumps_rows(rows) is None  # the per-row path names the value it cannot write
        return
    batch = dumps_rows(rows)
    if batch is not None:
        assert batch == expected


def test_plain_rows_are_written_in_one_piece() -> None:
    rows = [
        {"id": 1, "name": "Ada", "at": datetime.datetime(2024, 1, 1), "price": decimal.Decimal("1.50")},
        {"id": 2, "name": None, "nested": {"a": [1, 2]}, "raw": b"\x00\x01"},
        {},
    ]
    batch = dumps_rows(rows)
    assert batch is not None
    assert batch == _one_by_one(rows)
    assert batch.count(b"\n") == 3
    assert dumps_rows([]) == b""


@pytest.mark.parametrize(
    "row",
    [
        pytest.param({"id": 1, "text": "a},{b"}, id="the cut's text inside a string"),
        pytest.param({"id": 1, "items": [{"a": 1}, {"a": 2}]}, id="dicts side by side in a list"),
        pytest.param({"id": 1, "x": float("nan")}, id="a NaN orjson writes as null"),
        pytest.param({"id": 1, "x": float("inf"), "y": None}, id="an infinity beside a None"),
        pytest.param({"id": 1, "big": 2**60}, id="an int beyond 53 bits"),
        pytest.param({"id": 1, "text": "\x00T2024"}, id="a real string that begins with NUL"),
        pytest.param({"id": 1, "text": "[1, 2]"}, id="a string that begins as a JSON list"),
        pytest.param({"id": 1, "text": "{}"}, id="a string that begins as a JSON object"),
    ],
)
def test_a_row_the_cut_or_the_checks_cannot_vouch_for_sends_the_batch_row_by_row(row: dict[str, Any]) -> None:
    rows = [{"id": 0, "ok": "plain"}, row]
    assert dumps_rows(rows) is None
    # What the per-row path writes for it keeps the value (tagged or escaped, not lost).
    assert dumps_row(row) != b""


def test_nones_and_the_word_null_in_text_are_not_taken_for_nan() -> None:
    rows = [{"id": 1, "a": None, "b": None}, {"id": 2, "a": 1.5, "b": None}]
    assert dumps_rows(rows) == _one_by_one(rows)
    # "null" inside a string is one null more than the rows' Nones: the batch goes row by row.
    assert dumps_rows([{"id": 1, "note": "null"}]) is None


def test_a_value_that_cannot_be_written_is_left_to_the_per_row_path() -> None:
    assert dumps_rows([{"id": 1}, {"id": 2, "bad": object()}]) is None
