"""The incremental filter: which items are in the cursor's range, and what the cursor state
becomes as they pass.

``IncrementalTransform`` holds the whole state of one run's filter, explicitly: the range
(``start_value``, ``end_value``, whether each end is open), the newest cursor value so far
(``last_value``), the hashes of the rows the previous run loaded at the start (skipped
again), the rows sitting on ``last_value`` (hashed into the state for the next run), and
whether rows were seen outside the range. Its two kinds filter with that state:
``RowIncremental`` dicts (or objects) one by one, ``ArrowIncremental`` Arrow tables, record
batches and pandas frames with Arrow compute kernels, looking one by one only at the rows
on the boundary. A resource yielding both kinds switches kinds with the state carried over.

Invariants: while rows pass, ``last_value`` only moves on in ``last_value_func``'s order;
``save()`` never moves the stored cursor behind the one the run found (a lagged run starts
behind it), and keeps the hashes of the rows on the stored cursor.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson
import pendulum
from jsonpath_ng import JSONPath
from jsonpath_ng import parse as parse_jsonpath

from sparkload.common.time import plain_utc
from sparkload.exceptions import IncrementalCursorError
from sparkload.extract.items import is_arrow, is_pandas

if TYPE_CHECKING:
    import pyarrow as pa

# No cursor value in a row; no stored cursor when the run began.
MISSING: Final = object()
_SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclasses.dataclass(eq=False)
class IncrementalTransform:
    """One run's incremental filter and its state; subclasses filter one kind of item."""

    resource_name: str
    cursor_path: str
    last_value_func: Callable[[Sequence[Any]], Any]
    on_cursor_value_missing: str  # "raise", "include" or "exclude"
    range_start: str  # "closed" or "open"
    range_end: str
    # Rows are told apart at the range's start and at last_value by these key columns,
    # by their whole content (None), or not at all (()).
    dedup_key: tuple[str, ...] | None
    start_value: object
    end_value: object
    last_value: object
    start_hashes: frozenset[str] = frozenset()
    # The cursor's entry in the resource state, which save() writes; None: the run keeps no
    # state (a backfill with end_value, an external scheduler's interval).
    state: dict[str, Any] | None = None
    # The last_value the state held when the run began (MISSING: none).
    stored_last: object = MISSING
    # The incremental has a lag: the run may start behind the stored cursor.
    lagged: bool = False
    # Whether a row passed this run: only then does save() record where the run started.
    rows_passed: bool = False
    rows_at_last: list[object] = dataclasses.field(default_factory=list)
    start_out_of_range: bool = False
    end_out_of_range: bool = False

    def __call__(self, item: object) -> object:
        """``item`` with only its rows in range (None: no row is), moving ``last_value`` on."""
        raise NotImplementedError

    def as_kind(self, kind: type[IncrementalTransform]) -> IncrementalTransform:
        """This filter, its state carried over, for another kind of item."""
        if type(self) is kind:
            return self
        return kind(**{field.name: getattr(self, field.name) for field in dataclasses.fields(self)})

    def hash(self, row: Any) -> str:
        """The digest a row is deduplicated by at the boundary: of its key, else of the row."""
        if self.dedup_key:
            try:
                value: object = [row[k] for k in self.dedup_key]
            except (KeyError, TypeError) as exc:
                raise IncrementalCursorError(
                    self.resource_name,
                    self.cursor_path,
                    f"primary key {list(self.dedup_key)} for incremental deduplication is "
                    f"missing in {_short(row)}",
                    row=row,
                ) from exc
        else:
            value = row
        return row_digest(value)

    def save(self) -> None:
        """Write ``last_value`` and the hashes of the rows sitting on it to the state.

        The stored cursor only moves forward (in last_value_func's order). Lag starts a run
        behind it, so a run that brings nothing newer (no rows, or only rows in the window)
        ends behind it too; storing that would start the next run further back each time and
        reload the same rows again and again. dlt likewise combines the new last value with
        the stored one through last_value_func when lag is set.
        """
        rows, self.rows_at_last = self.rows_at_last, []
        if self.state is None:
            return
        if self.rows_passed:
            # dlt's ``start_value`` in the state: the stored cursor when the last run that
            # let rows through began (the initial value on a fresh state).
            self.state["start_value"] = self.stored_last
        if self.dedup_key == ():
            # No deduplication (``primary_key=()``): no hashes either, as dlt stores none. Kept,
            # the hashes an earlier run stored would drop rows on the cursor once a later run
            # deduplicates again, though this run loaded them once more.
            self.state["unique_hashes"] = []
        last, stored = self.last_value, self.stored_last
        if self.lagged and stored is not MISSING and stored is not None:
            order = self._passes(last, stored)
        else:
            # Without lag the run starts at the stored value and last_value only moves on from
            # it, so only equality matters (and a custom last_value_func need not order values).
            order = None if last == self.start_value else True
        if order is not True:
            # The stored cursor stays, and so do the hashes of the rows on it (they deduplicate
            # the next run's start); rows on exactly that value are added to them. Rows behind
            # it (inside the lag window) say nothing about the boundary and are not hashed.
            self.last_value = stored
            if self.dedup_key != () and rows and order is None:
                hashes = set(self.state.get("unique_hashes", [])) | {self.hash(r) for r in rows}
                self.state["unique_hashes"] = sorted(hashes)
            return
        self.state["last_value"] = last
        if self.dedup_key != () and rows:
            self.state["unique_hashes"] = sorted({self.hash(r) for r in rows})

    def _passes(self, value: object, bound: object) -> bool | None:
        """Whether ``value`` is past ``bound`` in the order of last_value_func (max or min, as
        lag requires): True (past), None (equal) or False (behind)."""
        try:
            at = comparable(bound, value)
            if at == value:
                return None
            return bool(self.last_value_func((value, at)) != at)
        except TypeError as exc:
            raise IncrementalCursorError(
                self.resource_name,
                self.cursor_path,
                f"cursor value {value!r} at '{self.cursor_path}' cannot be compared with the "
                f"stored {bound!r}: {exc}",
                value=value,
            ) from exc


