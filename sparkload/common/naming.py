"""dlt's default ``snake_case`` naming convention for table and column names.

Identifiers coming from data (JSON keys, resource and table names) are turned into
names a dlt user would recognise: the same input gives the same name dlt gives, so a
pipeline moved from dlt to sparkload keeps its tables and columns.

The rules, applied in this order (the order matters: e.g. ``a-`` must become ``a_`` and
then ``ax``, and ``A B`` must be split at the space before case breaking sees it):

1. strip surrounding whitespace; nothing left is an error;
2. ``+ - * @ |`` become ``x _ x a l`` (dlt keeps a readable trace of common symbols);
3. every run of characters other than ASCII letters, ASCII digits and ``_`` becomes
   one ``_``;
4. camelCase / PascalCase words are split with ``_``, then everything is lower-cased;
5. a leading digit gets a ``_`` prefix, so the name is a valid SQL identifier;
6. each trailing ``_`` becomes ``x``, so a name never ends in ``_`` and appending
   ``__child`` can never produce ``___``-style ambiguity at the end;
7. runs of ``_`` collapse into one, which keeps ``__`` free for :data:`PATH_SEPARATOR`.

One deliberate difference from dlt: dlt's character class uses Python's Unicode-aware
``\\d``, so it keeps non-ASCII decimal digits (``"١"`` stays ``"١"``). Here they are
treated like any other non-ASCII character and become ``_``: every name produced by this
module matches ``^[a-z_][a-z0-9_]*$``, which the SQL layer and Delta column mapping rely
on. Identifiers made only of ASCII are named exactly as dlt names them.

There is no length limit: Delta Lake has none, so dlt's shortening with a hash tag never
applies. Keywords such as ``select`` are kept as they are; quoting is the SQL layer's job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "PATH_SEPARATOR",
    "VARIANT_PREFIX",
    "VARIANT_SEPARATOR",
    "NameCollision",
    "make_path",
    "normalize_identifier",
    "normalize_path",
    "normalize_table_name",
    "RESERVED_TABLE_PREFIX",
    "resolve_collisions",
    "variant_column_name",
]

PATH_SEPARATOR = "__"
# sparkload's own tables and folders in a dataset (the state table, staged packages) start
# so; a resource's table never may, or it would take their place.
RESERVED_TABLE_PREFIX = "_sparkload"
"""Joins the parts of a flattened column (``user__name``) or nested table (``orders__items``)."""

VARIANT_PREFIX = "v_"
"""Marks the last path part of a variant column, as dlt does (``amount__v_text``)."""

VARIANT_SEPARATOR = PATH_SEPARATOR + VARIANT_PREFIX
"""What separates a column from the type of its variant: ``amount`` + ``__v_`` + ``text``."""

# dlt maps these before dropping the rest, so ``a+b`` is ``axb`` rather than ``a_b``.
_SYMBOLS = str.maketrans("+-*@|", "x_xal")

# Explicit ASCII classes instead of ``\w`` / ``\d``, which would let Unicode letters and
# digits through (see the module docstring).
_DISALLOWED_RUN = re.compile(r"[^A-Za-z0-9_]+")

# Where a ``_`` goes when splitting camel case, as zero-width positions so one pass does it:
# - before an upper-case letter that starts a capitalised word (``HTTPResponse`` splits
#   before ``Response``), unless a ``_`` is already there;
# - between a lower-case letter or digit and an upper-case letter (``userID``, ``a1B``).
_CASE_BREAK = re.compile(r"(?<=[A-Za-z0-9])(?=[A-Z][a-z])|(?<=[a-z0-9])(?=[A-Z])")

_UNDERSCORE_RUN = re.compile(r"_{2,}")

_NORMALIZED_PART = re.compile(r"[a-z_][a-z0-9_]*")

# Names come from data, and some data uses keys as values (maps keyed by id), so the set of
# distinct names is unbounded: a bounded cache keeps memory flat while still making the
# usual case (the same few hundred column names over and over) a dictionary look-up.
_CACHE_SIZE = 16_384


@lru_cache(maxsize=_CACHE_SIZE)
def normalize_identifier(name: str) -> str:
    """Return ``name`` as dlt's ``snake_case`` convention names a column.

    >>> normalize_identifier("HTTPResponse")
    'http_response'

    Raises ``ValueError`` for an identifier that is empty or only whitespace, and
    ``TypeError`` for anything but a ``str``.
    """
    if not isinstance(name, str):
        raise TypeError(f"identifier must be a str, got {type(name).__name__}: {name!r}")
    stripped = name.strip()
    if not stripped:
        raise ValueError(f"cannot normalize an empty identifier: {name!r}")

    ident = _DISALLOWED_RUN.sub("_", stripped.translate(_SYMBOLS))
    # Only ASCII is left here, so lower() cannot expand or introduce characters.
    ident = _CASE_BREAK.sub("_", ident).lower()
    if ident[0].isdigit():
        ident = "_" + ident
    # Each trailing underscore becomes one ``x`` (not one ``x`` for the whole run), because
    # that is what dlt does and the names must match.
    body = ident.rstrip("_")
    ident = body + "x" * (len(ident) - len(body))
    return _UNDERSCORE_RUN.sub("_", ident)


def normalize_table_name(name: str) -> str:
    """Return ``name`` as dlt names a table: the same rules as for columns.

    Kept as its own function so callers say which kind of name they make, and so table
    names could follow other rules later without touching every call site.
    """
    return normalize_identifier(name)


def normalize_dataset_name(name: str) -> str:
    """Return ``name`` as dlt names a dataset: the same rules as for tables, so a dataset is
    one folder of the destination (or one schema of a catalog) whatever the user wrote."""
    return normalize_identifier(name)


def make_path(*normalized_parts: str) -> str:
    """Join already-normalized parts with :data:`PATH_SEPARATOR`.

    Empty parts are skipped, as in dlt, so a missing parent does not leave a dangling
    separator. The parts are not normalized again: use :func:`normalize_path` for raw ones.
    """
    return PATH_SEPARATOR.join(part for part in normalized_parts if part.strip())


def normalize_path(parts: Sequence[str]) -> str:
    """Normalize each raw part and join them: ``("user", "firstName")`` -> ``user__first_name``."""
    # A str is a Sequence[str] too; passed by mistake it would give ``u__s__e__r``.
    if isinstance(parts, str):
        raise TypeError(f"parts must be a sequence of identifiers, not a str: {parts!r}")
    if not parts:
        raise ValueError("cannot normalize an empty path")
    return make_path(*(normalize_identifier(part) for part in parts))


def _is_normalized_path(name: str) -> bool:
    # A normalized part never contains ``__`` nor ends with ``_``, but may start with one
    # (``_id``), so ``a___id`` is the path ``a`` / ``_id``: splitting on the first ``__``
    # of each run gives the parts back.
    parts = name.split(PATH_SEPARATOR)
    return all(_NORMALIZED_PART.fullmatch(part) and not part.endswith("_") for part in parts)


def variant_column_name(column: str, data_type: str) -> str:
    """Name the column that holds values of ``data_type`` that conflict with ``column``.

    ``variant_column_name("amount", "text")`` -> ``amount__v_text``, as dlt names it.
    ``column`` must already be a normalized column name or path (it is the name stored in
    the schema); ``data_type`` is a dlt data type such as ``text`` or ``bigint``.
    """
    if not column or not _is_normalized_path(column):
        raise ValueError(f"not a normalized column name: {column!r}")
    if not data_type.strip():
        raise ValueError(f"empty data type for the variant of column {column!r}")
    # Normalizing prefix and type together keeps the part valid even for an odd type
    # name: ``v_`` + ``1x`` is ``v_1x``, whereas normalizing the type alone gives ``_1x``
    # and then ``v__1x``, which would read as a path separator.
    return make_path(column, normalize_identifier(VARIANT_PREFIX + data_type.strip()))


@dataclass(frozen=True, slots=True)
class NameCollision:
    """A source identifier whose normalized name was taken and that got a suffix instead."""

    original: str
    """The identifier as it came from the data."""
    normalized: str
    """What it normalizes to, the name it would have had without the collision."""
    resolved: str
    """The unique name it was given."""


def resolve_collisions(
    names: Sequence[str], taken: Iterable[str] = ()
) -> tuple[list[str], list[NameCollision]]:
    """Normalize sibling identifiers and make the results unique.

    Walking ``names`` in order, the first identifier to claim a normalized name keeps it;
    each later one gets the smallest suffix ``_1``, ``_2``, ... that is not yet used and
    not in ``taken`` (names already claimed by other identifiers, e.g. existing columns
    from a stored schema). The result depends only on ``names`` and ``taken``, never on
    hashing or on earlier calls, so the same data always loads into the same columns.

    Returns the resolved names, aligned with ``names``, and one :class:`NameCollision`
    per renamed identifier. The same identifier listed twice is a caller error
    (``ValueError``): it names one column, and two results for it would be two columns.
    """
    if isinstance(names, str):
        raise TypeError(f"names must be a sequence of identifiers, not a str: {names!r}")
    if isinstance(taken, str):
        raise TypeError(f"taken must be an iterable of names, not a str: {taken!r}")

    used = set(taken)
    seen: set[str] = set()
    # Per base name, the smallest suffix that may still be free. Names only ever get added
    # to ``used``, so every suffix below it stays used and the search can resume there
    # instead of restarting at 1 (which would be quadratic for many colliding columns).
    next_suffix: dict[str, int] = {}
    resolved: list[str] = []
    collisions: list[NameCollision] = []

    for original in names:
        if original in seen:
            raise ValueError(f"identifier listed twice: {original!r}")
        seen.add(original)
        normalized = normalize_identifier(original)
        name = normalized
        if name in used:
            suffix = next_suffix.get(normalized, 1)
            # ``normalized`` never ends with ``_``, so ``<name>_<n>`` is itself a
            # normalized identifier: no ``__``, and normalizing it again changes nothing.
            while f"{normalized}_{suffix}" in used:
                suffix += 1
            name = f"{normalized}_{suffix}"
            next_suffix[normalized] = suffix + 1
            collisions.append(NameCollision(original, normalized, name))
        used.add(name)
        resolved.append(name)

    return resolved, collisions
