"""Refuse hints that name a column two source keys normalize to.

``{"Id": 1, "id": 10}`` loads as columns ``id`` and ``id_1`` (see
``common.naming.resolve_collisions``), but hints are normalized before the data is seen: a
``primary_key="Id"`` becomes ``id``, the column that holds the *other* key's values. Merged
on it, rows are matched by the wrong key and silently lost or doubled; a column hint would
type the wrong column. Which source key a hint meant cannot be told from its normalized
name, so such a hint is an error that names the keys and the columns they load as.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparkload.common.hints import LoadHints
from sparkload.common.naming import NameCollision
from sparkload.exceptions import NormalizeError


def refuse_hints_on_collided_columns(
    table: str, hints: LoadHints, collisions: Sequence[NameCollision]
) -> None:
    """Raise NormalizeError if a key or column hint of the root ``table`` names a column
    that a renamed source key (one of ``collisions``) would have had."""
    named = {
        **{column: "column hint" for column in hints.columns},
        **{column: "merge_key" for column in hints.merge_key},
        **{column: "primary_key" for column in hints.primary_key},
    }
    for column, hint in named.items():
        renamed = [collision for collision in collisions if collision.normalized == column]
        if not renamed:
            continue
        loaded_as = ", ".join(f"{c.original!r} as '{c.resolved}'" for c in renamed)
        raise NormalizeError(
            f"table '{table}': the {hint} '{column}' is ambiguous: more than one source key "
            f"normalizes to '{column}'; one loads as '{column}', and {loaded_as}. Give the hint "
            f"the loaded column it means (e.g. '{renamed[0].resolved}'), or rename the keys "
            "in the data. Nothing was loaded; the extracted package stays and the next run "
            "retries it (pipeline.drop_pending_packages() discards it)",
            table=table,
            column=column,
        )
