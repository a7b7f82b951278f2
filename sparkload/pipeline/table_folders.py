"""The folders of a dataset that hold tables: listing them and deleting one.

Works on local paths and object-store URLs alike (``load/folder.py``).
"""

from __future__ import annotations

from sparkload.load.folder import Folder

# sparkload's own folders in a dataset (the state table, staged packages): never a
# resource's table.
SYSTEM_PREFIX = "_sparkload"


def table_folders(dataset_uri: str) -> list[str]:
    """Names of the folders directly under the dataset, sparkload's own left out.

    Folders, not only complete Delta tables: what a cut-short deletion left of a table
    must still be found to be deleted."""
    return [name for name in Folder(dataset_uri).subfolders() if not name.startswith(SYSTEM_PREFIX)]


def delete_table_folder(dataset_uri: str, name: str) -> None:
    """Delete the table ``name`` and its folder; nothing happens if it is not there."""
    table = Folder(dataset_uri).child(name)
    # The transaction log goes first: without it the folder is no table to any reader, so a
    # deletion cut short never leaves a table that lacks some of its data files.
    table.child("_delta_log").delete()
    table.delete()
