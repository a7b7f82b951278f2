"""Destructive schema changes (SQLMesh's ``on_destructive_change``), found before any commit.

Destructive, for a table that is appended to or merged into:
- a column's values no longer fit its type, so this load would open a variant column for
  it (``age__v_text`` beside a bigint ``age``): the column's type changes for new rows;
- a primary or merge key different from the one the table was last loaded with.

Additive changes always proceed: new columns, values that widen into the existing
column (ints into a bigint or double column), and widening a column narrower than
sparkload's types (int → bigint, float → double in a table another writer made). Delta
cannot widen a column in place, so the wider values go to a variant column
(``n__v_bigint``) while the values the column holds exactly stay in it (types.fit_test);
no value changes. A replace rebuilds its table, so nothing of it is destroyed.
Partitioning cannot change: sparkload writes no partitioned tables.

The policy is ``error`` (the default: stop before any commit), ``warn`` or ``allow``
(proceed by the variant-column rule); both of the latter say so in the LoadInfo notes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import Final, Literal

from pyspark.sql import types as T

from sparkload.common.hints import DATA_TYPES, LoadHints
from sparkload.common.state_record import KEYS_KEY, MergeKeys
from sparkload.exceptions import DestructiveChangeError
from sparkload.load.merge_config import validity_columns
from sparkload.normalize.normalizer import NormalizedTable

logger = logging.getLogger(__name__)

DEFAULT_POLICY = "error"
# state["keys"][<table>] = {"primary_key": [...], "merge_key": [...]}
KEYS_STATE: Final = KEYS_KEY
VALIDITY_STATE: Final = "validity_columns"  # and, for an scd2 table, its validity columns
_VARIANT_MARK = "__v_"
_KEY_HINTS: tuple[Literal["primary_key"], Literal["merge_key"]] = ("primary_key", "merge_key")


@dataclasses.dataclass(frozen=True)
class DestructiveChange:
    table: str
    description: str
    column: str | None = None  # None for a change of keys


def split_variant(column: str) -> tuple[str, str] | None:
    """``("age", "text")`` for a variant column ``age__v_text``; None for other columns."""
    base, mark, data_type = column.rpartition(_VARIANT_MARK)
    return (base, data_type) if mark and base and data_type in DATA_TYPES else None


def widens(column: T.DataType, data_type: str) -> bool:
    """True when a variant column of ``data_type`` beside ``column`` only widens it: the
    same family of values, too wide for an int or float column (int → bigint, float →
    double). Other variants change the column's type (bigint → text, double → bigint)."""
    if data_type == "bigint":
        return isinstance(column, (T.ByteType, T.ShortType, T.IntegerType))
    return data_type == "double" and isinstance(column, T.FloatType)


def variant_changes(table: NormalizedTable, destination: T.StructType | None) -> list[DestructiveChange]:
    """Columns of ``destination`` for which this load opens a new variant column."""
    if destination is None:
        return []
    existing = {field.name: field.dataType for field in destination.fields}
    changes = []
    for spec in table.columns:
        variant = split_variant(spec.name)
        if variant is None:
            continue
        base, data_type = variant
        if base in existing and spec.name not in existing and not widens(existing[base], data_type):
            changes.append(
                DestructiveChange(
                    table.name,
                    f"column '{base}' changes type from {existing[base].simpleString()} to {data_type} "
                    f"(its {data_type} values would go to a new variant column '{spec.name}')",
                    base,
                )
            )
    return changes


def key_changes(table: str, hints: LoadHints, recorded: MergeKeys | None) -> list[DestructiveChange]:
    """Keys that differ from those the table was loaded with (adding keys is additive)."""
    if not recorded:
        return []
    changes = []
    for hint in _KEY_HINTS:
        old, new = list(recorded.get(hint) or []), keys_of(table, hints)[hint]
        if old and new and old != new:
            changes.append(DestructiveChange(table, f"{hint.replace('_', ' ')} changes from {old} to {new}"))
    return changes


def keys_of(table: str, hints: LoadHints) -> MergeKeys:
    """The keys a table is loaded with, as the state records them; for an scd2 table also
    its validity columns, which mark it as keeping history (``preflight.check_not_history``)."""
    keys: MergeKeys = {"primary_key": list(hints.primary_key), "merge_key": list(hints.merge_key)}
    if hints.disposition == "merge" and hints.strategy == "scd2":
        keys["validity_columns"] = list(validity_columns(table, hints.options))
    return keys


def enforce(changes: Iterable[DestructiveChange], policy_of: Mapping[str, str]) -> list[str]:
    """Raise for a change whose table's policy is ``error``; notes for the others."""
    notes = []
    refused = []
    for change in changes:
        policy = policy_of.get(change.table, DEFAULT_POLICY)
        message = f"table '{change.table}': {change.description}"
        if policy == "error":
            refused.append((change.table, change.column, change.description))
        else:
            if policy == "warn":
                logger.warning("destructive change allowed: %s", message)
            notes.append(f"{message}; allowed by on_destructive_change='{policy}'")
    if refused:
        raise DestructiveChangeError(refused)
    return notes
