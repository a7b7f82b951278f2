"""The links of a built documentation site, read from its HTML files: which of them do not
lead to a page file (or to an anchor on it) when the site is opened from disk.

A browser reading files has no server to turn ``merge/`` into ``merge/index.html``: it lists
the folder. So a link that works from disk names a file, relative to the page it is on. The
404 page is the exception: a server shows it at any address, so its links start at the
site's root (``/merge.html``) and it is never read from disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# What a page links to, and in which attribute: pages, stylesheets, scripts, images.
_LINK_ATTRIBUTES = {"a": "href", "link": "href", "script": "src", "img": "src"}
NOT_FOUND_PAGE = "404.html"


@dataclass
class _Page:
    ids: set[str] = field(default_factory=set)
    # (tag, address) in the order the page has them.
    links: list[tuple[str, str]] = field(default_factory=list)


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = _Page()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("id", "name"):
            if values.get(name):
                self.page.ids.add(str(values[name]))
        address = values.get(_LINK_ATTRIBUTES.get(tag, ""))
        if address is not None:
            self.page.links.append((tag, address))


class Site:
    """The pages of the site at ``root``, each parsed once."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._pages: dict[Path, _Page] = {}

    def pages(self) -> list[Path]:
        return sorted(self.root.rglob("*.html"))

    def page(self, path: Path) -> _Page:
        if path not in self._pages:
            parser = _PageParser()
            parser.feed(path.read_text(encoding="utf-8"))
            self._pages[path] = parser.page
        return self._pages[path]

    def problem(self, page: Path, address: str, tag: str = "a") -> str | None:
        """Why ``address``, found on ``page``, does not lead to a file of the site (and to
        the anchor it names on a page), or None when it does. Addresses off the site
        (``https:``, ``mailto:``) are not the site's to check."""
        parts = urlsplit(address)
        if parts.scheme or parts.netloc:
            return None
        if not parts.path:
            target = page
        elif parts.path.startswith("/"):
            if page.name != NOT_FOUND_PAGE or page.parent != self.root:
                return "starts at the root of a server, which a site opened from disk has not"
            target = self.root / unquote(parts.path.lstrip("/"))
        else:
            target = page.parent / unquote(parts.path)
        target = target.resolve()
        if self.root != target and self.root not in target.parents:
            return f"leads out of the site, to {target}"
        if parts.path.endswith("/") or target.is_dir():
            return "names a folder, which a browser reading files lists instead of showing a page"
        if not target.is_file():
            return f"names {target.relative_to(self.root)}, which the site has not"
        anchor = unquote(parts.fragment)
        if anchor and tag == "a" and target.suffix == ".html" and anchor not in self.page(target).ids:
            return f"names the anchor #{parts.fragment}, which {target.relative_to(self.root)} has not"
        return None

    def broken_links(self) -> list[str]:
        """Every link of every page that :meth:`problem` finds fault with, as
        ``page: address (why)``."""
        broken = []
        for path in self.pages():
            for tag, address in self.page(path).links:
                why = self.problem(path, address, tag)
                if why is not None:
                    broken.append(f"{path.relative_to(self.root)}: {address} ({why})")
        return broken

    def search_locations(self) -> list[str]:
        """The addresses search results link to, from the search index the build wrote."""
        index = json.loads((self.root / "search" / "search_index.json").read_text(encoding="utf-8"))
        return [str(doc["location"]) for doc in index["docs"]]

    def broken_search_locations(self) -> list[str]:
        """The search index's addresses (relative to the site's root) that lead nowhere."""
        index_page = self.root / "index.html"
        broken = []
        for location in self.search_locations():
            why = self.problem(index_page, location)
            if why is not None:
                broken.append(f"search result {location} ({why})")
        return broken

    def file_of(self, url: str, base: str) -> Path:
        """The site's file a browser's absolute ``url`` shows, ``base`` being the site's root
        address (``file:///…/site/`` or ``http://127.0.0.1:…/``)."""
        if not url.startswith(base):
            raise AssertionError(f"{url} is not under the site's root {base}")
        return (self.root / unquote(urlsplit(url[len(base) :]).path)).resolve()
