"""The built documentation site as a reader meets it: opened from disk (file://) and served
over HTTP, in headless Chromium.

`nox -s docs` builds the site, then runs these tests on it (``--run-docs-site``; the site's
folder is ``--docs-site``, site/ by default). Chromium is Debian's (``apt-get install
chromium``), driven by playwright; playwright's own browser download is not used. The
screenshots are kept in the site's _screenshots/ folder, to be looked at.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright
from servers import LOCALHOST, install_on_ci
from site_links import Site

VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
# A page the search for "merge" must find, and one the navigation must offer.
SEARCH_QUERY = "merge"
SEARCH_MUST_FIND = "merge.html"
NAVIGATION_MUST_OFFER = "getting-started.html"
# A screenshot of a page drawn has text in it: antialiased glyphs give it hundreds of
# colours, where a blank or a failed page has a handful.
MIN_COLOURS = 32
# The machine the tests run on may be busy: the browser gets time.
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def site(pytestconfig: pytest.Config) -> Site:
    root = Path(str(pytestconfig.getoption("--docs-site"))).resolve()
    if not (root / "index.html").is_file():
        pytest.fail(f"no built site at {root}: build it first (`mkdocs build --strict`, or `nox -s docs`)")
    return Site(root)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def chromium() -> str:
    """The system's Chromium: installed from Debian on a fresh CI machine, where its absence
    is a failure; elsewhere the tests that need it skip, saying why."""
    found = _chromium()
    if found is None:
        install_on_ci("chromium")
        found = _chromium()
    if found is None:
        reason = "Chromium is not installed (Debian: apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"Chromium is needed on CI: {reason}")
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def served(site: Site) -> Iterator[str]:
    """The site served over HTTP on 127.0.0.1 (as a static web server would), its root's URL."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    server = ThreadingHTTPServer((LOCALHOST, 0), functools.partial(Quiet, directory=str(site.root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOCALHOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["file", "http"])
def root_url(request: pytest.FixtureRequest, site: Site) -> str:
    """The site's root as a reader opens it: from disk, or served."""
    if request.param == "file":
        return site.root.as_uri() + "/"
    return str(request.getfixturevalue("served"))


@dataclass
class _Visit:
    """What a page did while the test had it open: errors, and requests off the site."""

    errors: list[str]
    off_site: list[str]


def _watch(page: Page, root_url: str) -> _Visit:
    visit = _Visit(errors=[], off_site=[])
    page.on("pageerror", lambda error: visit.errors.append(str(error)))
    page.on("requestfailed", lambda request: visit.errors.append(f"{request.url}: {request.failure}"))
    page.on(
        "request",
        lambda request: None if request.url.startswith(root_url) else visit.off_site.append(request.url),
    )
    return visit


def _screenshot(page: Page, site: Site, name: str) -> Path:
    """A screenshot of what ``page`` shows, saved in the site's _screenshots/, checked to be
    the whole viewport and not blank."""
    folder = site.root / "_screenshots"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path))
    with Image.open(path) as image:
        assert image.size == (VIEWPORT["width"], VIEWPORT["height"]), f"{path}: {image.size}"
        colours = image.convert("RGB").getcolors(maxcolors=VIEWPORT["width"] * VIEWPORT["height"])
    assert colours is not None and len(colours) >= MIN_COLOURS, (
        f"{path} looks blank: {len(colours or [])} colours"
    )
    return path


def test_every_link_leads_to_a_page_file(site: Site) -> None:
    """Every link of every page, and every search result's address, names a file of the site
    (and an anchor that page has): no folder a browser reading files would list."""
    assert site.broken_links() == []
    assert site.broken_search_locations() == []
    assert len(site.search_locations()) > len(site.pages())


def test_index_navigation_and_search_in_chromium(browser: Browser, site: Site, root_url: str) -> None:
    """Opened in Chromium, the index shows its navigation, each entry a page file; searching
    for "merge" lists results that open pages of the site; nothing is fetched off the site."""
    scheme = root_url.split(":", 1)[0]
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(TIMEOUT_MS)
    visit = _watch(page, root_url)
    try:
        page.goto(root_url + "index.html")
        navigation = page.locator("nav.md-nav--primary a.md-nav__link[href]")
        navigation.first.wait_for()
        entries = [
            site.file_of(str(href), root_url)
            for href in navigation.evaluate_all("links => links.map(a => a.href)")
        ]
        assert site.root / NAVIGATION_MUST_OFFER in entries
        assert [entry for entry in entries if not entry.is_file()] == []
        _screenshot(page, site, f"{scheme}-index")

        search = page.locator("input.md-search__input")
        search.click()
        search.press_sequentially(SEARCH_QUERY)
        results = page.locator("li.md-search-result__item > a.md-search-result__link")
        results.first.wait_for()
        found = [
            site.file_of(str(href), root_url)
            for href in results.evaluate_all("links => links.map(a => a.href)")
        ]
        assert site.root / SEARCH_MUST_FIND in found
        assert [result for result in found if not result.is_file()] == []
        _screenshot(page, site, f"{scheme}-search-{SEARCH_QUERY}")

        # The first result opens its page, which draws its title.
        results.first.click()
        page.wait_for_load_state()
        assert site.file_of(page.url, root_url) == found[0]
        page.locator("article h1").first.wait_for()
        _screenshot(page, site, f"{scheme}-search-result")
        assert visit.errors == []
        assert visit.off_site == []
    finally:
        page.close()
