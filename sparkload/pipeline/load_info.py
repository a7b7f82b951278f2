"""What a run did: LoadInfo (per table rows and Delta versions, rows left out or let
through by data-quality rules) and the step timings."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from sparkload.common.expectations import name_of_reason
from sparkload.pipeline import html_tables

if TYPE_CHECKING:
    from sparkload.normalize.normalizer import NormalizedTable

# What became of rows a rule counted (``NormalizedTable.dropped`` and ``.warned``).
DROPPED: Literal["dropped"] = "dropped"
WARNED: Literal["warned"] = "warned"
# The columns of a LoadInfo's table entries in its HTML, in the order shown.
LOAD_COLUMNS = ("table", "rows", "disposition", "version", "load_id")


class _Record(Mapping[str, Any]):
    """A typed entry that scripts may still read as the dict it used to be
    (``entry["rows"]``, ``dict(entry)``, ``entry == {...}``)."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def _keys(self) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(self))  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True, eq=False)
class LoadedTable(_Record):
    """One table's commit by one package of the run."""

    table: str
    rows: int
    version: int | None  # the table's Delta version after the commit
    disposition: str
    load_id: str


@dataclasses.dataclass(frozen=True, eq=False)
class RowsByReason(_Record):
    """Rows of one table and package that a rule left out (``dropped``) or let through with a
    warning (``warned``)."""

    load_id: str
    table: str
    reason: str
    outcome: Literal["dropped", "warned"]
    rows: int


@dataclasses.dataclass
class StepTiming:
    step: str
    seconds: float