class RowIncremental(IncrementalTransform):
    """Filters dicts (or objects with the cursor as an attribute), and lists of them, row by row."""

    def __call__(self, item: object) -> object:
        if isinstance(item, list):
            kept = [row for row in item if self._keep(row)]
            return kept or None
        return item if self._keep(item) else None

    def cursor_value(self, row: object) -> object:
        """The value at ``cursor_path`` in ``row``; ``MISSING`` when absent or NULL."""
        path = self.cursor_path
        if _SIMPLE_NAME.match(path):
            value = row.get(path) if isinstance(row, Mapping) else getattr(row, path, None)
        else:
            matches = _compiled(path).find(row)
            value = matches[0].value if matches else None
        return MISSING if value is None else value

    def _keep(self, row: object) -> bool:
        value = self.cursor_value(row)
        if value is MISSING:
            if self.on_cursor_value_missing == "raise":
                raise IncrementalCursorError(
                    self.resource_name,
                    self.cursor_path,
                    f"a row has no value at cursor path '{self.cursor_path}' "
                    f"(on_cursor_value_missing='raise'): {_short(row)}",
                    row=row,
                )
            return self.on_cursor_value_missing == "include"
        func = self.last_value_func
        if isinstance(value, str) and any(
            isinstance(b, datetime.datetime) for b in (self.last_value, self.start_value, self.end_value)
        ):
            # An ISO string against a datetime bound: compared as UTC instants.
            value = plain_utc(pendulum.parse(value))  # type: ignore[arg-type]
        try:
            if self.end_value is not None:
                end = comparable(self.end_value, value)
                if func((value, end)) != end or (self.range_end == "open" and func((value,)) == end):
                    self.end_out_of_range = True
                    return False
            last = comparable(self.last_value, value) if self.last_value is not None else None
            new = func((value, last)) if last is not None else func((value,))
            if last is not None and new == last:
                own = func((value,))
                start = comparable(self.start_value, value) if self.start_value is not None else None
                if start is not None:
                    if self.range_start == "open" and own == start:
                        self.start_out_of_range = True
                        return False
                    if func((value, start)) == start:
                        if own != start:
                            self.start_out_of_range = True  # before the range
                            return False
                        if self.dedup_key != () and self.hash(row) in self.start_hashes:
                            # Loaded by the previous run: as in dlt, such a row counts as
                            # before the range (row_order "desc" stops there).
                            self.start_out_of_range = True
                            return False
                if own == last:
                    self.rows_at_last.append(row)
                return True
        except TypeError as exc:
            raise IncrementalCursorError(
                self.resource_name,
                self.cursor_path,
                f"cursor value {value!r} at '{self.cursor_path}' cannot be compared with "
                f"{self.last_value!r}: {exc}",
                row=row,
                value=value,
            ) from exc
        self.last_value = new
        self.rows_at_last = [row]
        return True


