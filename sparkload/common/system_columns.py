"""The columns sparkload adds to every table it loads (dlt's ``_dlt_*`` columns).

``_sparkload_id`` identifies a row, ``_sparkload_load_id`` the load that wrote it; a
nested table's rows also carry their parent row's id, their position in the parent's list
and, in merge tables, the root row's id (so a merge can reach nested rows by key).
"""

from __future__ import annotations

ID = "_sparkload_id"
LOAD_ID = "_sparkload_load_id"
PARENT_ID = "_sparkload_parent_id"
LIST_IDX = "_sparkload_list_idx"
ROOT_ID = "_sparkload_root_id"
SYSTEM_COLUMNS = (ID, LOAD_ID, PARENT_ID, LIST_IDX, ROOT_ID)
