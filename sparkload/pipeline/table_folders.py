"""The folders of a dataset that hold tables: listing them and deleting one.

Works on local paths and object-store URLs alike, through pyarrow's filesystems.
"""

from __future__ import annotations

import pyarrow.fs as pafs

# sparkload's own folders in a dataset (the state table, staged packages): never a
# resource's table.
SYSTEM_PREFIX = "_sparkload"


def _filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in uri:
        return pafs.LocalFileSystem(), uri
    return pafs.FileSystem.from_uri(uri)


def table_folders(dataset_uri: str) -> list[str]:
    """Names of the folders directly under the dataset, sparkload's own left out.

    Folders, not only complete Delta tables: what a cut-short deletion left of a table
    must still be found to be deleted."""
    fs, path = _filesystem(dataset_uri)
    selector = pafs.FileSelector(path.rstrip("/"), allow_not_found=True)
    return sorted(
        info.base_name
        for info in fs.get_file_info(selector)
        if info.type == pafs.FileType.Directory and not info.base_name.startswith(SYSTEM_PREFIX)
    )


def delete_table_folder(dataset_uri: str, name: str) -> None:
    """Delete the table ``name`` and its folder; nothing happens if it is not there."""
    fs, path = _filesystem(f"{dataset_uri.rstrip('/')}/{name}")
    # The transaction log goes first: without it the folder is no table to any reader, so a
    # deletion cut short never leaves a table that lacks some of its data files.
    for folder in (f"{path}/_delta_log", path):
        if fs.get_file_info(folder).type != pafs.FileType.NotFound:
            fs.delete_dir(folder)