@dataclasses.dataclass
class LoadInfo:
    """What one run loaded. A run that commits several load packages (an interval backfill
    in batches, or packages an earlier run left) reports all of them: ``loads_ids`` lists
    them in order, ``load_id`` is the last, ``tables`` has one entry per table and package
    (each with its ``load_id``), and ``notes`` are those of every package.

    ``rows_by_reason`` has one entry per table, reason and package for rows a rule left out
    (``"outcome": "dropped"``: a ``drop`` expectation, with the rows nested under them) or let
    through with a warning (``"warned"``); ``dropped_rows``, ``warned_rows`` and
    ``expectations`` sum them over the run."""

    pipeline_name: str
    dataset_uri: str
    load_id: str | None
    tables: list[LoadedTable] = dataclasses.field(default_factory=list)
    timings: list[StepTiming] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    loads_ids: list[str] = dataclasses.field(default_factory=list)
    rows_by_reason: list[RowsByReason] = dataclasses.field(default_factory=list)

    def followed_by(self, later: LoadInfo) -> LoadInfo:
        """This info and that of a package loaded after it in the same run. Timings come
        from ``later``: they are the run's trace so far."""
        if later.load_id is None:
            return self
        return LoadInfo(
            self.pipeline_name,
            self.dataset_uri,
            later.load_id,
            self.tables + later.tables,
            later.timings,
            self.notes + later.notes,
            self.loads_ids + later.loads_ids,
            self.rows_by_reason + later.rows_by_reason,
        )

    @property
    def row_counts(self) -> dict[str, int]:
        """Rows per table, over every package of the run."""
        counts: dict[str, int] = {}
        for t in self.tables:
            counts[t.table] = counts.get(t.table, 0) + t.rows
        return counts

    @property
    def versions(self) -> dict[str, int | None]:
        """Each table's Delta version after the run (the last package's commit)."""
        return {t.table: t.version for t in self.tables}

    @property
    def dropped_rows(self) -> dict[str, dict[str, int]]:
        """Rows left out of each table, by reason (``"expectation 'valid_amount'"``)."""
        return _sum_by_reason(self.rows_by_reason, DROPPED)

    @property
    def warned_rows(self) -> dict[str, dict[str, int]]:
        """Rows loaded into each table although they broke a rule that only warns, by reason."""
        return _sum_by_reason(self.rows_by_reason, WARNED)

    @property
    def expectations(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per table, per expectation: the rows it dropped or warned of, e.g.
        ``{"orders": {"valid_amount": {"dropped": 2}}, "orders__items": {"valid_amount":
        {"dropped": 3}}}`` (nested rows left out with their parent count under the parent's
        expectation). Expectations no row broke are not listed."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for entry in self.rows_by_reason:
            name = name_of_reason(entry.reason)
            if name is None:
                continue
            counts = out.setdefault(entry.table, {}).setdefault(name, {})
            counts[entry.outcome] = counts.get(entry.outcome, 0) + entry.rows
        return out

    @property
    def has_data(self) -> bool:
        return any(t.rows for t in self.tables)

    def timing(self, step: str) -> float:
        return sum(t.seconds for t in self.timings if t.step == step)

    def asdict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_dict(self) -> dict[str, Any]:
        return self.asdict()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadInfo:
        """The info ``to_dict`` gave, as a saved trace holds it."""
        values = dict(data)
        values["timings"] = [StepTiming(**timing) for timing in data.get("timings", [])]
        values["tables"] = [LoadedTable(**table) for table in data.get("tables", [])]
        values["rows_by_reason"] = [RowsByReason(**entry) for entry in data.get("rows_by_reason", [])]
        return cls(**values)

    def _repr_html_(self) -> str:
        return load_info_html(self)

    def _repr_pretty_(self, printer: html_tables.PrettyPrinter, cycle: bool) -> None:
        # IPython's plain-text display (a terminal, a notebook's text/plain): the short text,
        # not the dataclass's field-by-field repr.
        printer.text(str(self))

    def __str__(self) -> str:
        if self.load_id is None:
            return f"Pipeline {self.pipeline_name}: nothing to load into {self.dataset_uri}"
        loads = (
            f"load {self.load_id}"
            if len(self.loads_ids) <= 1
            else f"{len(self.loads_ids)} loads {self.loads_ids[0]} … {self.load_id}"
        )
        lines = [f"Pipeline {self.pipeline_name} {loads} into {self.dataset_uri}"]
        last = {t.table: t for t in self.tables}
        counts = self.row_counts
        width = max((len(name) for name in last), default=5)
        for name, t in last.items():
            version = "-" if t.version is None else t.version
            lines.append(f"  {name:<{width}}  {counts[name]:>10,} rows  {t.disposition:<8} version {version}")
        steps = ", ".join(f"{t.step} {t.seconds:.2f}s" for t in self.timings)
        if steps:
            lines.append(f"  took {steps}")
        for outcome, by_table in (
            ("dropped", self.dropped_rows),
            ("loaded with a warning", self.warned_rows),
        ):
            lines += [
                f"  {table}: {rows:,} rows {outcome} ({reason})"
                for table, reasons in by_table.items()
                for reason, rows in reasons.items()
            ]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def rows_by_reason_of(load_id: str, tables: Iterable[NormalizedTable]) -> list[RowsByReason]:
    """The LoadInfo entries of a package's normalized tables (as its manifest holds them)."""
    return [
        RowsByReason(load_id, table.name, reason, outcome, rows)
        for table in tables
        for outcome, by_reason in ((DROPPED, table.dropped), (WARNED, table.warned))
        for reason, rows in by_reason.items()
        if rows
    ]


def _sum_by_reason(entries: Iterable[RowsByReason], outcome: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for entry in entries:
        if entry.outcome != outcome:
            continue
        by_reason = out.setdefault(entry.table, {})
        by_reason[entry.reason] = by_reason.get(entry.reason, 0) + entry.rows
    return out


# -- HTML ----------------------------------------------------------------------------------
def load_info_html(info: LoadInfo) -> str:
    """The pipeline, dataset and load ids, then one row per table and package loaded, the
    rows rules dropped or warned of, and the notes."""
    summary: list[tuple[str, object]] = [("pipeline", info.pipeline_name)]
    summary += load_summary(info)
    if info.timings:
        summary.append(("took", [f"{t.step} {t.seconds:.2f}s" for t in info.timings]))
    return html_tables.block([html_tables.fields(summary), *load_details(info)])


def load_summary(info: LoadInfo) -> list[tuple[str, object]]:
    return [
        ("dataset", info.dataset_uri),
        ("load ids", list(info.loads_ids) if info.loads_ids else "nothing loaded"),
    ]


def load_details(info: LoadInfo) -> list[str]:
    """The tables loaded, the rows rules dropped or warned of, and the notes."""
    parts = []
    if info.tables:
        columns = list(LOAD_COLUMNS)
        if len(info.loads_ids) <= 1:
            columns.remove("load_id")  # the summary names the one load
        columns += [key for entry in info.tables for key in entry if key not in LOAD_COLUMNS]
        columns = list(dict.fromkeys(columns))
        parts.append(
            html_tables.table(
                [html_tables.HEADERS.get(c, c) for c in columns],
                ([entry.get(c) for c in columns] for entry in info.tables),
                "Tables",
            )
        )
    by_reason = [
        (name, reason, outcome, rows)
        for outcome, counts in (("dropped", info.dropped_rows), ("warned", info.warned_rows))
        for name, reasons in counts.items()
        for reason, rows in reasons.items()
    ]
    if by_reason:
        parts.append(
            html_tables.table(
                ("table", "reason", "outcome", "rows"), by_reason, "Rows dropped or loaded with a warning"
            )
        )
    if info.notes:
        parts.append(html_tables.table(None, ([note] for note in info.notes), "Notes"))
    return parts
