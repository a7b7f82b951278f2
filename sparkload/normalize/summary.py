"""The profile's first pass over a flat table taken from its rows in Arrow, where this
process holds them anyway (normalize/flat_json.py writes them): counts and bounds per
column computed by Arrow's kernels, with no query for the engine to plan over the width.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.compute as pc

# A staged string that may be of another kind than text begins with a tag (NUL), a digit
# (an ISO timestamp) or ``[`` / ``{`` (JSON text); any other is text.
MAYBE_TYPED = r"^[\x00\[{0-9]"


@dataclasses.dataclass
class ColumnSummary:
    values: int = 0  # values that are not NULL
    maybe_typed: int = 0  # of a string column: values that begin as a typed value could
    # Of an int column: its smallest and largest value (and of a row id column, observed
    # where the engine writes the rows: its smallest and largest id).
    low: int | str | None = None
    high: int | str | None = None


@dataclasses.dataclass
class Summary:
    """Rows and per column summaries of a table, added up a part at a time."""

    rows: int = 0
    columns: dict[str, ColumnSummary] = dataclasses.field(default_factory=dict)

    def add(self, part: pa.Table) -> None:
        self.rows += part.num_rows
        for name, array in zip(part.column_names, part.columns, strict=True):
            column = self.columns.setdefault(name, ColumnSummary())
            column.values += len(array) - array.null_count
            if pa.types.is_string(array.type):
                column.maybe_typed += pc.sum(pc.match_substring_regex(array, MAYBE_TYPED)).as_py() or 0
            elif pa.types.is_integer(array.type) and array.null_count < len(array):
                bounds = pc.min_max(array).as_py()
                low, high = bounds["min"], bounds["max"]
                column.low = low if column.low is None else min(column.low, low)
                column.high = high if column.high is None else max(column.high, high)
