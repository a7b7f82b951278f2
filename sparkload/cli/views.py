"""The text the pipeline commands print for people: the pipeline list, a schema, a load
package. Tables of values are column-aligned (``output.table``), one row a line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparkload.cli.output import table
from sparkload.pipeline import load_packages as packages
from sparkload.pipeline.listing import LocalPipeline
from sparkload.pipeline.load_packages import LoadPackageInfo
from sparkload.pipeline.schema import Schema

# Column keys the schema's text shows in columns of their own, not among the hints.
_SHOWN_APART = ("name", "data_type", "nullable", "precision", "scale")


def pipeline_list(directory: Path, found: list[LocalPipeline]) -> list[str]:
    lines = [f"{len(found) or 'no'} pipeline{'' if len(found) == 1 else 's'} in {directory}"]
    for local in found:
        last_run = local.last_run.strftime("%Y-%m-%d %H:%M:%S UTC") if local.last_run else "unknown"
        version = "none" if local.state_version is None else local.state_version
        lines += [
            f"{local.name}: last run {last_run}, state version {version}",
            f"  dataset: {local.dataset_name or 'unknown'}",
            f"  destination: {local.destination or 'unknown (no pipeline.json)'}",
        ]
    return lines


def schema_lines(schema: Schema) -> list[str]:
    lines = [f"schema {schema.name}: version {schema.version}, {len(schema.tables)} tables"]
    for name, described in schema.tables.items():
        lines += ["", _table_heading(name, described), *_column_lines(described["columns"])]
    return lines


def _table_heading(name: str, described: dict[str, Any]) -> str:
    if described.get("parent"):
        return f"{name}: nested in {described['parent']}"
    disposition = described.get("write_disposition") or "unknown disposition"
    strategy = described.get("x-merge-strategy")
    disposition += f" ({strategy})" if strategy else ""
    return f"{name}: {disposition}, resource {described.get('resource')}"


def _column_lines(columns: dict[str, dict[str, Any]]) -> list[str]:
    rows = []
    for name, column in columns.items():
        data_type = column.get("data_type", "?")
        if data_type == "decimal" and column.get("precision") is not None:
            data_type += f"({column['precision']},{column.get('scale', 0)})"
        hints = [
            key if value is True else f"{key}={value}"
            for key, value in column.items()
            if key not in _SHOWN_APART and value not in (False, None)
        ]
        nullable = "yes" if column.get("nullable", True) else "no"
        rows.append([name, data_type, nullable, ", ".join(hints)])
    return table(["column", "type", "nullable", "hints"], rows)


_STATE_NOTES = {
    packages.EXTRACTED: "pending: the next run normalizes and loads it",
    packages.NORMALIZED: "pending: the next run loads it",
    packages.PARTIALLY_LOADED: "pending: a load committed some of its tables; the next run finishes it",
    packages.PLANNED: "extracted by a plan: its apply() loads it, any other run discards it",
    packages.LOADED: "committed",
}


def package_lines(info: LoadPackageInfo) -> list[str]:
    lines = [
        f"load package: {info.load_id}",
        f"state: {info.state} ({_STATE_NOTES.get(info.state, '')})",
        f"path: {info.package_path}",
    ]
    if info.execution_time:
        lines.append(f"execution time: {info.execution_time}")
    if info.state_version is not None:
        lines.append(f"state version: {info.state_version}")
    if info.loaded_at:
        lines.append(f"loaded at: {info.loaded_at}")
    header = ["table", "rows", "files"]
    rows: list[list[object]] = []
    for entry in info.tables:
        row: list[object] = [entry.table, entry.rows, entry.files]
        if info.state == packages.LOADED:
            row += [entry.disposition, entry.version]
        if info.state == packages.PARTIALLY_LOADED:
            row.append("yes" if entry.committed else "no")
        rows.append(row)
    if info.state == packages.LOADED:
        header += ["disposition", "version"]
    if info.state == packages.PARTIALLY_LOADED:
        header.append("committed")
    lines.append(f"tables: {len(info.tables)}" if info.tables else "tables: none")
    if info.tables:
        lines += table(header, rows)
    return lines