class ArrowIncremental(IncrementalTransform):
    """Filters Arrow tables, record batches and pandas frames, vectorized: the range test, the
    out-of-range flags and the new last value are Arrow compute kernels over the cursor
    column; only rows exactly on the start or on the new last value (the boundary, usually
    a handful) are looked at one by one, to deduplicate them."""

    def __call__(self, item: object) -> object:
        import pyarrow as pa  # Arrow items are here: pyarrow is imported by whoever made them
        import pyarrow.compute as pc

        table: pa.Table = pa.Table.from_pandas(item, preserve_index=False) if is_pandas(item) else item
        name = self.cursor_path
        func = self.last_value_func
        resource = self.resource_name
        if func not in (max, min):
            raise IncrementalCursorError(
                resource, name, "Arrow and pandas items need last_value_func max or min"
            )
        if name not in table.schema.names:
            if self.on_cursor_value_missing == "raise":
                raise IncrementalCursorError(resource, name, f"the items have no cursor column '{name}'")
            return item if self.on_cursor_value_missing == "include" else None
        cursor = table.column(name)
        present = pc.is_valid(cursor)
        if self.on_cursor_value_missing == "raise" and cursor.null_count:
            raise IncrementalCursorError(
                resource, name, f"{cursor.null_count} row(s) have no value in cursor column '{name}'"
            )
        if not len(cursor) or not pc.any(present).as_py():
            keep_missing = self.on_cursor_value_missing == "include"
            return item if keep_missing else None
        sample = pc.min(cursor).as_py()
        # ``ahead``/``behind`` order values the way last_value_func does (min reverses them).
        ahead, behind = (pc.greater, pc.less) if func is max else (pc.less, pc.greater)

        def scalar(bound: object) -> pa.Scalar:
            try:
                return pa.scalar(comparable(bound, sample), type=cursor.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
                raise IncrementalCursorError(
                    resource,
                    name,
                    f"{bound!r} cannot be compared with cursor column '{name}' ({cursor.type})",
                    value=bound,
                ) from exc

        keep = present
        if self.end_value is not None:
            end = scalar(self.end_value)
            past_end = (
                pc.or_(ahead(cursor, end), pc.equal(cursor, end))
                if self.range_end == "open"
                else ahead(cursor, end)
            )
            past_end = pc.fill_null(past_end, False)
            if pc.any(past_end).as_py():
                self.end_out_of_range = True
            keep = pc.and_(keep, pc.invert(past_end))
        start = scalar(self.start_value) if self.start_value is not None else None
        if start is not None:
            before = behind(cursor, start)
            if self.range_start == "open":
                before = pc.or_(before, pc.equal(cursor, start))
            before = pc.fill_null(before, False)
            if pc.any(before).as_py():
                self.start_out_of_range = True
            keep = pc.and_(keep, pc.invert(before))
            on_start = pc.fill_null(pc.and_(keep, pc.equal(cursor, start)), False)
            if self.dedup_key != () and self.start_hashes and pc.any(on_start).as_py():
                keep = pc.and_(keep, pc.invert(self._seen_before(table, on_start)))
        if self.on_cursor_value_missing == "include":
            keep = pc.or_(pc.fill_null(keep, False), pc.invert(present))
        keep = pc.fill_null(keep, False)
        kept = table.filter(keep)
        self._advance(kept.column(name), kept, scalar)
        if not kept.num_rows:
            return None
        return kept.to_pandas() if is_pandas(item) else kept

    def _seen_before(self, table: pa.Table, on_start: pa.Array) -> pa.Array:
        """True for the boundary rows whose hash the previous run stored."""
        import pyarrow as pa
        import pyarrow.compute as pc

        indices = pc.indices_nonzero(on_start).to_pylist()
        rows = table.take(pa.array(indices)).to_pylist()
        seen = [self.hash(row) in self.start_hashes for row in rows]
        mask = [False] * len(table)
        for index, flag in zip(indices, seen, strict=True):
            mask[index] = flag
        return pa.array(mask)

    def _advance(
        self, cursor: pa.ChunkedArray, kept: pa.Table, scalar: Callable[[object], pa.Scalar]
    ) -> None:
        """Move last_value to the newest kept cursor value; remember the rows sitting on it."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not kept.num_rows or not cursor.null_count < len(cursor):
            return
        func = self.last_value_func
        newest = (pc.max(cursor) if func is max else pc.min(cursor)).as_py()
        last = self.last_value
        if last is None or func((newest, scalar(last).as_py())) != scalar(last).as_py():
            self.last_value = newest
            self.rows_at_last = []
        elif scalar(last).as_py() != newest:
            return
        if self.dedup_key != ():
            on_last = pc.fill_null(pc.equal(cursor, pa.scalar(newest, type=cursor.type)), False)
            self.rows_at_last += kept.filter(on_last).to_pylist()


def transform_kind(item: object) -> type[IncrementalTransform]:
    """The filter for ``item``: Arrow for tables, record batches and pandas frames, else rows."""
    if is_arrow(item) or is_pandas(item):
        return ArrowIncremental
    return RowIncremental


def row_digest(value: object) -> str:
    """A short, stable digest of a row (or key values) for boundary deduplication."""
    data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    return base64.b64encode(hashlib.blake2b(data, digest_size=12).digest()).decode()


def comparable(bound: object, value: object) -> object:
    """``bound`` (initial/last/end value) in the type of the row's cursor ``value``: ISO
    strings and datetimes, naive and aware, compare as UTC instants."""
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        if isinstance(bound, str):
            return datetime.date.fromisoformat(bound[:10])
        if isinstance(bound, datetime.datetime):
            return bound.date()
    if isinstance(value, datetime.datetime) and not isinstance(bound, datetime.datetime):
        if isinstance(bound, str):
            return plain_utc(pendulum.parse(bound))  # type: ignore[arg-type]
        if isinstance(bound, datetime.date):
            return datetime.datetime(bound.year, bound.month, bound.day, tzinfo=datetime.timezone.utc)
    aware_mismatch = isinstance(bound, datetime.datetime) and (bound.tzinfo is None) != (
        getattr(value, "tzinfo", None) is None
    )
    if isinstance(value, datetime.datetime) and isinstance(bound, datetime.datetime) and aware_mismatch:
        return plain_utc(bound) if value.tzinfo is not None else plain_utc(bound).replace(tzinfo=None)
    return bound


def _compiled(path: str) -> JSONPath:
    compiled = _PATHS.get(path)
    if compiled is None:
        compiled = _PATHS[path] = parse_jsonpath(path)
    return compiled


_PATHS: dict[str, JSONPath] = {}


def _short(row: object) -> str:
    text = repr(row)
    return text if len(text) <= 200 else text[:200] + "…"
