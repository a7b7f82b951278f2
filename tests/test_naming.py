"""Tests for sparkload.common.naming: dlt's snake_case naming convention."""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Iterable

import pytest

from sparkload.common.naming import (
    PATH_SEPARATOR,
    VARIANT_SEPARATOR,
    NameCollision,
    make_path,
    normalize_identifier,
    normalize_path,
    normalize_table_name,
    resolve_collisions,
    variant_column_name,
)

VALID_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

# Input -> the name dlt's snake_case convention gives it (checked against dlt's algorithm).
IDENTIFIERS = [
    # already snake case
    ("already_snake", "already_snake"),
    ("id", "id"),
    ("_id", "_id"),
    # camel / Pascal case
    ("CamelCase", "camel_case"),
    ("DealFlow", "deal_flow"),
    ("HTTPResponse", "http_response"),
    ("userID", "user_id"),
    ("getHTTPResponseCode", "get_http_response_code"),
    ("ABCDef", "abc_def"),
    ("ABC", "abc"),
    ("version2Name", "version2_name"),
    ("a1B", "a1_b"),
    ("Field1", "field1"),
    ("aBcDe", "a_bc_de"),
    ("Id", "id"),
    # whitespace: trimmed around, one `_` for each inner run
    ("  spaced name  ", "spaced_name"),
    ("a b", "a_b"),
    ("a   b", "a_b"),
    ("a\tb\nc", "a_b_c"),
    # the symbols dlt maps to letters
    ("a+b", "axb"),
    ("a-b", "a_b"),
    ("a*b", "axb"),
    ("user@host", "userahost"),
    ("a|b", "alb"),
    ("+", "x"),
    # quotes and punctuation
    ('"quoted"', "_quotedx"),
    ("it's", "it_s"),
    ("`backticked`", "_backtickedx"),
    ("a.b", "a_b"),
    ("price ($)", "pricex"),
    # unicode letters are not ASCII letters
    ("café", "cafx"),
    ("名前", "x"),
    ("名前a", "_a"),
    ("Über", "_ber"),
    ("näme", "n_me"),
    # keywords are kept: quoting is the SQL layer's job
    ("select", "select"),
    ("SELECT", "select"),
    ("from", "from"),
    # leading digits
    ("1st", "_1st"),
    ("123", "_123"),
    ("2ndPlace", "_2nd_place"),
    # trailing underscores: each one becomes x
    ("a_", "ax"),
    ("a__", "axx"),
    ("a-", "ax"),
    ("_", "x"),
    # double (and longer) underscores collapse, keeping `__` for paths
    ("a__b", "a_b"),
    ("a___b", "a_b"),
    ("__a", "_a"),
    ("a _ b", "a_b"),
]

INJECTIONS = [
    ("a`; DROP TABLE x; --", "a_drop_table_xxxx"),
    ("Robert'); DROP TABLE students;--", "robert_drop_table_studentsxxx"),
    ('x" OR "1"="1', "x_or_1_1"),
    ("col/*comment*/", "col_xcommentxx"),
    ("a;\x00b", "a_b"),
]


@pytest.mark.parametrize(("raw", "expected"), IDENTIFIERS)
def test_normalize_identifier(raw: str, expected: str) -> None:
    assert normalize_identifier(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), IDENTIFIERS)
def test_normalize_table_name_follows_the_same_rules(raw: str, expected: str) -> None:
    assert normalize_table_name(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), INJECTIONS)
def test_injection_like_identifiers_become_plain_names(raw: str, expected: str) -> None:
    result = normalize_identifier(raw)
    assert result == expected
    assert re.fullmatch(r"[a-z0-9_]+", result)


def test_non_ascii_digits_are_not_kept() -> None:
    # dlt would keep "١٢٣" (Python's \d is Unicode-aware); sparkload keeps names ASCII.
    assert normalize_identifier("a١٢٣") == "ax"
    assert normalize_identifier("１st") == "_st"


@pytest.mark.parametrize("raw", ["", " ", "   ", "\t\n"])
def test_empty_identifier_is_an_error(raw: str) -> None:
    with pytest.raises(ValueError, match="empty identifier") as excinfo:
        normalize_identifier(raw)
    # The message names the offending identifier so the bad key can be found in the data.
    assert repr(raw) in str(excinfo.value)


