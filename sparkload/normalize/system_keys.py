"""Keys of the data that name sparkload's own columns (``_sparkload_id``, ``_sparkload_load_id`` …).

As in dlt, a root row may bring its own row id (dlt's ``_dlt_id``, "bring your own row
id"): its ``_sparkload_id`` is kept, and its nested rows' ``_sparkload_parent_id`` (and
``_sparkload_root_id``) point at it. Everything else is refused before any table changes,
naming the key:

- a row id that is not text (dlt keeps an int id and makes the nested rows' parent id an
  int too, which no merge or nested table of sparkload can join on), or that repeats within
  the load (two rows, one id: their nested rows could not tell their parents apart);
- a row id in a merge table: a merge finds the stored nested rows of a key by the ids drawn
  for them, which must never repeat between loads;
- a row id in a nested row (dlt then loses the row's link to its parent);
- ``_sparkload_parent_id``, ``_sparkload_list_idx`` and ``_sparkload_root_id``: they link
  nested rows, and a root row has no parent;
- ``_sparkload_load_id`` with a value: the load's id takes its place (dlt writes its load id
  over ``_dlt_load_id`` and the value is gone), so the value would be lost. A key whose
  values are all None loses nothing and is left out.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.naming import PATH_SEPARATOR, VARIANT_PREFIX
from sparkload.common.system_columns import ID, LIST_IDX, LOAD_ID, PARENT_ID, ROOT_ID
from sparkload.exceptions import NormalizeError
from sparkload.normalize.columns import Flattened

_LINKS = (PARENT_ID, LIST_IDX, ROOT_ID)
_DROP_ADVICE = "; pipeline.drop_pending_packages() discards the package, which no table has taken yet"


def _system_column_of(name: str) -> str | None:
    """The system column a leaf of the data names: itself or one of its variant columns
    (``_sparkload_id__v_bigint``: ids of another type than the first seen)."""
    for system in (ID, LOAD_ID, *_LINKS):
        if name == system or name.startswith(system + PATH_SEPARATOR + VARIANT_PREFIX):
            return system
    return None


def take_system_columns(flat: Flattened, table: str, *, root: bool, disposition: str) -> Column | None:
    """Take the leaves naming system columns out of ``flat``; returns the row id the data
    brings (root rows only), or None. Raises ``NormalizeError`` for the keys refused."""
    given_id: Column | None = None
    kept = []
    for leaf in flat.leaves:
        system = _system_column_of(leaf.name)
        if system is None:
            kept.append(leaf)
        elif system == LOAD_ID:
            if not isinstance(leaf.dtype, T.NullType):
                raise NormalizeError(
                    f"table '{table}': the data has a key '{leaf.name}', which names the column "
                    "sparkload writes each row's load id to; its values would be lost under the "
                    f"load id, so rename the key{_DROP_ADVICE}",
                    table=table,
                    column=leaf.name,
                )
        elif system in _LINKS:
            raise NormalizeError(
                f"table '{table}': the data has a key '{leaf.name}', which names a column "
                f"sparkload writes to link nested rows; rename the key{_DROP_ADVICE}",
                table=table,
                column=leaf.name,
            )
        elif isinstance(leaf.dtype, T.NullType):
            continue  # no row brings an id: every id is drawn
        else:
            _check_given_id(leaf.name, leaf.dtype, table, root, disposition)
            given_id = leaf.column
    flat.leaves[:] = kept
    return given_id


def _check_given_id(name: str, dtype: T.DataType, table: str, root: bool, disposition: str) -> None:
    if not root:
        raise NormalizeError(
            f"table '{table}': a nested row brings its own row id ('{ID}'); only root rows "
            f"can (their nested rows then point at it){_DROP_ADVICE}",
            table=table,
            column=name,
        )
    if name != ID or not isinstance(dtype, T.StringType):
        raise NormalizeError(
            f"table '{table}': the row ids the data brings ('{ID}') must be strings, some are "
            f"not{_DROP_ADVICE}",
            table=table,
            column=ID,
        )
    if disposition == "merge":
        raise NormalizeError(
            f"table '{table}': the data brings its own row ids ('{ID}'), which a merge table "
            "cannot take: a merge finds the stored nested rows of a key by the row ids it "
            f"draws, which never repeat between loads; leave '{ID}' out{_DROP_ADVICE}",
            table=table,
            column=ID,
        )


def refuse_repeated_ids(staged: DataFrame, table: str, load_id: str) -> None:
    """Refuse a load whose rows bring one id twice: their nested rows, whose parent id is
    that id, could not tell their parents apart (one aggregation, when ids are given)."""
    counts = staged.agg(F.count(F.lit(1)).alias("rows"), F.countDistinct(ID).alias("ids")).collect()[0]
    if counts["rows"] != counts["ids"]:
        raise NormalizeError(
            f"load package {load_id}, table '{table}': the rows bring their own row ids "
            f"('{ID}'), and {counts['rows'] - counts['ids']} of {counts['rows']} repeat an id "
            f"of another row; a row id must be unique{_DROP_ADVICE}",
            table=table,
            column=ID,
        )
