"""Reading back the HTML tables a notebook shows (sparkload's ``_repr_html_``, pandas'
DataFrames): the text of every cell, by table, parsed as a browser would, so a value that
was not escaped shows up as a tag instead of as text."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser


@dataclasses.dataclass
class HtmlTable:
    caption: str
    rows: list[list[str]]  # every row, header rows included; a <br> in a cell reads as "\n"

    def column(self, header: str) -> list[str]:
        """The cells under ``header`` (the first row's), below the header row."""
        index = self.rows[0].index(header)
        return [row[index] for row in self.rows[1:]]

    def named(self) -> dict[str, str]:
        """A two-column table of names and values as a dict."""
        return {name: value for name, value in self.rows}


@dataclasses.dataclass
class HtmlPage:
    tables: list[HtmlTable]
    tags: set[str]  # every element's tag name
    # The cells and captions whose own style attribute does not align them left: what a
    # notebook's stylesheet (JupyterLab's right-aligns cells) then aligns its own way.
    not_left_aligned: list[str] = dataclasses.field(default_factory=list)

    def table(self, caption: str) -> HtmlTable:
        (found,) = [t for t in self.tables if t.caption == caption]
        return found

    def captions(self) -> list[str]:
        return [t.caption for t in self.tables]


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = HtmlPage([], set())
        self._cell: list[str] | None = None
        self._in_caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.tags.add(tag)
        if tag in ("td", "th", "caption") and "text-align: left" not in (dict(attrs).get("style") or ""):
            self.page.not_left_aligned.append(tag)
        if tag == "table":
            self.page.tables.append(HtmlTable("", []))
        elif tag == "tr":
            self.page.tables[-1].rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")
        elif tag == "caption":
            self._in_caption = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.page.tables[-1].rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "caption":
            self._in_caption = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._in_caption:
            self.page.tables[-1].caption += data


def read_html(text: str) -> HtmlPage:
    reader = _Reader()
    reader.feed(text)
    reader.close()
    return reader.page