@pytest.mark.parametrize("bad", [None, 5, b"bytes"])
def test_non_str_identifier_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        normalize_identifier(bad)


def test_no_length_limit() -> None:
    long_name = "aB" * 500
    assert normalize_identifier(long_name) == "a_b" * 500
    assert len(normalize_identifier("x" * 10_000)) == 10_000


def _random_identifiers(count: int, seed: int) -> list[str]:
    # Letters, digits, separators, symbols, quotes and non-ASCII, so every rule is exercised.
    alphabet = "aAzZbB09_ -+*@|.`;'\"\t\\/éÜ名١"
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < count:
        candidate = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 16)))
        if candidate.strip():
            out.append(candidate)
    return out


PROPERTY_INPUTS = [raw for raw, _ in IDENTIFIERS + INJECTIONS] + _random_identifiers(3000, seed=7)


def test_every_output_is_a_valid_idempotent_name() -> None:
    for raw in PROPERTY_INPUTS:
        name = normalize_identifier(raw)
        assert VALID_NAME.match(name), (raw, name)
        assert "__" not in name, (raw, name)
        assert not name.endswith("_"), (raw, name)
        assert normalize_identifier(name) == name, (raw, name)


def test_path_separator() -> None:
    assert PATH_SEPARATOR == "__"


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("user",), "user"),
        (("user", "first_name"), "user__first_name"),
        (("orders", "items", "sku"), "orders__items__sku"),
        (("a", "", "b"), "a__b"),
        (("a", "_id"), "a___id"),
    ],
)
def test_make_path(parts: tuple[str, ...], expected: str) -> None:
    assert make_path(*parts) == expected


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("user", "firstName"), "user__first_name"),
        (["Orders", "LineItems", "SKU"], "orders__line_items__sku"),
        (("a__b", "c d"), "a_b__c_d"),
        (("Parent", "_id"), "parent___id"),
        (("single",), "single"),
    ],
)
def test_normalize_path(parts: list[str] | tuple[str, ...], expected: str) -> None:
    assert normalize_path(parts) == expected


def test_normalized_parts_split_back_on_the_separator() -> None:
    # `__` never occurs inside a normalized part, so the path can be taken apart again.
    parts = ("user", "Address Line", "_id", "1st")
    path = normalize_path(parts)
    assert path.split(PATH_SEPARATOR) == [normalize_identifier(p) for p in parts]


def test_normalize_path_rejects_a_bare_string() -> None:
    with pytest.raises(TypeError):
        normalize_path("user")


