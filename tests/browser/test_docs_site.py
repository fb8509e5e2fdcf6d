"""The built docs site as a reader sees it: home, getting started, a how-to and a reference page in
English and Chinese, each with its navigation and language switcher, and no request leaving the host.

Screenshots go to ``out/screenshots/docs-*.png`` to be looked at.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Page, Request

from tests.docs.site_build import build_site

pytestmark = pytest.mark.slow

#: (path under the site, screenshot name)
PAGES = [
    ("", "home"),
    ("getting-started/", "getting-started"),
    ("how-to/compare-runs/", "how-to-compare-runs"),
    ("reference/metrics/", "reference-metrics"),
]
#: the first heading of a page in a language (the permalink's ¶ left off)
HEADINGS = {
    ("en", "home"): "ragmeter",
    ("zh", "home"): "ragmeter",
    ("en", "getting-started"): "Getting started",
    ("zh", "getting-started"): "快速开始",
    ("en", "how-to-compare-runs"): "Compare two runs",
    ("zh", "how-to-compare-runs"): "对比两次运行",
}


def _heading(page: Page) -> str:
    return page.locator("h1").first.inner_text().strip().rstrip("¶").strip()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built once for this module, served on 127.0.0.1 by a thread."""
    dest = tmp_path_factory.mktemp("site")
    build_site(dest)
    handler = functools.partial(_QuietHandler, directory=str(dest))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pages_show_their_nav_and_language_switcher(
    page: Page, site_url: str, shoot: Callable[[Page, str], Path], lang: str
) -> None:
    requested: list[str] = []

    def record(request: Request) -> None:
        requested.append(request.url)

    page.on("request", record)
    prefix = "" if lang == "en" else "zh/"
    for path, name in PAGES:
        response = page.goto(site_url + prefix + path)
        assert response is not None and response.ok, (lang, path)
        page.wait_for_load_state("networkidle")
        assert page.locator("html").get_attribute("lang") == lang
        nav = page.locator("nav.md-nav--primary")
        assert nav.count() == 1
        titles = nav.inner_text()
        for title in ("Getting started", "Reference") if lang == "en" else ("快速开始", "参考"):
            assert title in titles, (lang, path, title)
        # the language switcher: a link to each language's version of this page
        switcher = page.locator(".md-header .md-select a[hreflang]")
        assert sorted(switcher.evaluate_all("els => els.map(e => e.hreflang)")) == ["en", "zh"]
        heading = HEADINGS.get((lang, name))
        if heading is not None:
            assert _heading(page) == heading
        shoot(page, f"docs-{name}-{lang}")
    remote = [url for url in requested if not url.startswith(site_url)]
    assert not remote, f"requests that left the host: {remote}"


def test_the_language_switcher_leads_to_the_chinese_page(page: Page, site_url: str) -> None:
    page.goto(site_url + "getting-started/")
    page.locator(".md-header .md-select a[hreflang='zh']").first.dispatch_event("click")
    page.wait_for_url("**/zh/getting-started/")
    assert _heading(page) == "快速开始"
