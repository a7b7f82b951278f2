"""dlt's item marks: ``sl.mark.with_table_name``, ``sl.mark.with_hints``, ``sl.mark.make_hints``,
``sl.mark.with_file_import``.

A resource yields ``with_table_name(item, "orders")`` to send that one item to another
table, and ``with_hints(item, make_hints(...))`` to change its hints from that item on. A
mark wraps the item (a dict, a list of them, an Arrow table, a pandas frame, a value): pipe
steps run on what it wraps and keep the mark (``pipes.py``), and the extractor routes it
(``extractor.py``). ``with_file_import(path, "jsonl")`` marks a file already on disk, which
the extractor stages as it is (``storage.py``) instead of writing rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from sparkload.exceptions import ResourceError
from sparkload.extract.hints import TableHints, honoured_hints

# The hints of dlt's make_hints that a table of sparkload has.
SUPPORTED_HINTS = ("table_name", "write_disposition", "columns", "primary_key", "merge_key")
# The rest of dlt's make_hints keywords: refused by name, since ignoring one would load the
# data otherwise than the script asks.
UNSUPPORTED_HINTS = (
    "parent_table_name",
    "schema_contract",
    "table_format",
    "file_format",
    "additional_table_hints",
    "references",
    "incremental",
    "nested_hints",
)
# The file formats with_file_import takes: those the engine normalizes like staged files.
IMPORT_FORMATS = ("jsonl", "parquet")


@dataclasses.dataclass(frozen=True)
class FileImport:
    """A file to stage as it is (dlt's ImportFileMeta); ``items_count`` is the count the
    script gave, if any (the rows are counted from the file)."""

    path: Path
    file_format: str
    items_count: int | None = None


class MarkedItem:
    """An item with the table it goes to or the hints it brings (dlt's DataItemWithMeta).

    Not a dataclass: the row serializer would write a dataclass as a dict, so a mark that
    reached it unrouted would land as columns instead of failing."""

    __slots__ = ("create_table_variant", "data", "file_import", "hints", "table_name")

    def __init__(
        self,
        data: object,
        table_name: str | None = None,
        hints: Mapping[str, object] | None = None,
        create_table_variant: bool = False,
        file_import: FileImport | None = None,
    ) -> None:
        self.data = data
        self.table_name = table_name
        self.hints = hints
        self.create_table_variant = create_table_variant
        self.file_import = file_import

    def with_data(self, data: object) -> MarkedItem:
        """The same mark on other data (what a map step made of the marked item)."""
        return MarkedItem(data, self.table_name, self.hints, self.create_table_variant, self.file_import)

    def __repr__(self) -> str:
        mark = f"table_name={self.table_name!r}" if self.hints is None else f"hints={self.hints!r}"
        if self.file_import is not None:
            mark = f"file_import={str(self.file_import.path)!r}, {mark}"
        return f"<item marked by sl.mark, {mark}: {self.data!r}>"


def with_table_name(item: object, table_name: str) -> MarkedItem:
    """Send ``item`` to the table ``table_name``, with the resource's hints (dlt's
    ``dlt.mark.with_table_name``)."""
    return MarkedItem(item, table_name=_table_name(table_name, "with_table_name"))


def with_hints(
    item: object, hints: Mapping[str, object] | None = None, create_table_variant: bool = False
) -> MarkedItem:
    """Apply ``hints`` (made with :func:`make_hints`) to the resource from ``item`` on, for the
    rest of the run; with ``create_table_variant=True`` they are the hints of the table
    ``hints["table_name"]`` only, which ``item`` goes to (dlt's ``dlt.mark.with_hints``)."""
    checked = _checked_hints(hints or {})
    if create_table_variant:
        name = checked.get("table_name")
        if not isinstance(name, str):
            raise ResourceError(
                "sl.mark.with_hints(create_table_variant=True) needs a table_name (a string) in its hints"
            )
        if any(callable(value) for value in checked.values()):
            raise ResourceError(f"the hints of the table variant '{name}' cannot be functions of the item")
    return MarkedItem(item, hints=checked, create_table_variant=create_table_variant)


def with_file_import(
    file_path: str | Path,
    file_format: str,
    items_count: int | None = None,
    hints: Mapping[str, object] | None = None,
) -> MarkedItem:
    """Load the file ``file_path`` (``"jsonl"`` or ``"parquet"``) as the resource's table, or
    the table ``hints`` names, without reading its rows in Python (dlt's
    ``dlt.mark.with_file_import``). The file is linked (or copied) into the load package and
    left where it is; ``hints`` (made with :func:`make_hints`) apply to the resource from
    this item on, as with :func:`with_hints`. The rows are counted from the file, so
    ``items_count`` is not needed."""
    if file_format not in IMPORT_FORMATS:
        raise ResourceError(
            f"sl.mark.with_file_import: sparkload cannot import {file_format!r} files "
            f"({file_path}); it imports {' and '.join(IMPORT_FORMATS)}"
        )
    if hints is not None and not isinstance(hints, Mapping):
        # dlt also takes an Arrow table or frame whose schema gives the columns; here the
        # engine reads the types from the file itself.
        raise ResourceError(
            "sl.mark.with_file_import: hints must be made by sl.mark.make_hints, got a "
            f"{type(hints).__name__} (the columns' types are read from the file)"
        )
    if items_count is not None and (not isinstance(items_count, int) or items_count < 0):
        raise ResourceError(f"sl.mark.with_file_import: items_count must be a count, got {items_count!r}")
    checked = _checked_hints(hints) if hints else None
    if checked is not None and callable(checked.get("table_name")):
        raise ResourceError("sl.mark.with_file_import: the table_name hint cannot be a function of the item")
    return MarkedItem(None, hints=checked, file_import=FileImport(Path(file_path), file_format, items_count))


def make_hints(
    table_name: object = None,
    parent_table_name: object = None,
    write_disposition: object = None,
    columns: object = None,
    primary_key: object = None,
    merge_key: object = None,
    schema_contract: object = None,
    table_format: object = None,
    file_format: object = None,
    additional_table_hints: object = None,
    references: object = None,
    incremental: object = None,
    nested_hints: object = None,
) -> dict[str, object]:
    """Hints for :func:`with_hints`, with dlt's keywords; only those given (not None) are set.

    A keyword sparkload has no equivalent for raises ``ResourceError`` naming it."""
    given = {
        "table_name": table_name,
        "parent_table_name": parent_table_name,
        "write_disposition": write_disposition,
        "columns": columns,
        "primary_key": primary_key,
        "merge_key": merge_key,
        "schema_contract": schema_contract,
        "table_format": table_format,
        "file_format": file_format,
        "additional_table_hints": additional_table_hints,
        "references": references,
        "incremental": incremental,
        "nested_hints": nested_hints,
    }
    return _checked_hints({name: value for name, value in given.items() if value is not None})


def make_nested_hints(
    parent_table_name: object = None,
    write_disposition: object = None,
    primary_key: object = None,
    columns: object = None,
    schema_contract: object = None,
    table_format: object = None,
    file_format: object = None,
    merge_key: object = None,
    references: object = None,
) -> dict[str, object]:
    """Hints of one nested table for a resource's ``nested_hints``, with dlt's keywords; only
    those given (not None) are set. The resource refuses those it cannot honour
    (``extract/hints.py``: a nested table takes ``columns``)."""
    given = {
        "parent_table_name": parent_table_name,
        "write_disposition": write_disposition,
        "primary_key": primary_key,
        "columns": columns,
        "schema_contract": schema_contract,
        "table_format": table_format,
        "file_format": file_format,
        "merge_key": merge_key,
        "references": references,
    }
    return {name: value for name, value in given.items() if value is not None}


def _checked_hints(hints: Mapping[str, object]) -> dict[str, object]:
    """``hints`` with only what sparkload can honour, each value checked now, where the
    script makes the mark, rather than when the item is written."""
    if not isinstance(hints, Mapping):
        raise ResourceError(f"sl.mark.with_hints takes hints made by sl.mark.make_hints, got {hints!r}")
    checked = honoured_hints(hints, SUPPORTED_HINTS, UNSUPPORTED_HINTS, "sl.mark")
    if "table_name" in checked and not callable(checked["table_name"]):
        checked["table_name"] = _table_name(checked["table_name"], "make_hints")
    for name in ("write_disposition", "columns", "primary_key", "merge_key"):
        if callable(checked.get(name)):
            raise ResourceError(
                f"sl.mark: the hint {name!r} cannot be a function of the item (only table_name can)"
            )
    TableHints().merge(**checked)  # raises on a value the resource's hints would refuse
    return checked


def _table_name(name: object, caller: str) -> str:
    if not isinstance(name, str) or not name:
        raise ResourceError(f"sl.mark.{caller}: the table name must be a non-empty string, got {name!r}")
    return name