@pytest.mark.parametrize("parts", [(), [], ("a", ""), ("  ", "b")])
def test_normalize_path_rejects_empty_paths_and_parts(parts: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        normalize_path(parts)


@pytest.mark.parametrize(
    ("column", "data_type", "expected"),
    [
        ("amount", "text", "amount__v_text"),
        ("amount", "bigint", "amount__v_bigint"),
        ("user__amount", "double", "user__amount__v_double"),
        ("_id", "json", "_id__v_json"),
        ("amount", "Text", "amount__v_text"),
        ("amount", "1x", "amount__v_1x"),
    ],
)
def test_variant_column_name(column: str, data_type: str, expected: str) -> None:
    assert variant_column_name(column, data_type) == expected
    assert expected.startswith(column + VARIANT_SEPARATOR)


def test_variant_separator() -> None:
    assert VARIANT_SEPARATOR == "__v_"


@pytest.mark.parametrize(
    ("column", "data_type"),
    [
        ("", "text"),
        ("Amount", "text"),
        ("amount_", "text"),
        ("1amount", "text"),
        ("a____b", "text"),
        ("a b", "text"),
        ("amount", ""),
        ("amount", "  "),
    ],
)
def test_variant_column_name_rejects_bad_input(column: str, data_type: str) -> None:
    with pytest.raises(ValueError):
        variant_column_name(column, data_type)


@pytest.mark.parametrize(
    ("names", "taken", "expected_names", "expected_collisions"),
    [
        (["a", "b"], (), ["a", "b"], []),
        (["a b", "a_b"], (), ["a_b", "a_b_1"], [NameCollision("a_b", "a_b", "a_b_1")]),
        # the same pair the other way round: the first one keeps the plain name
        (["a_b", "a b"], (), ["a_b", "a_b_1"], [NameCollision("a b", "a_b", "a_b_1")]),
        (
            ["Id", "id", "ID"],
            (),
            ["id", "id_1", "id_2"],
            [NameCollision("id", "id", "id_1"), NameCollision("ID", "id", "id_2")],
        ),
        # names in `taken` are avoided, including by the plain name
        (["id"], {"id"}, ["id_1"], [NameCollision("id", "id", "id_1")]),
        (["Id", "id"], ["id", "id_1"], ["id_2", "id_3"], None),
        # the smallest free suffix is used: a gap in `taken` is filled
        (["Id", "id"], {"id_1"}, ["id", "id_2"], [NameCollision("id", "id", "id_2")]),
        # a suffixed name can itself collide with a later plain name
        (
            ["a", "A", "a_1"],
            (),
            ["a", "a_1", "a_1_1"],
            [NameCollision("A", "a", "a_1"), NameCollision("a_1", "a_1", "a_1_1")],
        ),
        (["a_1", "a", "A"], (), ["a_1", "a", "a_2"], [NameCollision("A", "a", "a_2")]),
        # whitespace-only differences are different source identifiers
        ([" a", "a"], (), ["a", "a_1"], [NameCollision("a", "a", "a_1")]),
        ([], {"a"}, [], []),
    ],
)
def test_resolve_collisions(
    names: list[str],
    taken: Iterable[str],
    expected_names: list[str],
    expected_collisions: list[NameCollision] | None,
) -> None:
    resolved, collisions = resolve_collisions(names, taken)
    assert resolved == expected_names
    if expected_collisions is not None:
        assert collisions == expected_collisions
    assert len(collisions) == sum(
        1 for raw, name in zip(names, resolved, strict=True) if name != normalize_identifier(raw)
    )


def test_resolve_collisions_is_deterministic_and_order_dependent() -> None:
    names = ["userID", "user_id", "User ID", "user id", "USER_ID"]
    first = resolve_collisions(names)
    # unrelated calls in between must not change the result (no hidden state)
    resolve_collisions(["user_id", "x"], {"user_id_1"})
    normalize_identifier.cache_clear()
    assert resolve_collisions(names) == first
    assert resolve_collisions(list(names)) == first
    assert first[0] == ["user_id", "user_id_1", "user_id_2", "user_id_3", "user_id_4"]

    reordered, collisions = resolve_collisions(list(reversed(names)))
    assert reordered == ["user_id", "user_id_1", "user_id_2", "user_id_3", "user_id_4"]
    # the plain name went to a different original
    assert [c.original for c in collisions] == list(reversed(names))[1:]


def test_resolved_names_are_unique_valid_and_avoid_taken() -> None:
    rng = random.Random(11)
    pool = _random_identifiers(400, seed=3) + ["a", "A", "a_1", "a b", "a_2", "x", "X"]
    for _ in range(200):
        names = list(dict.fromkeys(rng.sample(pool, rng.randint(1, 40))))
        taken = {normalize_identifier(n) for n in rng.sample(pool, rng.randint(0, 10))}
        taken |= {f"{n}_1" for n in list(taken)[:3]}
        resolved, collisions = resolve_collisions(names, taken)
        assert len(resolved) == len(names)
        assert len(set(resolved)) == len(resolved)
        assert not set(resolved) & taken
        for name in resolved:
            assert VALID_NAME.match(name) and "__" not in name and not name.endswith("_")
            assert normalize_identifier(name) == name
        for collision in collisions:
            assert collision.normalized == normalize_identifier(collision.original)
            assert re.fullmatch(re.escape(collision.normalized) + r"_[1-9][0-9]*", collision.resolved)


def test_resolve_collisions_rejects_duplicates_and_bad_input() -> None:
    with pytest.raises(ValueError, match="twice"):
        resolve_collisions(["a", "b", "a"])
    with pytest.raises(ValueError, match="empty identifier"):
        resolve_collisions(["a", " "])
    with pytest.raises(TypeError):
        resolve_collisions("ab")
    with pytest.raises(TypeError):
        resolve_collisions(["a"], taken="a_1")


def test_name_collision_is_frozen() -> None:
    collision = NameCollision("Id", "id", "id_1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        collision.resolved = "id_2"  # type: ignore[misc]
