"""How the commands print: JSON for scripts, text that fits a terminal for people.

Text output keeps its lines within the terminal's width: lists are wrapped with their
continuation lines indented, tables are column-aligned with one row a line.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Sequence

import orjson

# Where no terminal tells its width (output to a pipe or a file).
_DEFAULT_WIDTH = 100


def width() -> int:
    return shutil.get_terminal_size((_DEFAULT_WIDTH, 24)).columns


def to_json(value: object) -> str:
    """JSON as dlt prints state: indented, dates and timestamps as ISO-8601, anything else
    the encoder does not know as its text."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()


def print_json(value: object) -> None:
    print(to_json(value))


def listing(label: str, items: Sequence[str], indent: str = "", empty: str = "(none)") -> str:
    """``label: a, b, c`` wrapped to the terminal, continuation lines indented."""
    text = f"{indent}{label}: {', '.join(items) if items else empty}"
    return "\n".join(
        textwrap.wrap(
            text,
            width=width(),
            subsequent_indent=indent + "    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        or [text]
    )


def table(header: Sequence[str], rows: Sequence[Sequence[object]], indent: str = "  ") -> list[str]:
    """Column-aligned lines: a header and one line per row; numbers align right."""
    cells = [[str(h) for h in header]] + [["" if v is None else str(v) for v in row] for row in rows]
    numeric = [
        all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in rows) and bool(rows)
        for i in range(len(header))
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    lines = []
    for line in cells:
        parts = [
            cell.rjust(widths[i]) if numeric[i] else cell.ljust(widths[i]) for i, cell in enumerate(line)
        ]
        lines.append((indent + "  ".join(parts)).rstrip())
    return lines


def confirm(question: str, to_stderr: bool = False) -> bool:
    """Ask on the terminal; anything but y/yes (an empty answer, no input) is no. Asked on
    stderr when stdout carries JSON for a script."""
    stream = sys.stderr if to_stderr else sys.stdout
    print(question, end="", file=stream, flush=True)
    answer = sys.stdin.readline()
    if not sys.stdin.isatty():
        print(file=stream)  # no terminal echoed the answer's newline: the next line starts anew
    return answer.strip().lower() in ("y", "yes")


def paragraph(text: str) -> str:
    """``text`` wrapped to the terminal (a long path stays whole on a line of its own)."""
    return "\n".join(
        textwrap.wrap(text, width=width(), break_long_words=False, break_on_hyphens=False) or [text]
    )


def one_line(message: str) -> str:
    """An error message on one line, as ``error: ...`` prints it."""
    return " ".join(line.strip() for line in message.splitlines() if line.strip())
