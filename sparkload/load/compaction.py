"""Compaction of the tables sparkload keeps for itself: the pipeline state and the
tombstones of ``sequence_by`` merges.

Each of their commits adds a small file, and a table of many small files costs more to
read with every run. Every ``EVERY`` commits (counted by what the caller knows: the
state's version, the table's version) the rows are rewritten into one file, in one
commit that replaces exactly the rows it read: an overwrite, of the whole table or of the
rows a ``replaceWhere`` predicate names, whose rows are read inside the same write, so
the engine's commit conflicts with any commit made since it read them. A conflict is
retried; when retries run out the table stays as it was for the next compaction: nothing
depends on it being compact.
"""

from __future__ import annotations

import logging

from sparkload.load.retry import is_commit_conflict, with_commit_retry
from sparkload.load.table import DeltaTable

logger = logging.getLogger(__name__)

# Commits between compactions: each adds about one file, so a table holds at most about
# this many files between them.
EVERY = 64


def due(count: int) -> bool:
    """Whether the ``count``-th commit (a state version, a table version) compacts."""
    return count > 0 and count % EVERY == 0


def compact(table: DeltaTable, tag: str, predicate: str | None = None) -> None:
    """Rewrite the rows of ``table`` (those matching ``predicate``, if given) into one file,
    in one commit tagged ``tag``. Tables in a folder only: a catalog table takes no
    ``replaceWhere``, and an overwrite of it from its own rows is not one every engine
    takes."""
    if not table.exists() or not table.replace_where:
        return
    options = {} if predicate is None else {"replaceWhere": predicate}

    def rewrite() -> None:
        # Built here, not once: a retry must read the table as it is then.
        rows = table.read()
        if predicate is not None:
            rows = rows.where(predicate)
        table.write(rows.coalesce(1), "overwrite", tag, **options)

    try:
        with_commit_retry(rewrite, f"compacting table '{table.name}'")
    except Exception as exc:
        if not is_commit_conflict(exc):
            raise
        logger.warning("table '%s' was not compacted (other writers kept committing): %s", table.name, exc)
