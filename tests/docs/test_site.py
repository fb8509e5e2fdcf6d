"""The docs site builds with ``mkdocs build --strict`` and loads nothing from the network.

Every built HTML and CSS file is scanned for a resource fetched from another host: a script,
a stylesheet, an icon or font, an image, an ``@import`` or a ``url(...)`` with ``http(s):`` or
``//``. Plain ``<a href>`` links to other sites are allowed: the reader chooses to follow them.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.docs.site_build import build_site

REMOTE = re.compile(r"^\s*(?:https?:)?//", re.I)
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)""", re.I)
CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*['"]?([^'")\s;]+)""", re.I)
# attributes that make the browser fetch something, by tag
FETCHING = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "video": ("src", "poster"),
    "audio": ("src",),
    "iframe": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "input": ("src",),
}
# <link rel=...> kinds that fetch (stylesheet, icons, fonts, preloads); rel="alternate" or
# "canonical" only name a page
FETCHING_RELS = {
    "stylesheet",
    "icon",
    "shortcut",
    "apple-touch-icon",
    "preload",
    "prefetch",
    "preconnect",
    "dns-prefetch",
    "modulepreload",
    "manifest",
    "mask-icon",
}


class _Resources(HTMLParser):
    """Collects (line, tag, url) for every resource an HTML page makes the browser fetch."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str, str]] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        line = self.getpos()[0]
        if tag == "link" and FETCHING_RELS & set(values.get("rel", "").lower().split()):
            self.found.append((line, "link", values.get("href", "")))
        for name in FETCHING.get(tag, ()):
            for url in values.get(name, "").split(","):
                if url.strip():
                    self.found.append((line, tag, url.strip().split()[0]))
        if "style" in values:
            self.found.extend((line, "style=", url) for url in _css_urls(values["style"]))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.found.extend((self.getpos()[0], "<style>", url) for url in _css_urls(data))


def _css_urls(css: str) -> list[str]:
    return CSS_URL.findall(css) + CSS_IMPORT.findall(css)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("site")
    build_site(dest)
    return dest


def test_the_site_builds_in_english_and_chinese(site: Path) -> None:
    for page in ("index.html", "getting-started/index.html", "install/index.html"):
        english = (site / page).read_text(encoding="utf-8")
        chinese = (site / "zh" / page).read_text(encoding="utf-8")
        assert 'lang="en"' in english, page
        assert 'lang="zh"' in chinese, page
    home = (site / "zh" / "index.html").read_text(encoding="utf-8")
    assert "快速开始" in home  # the nav's titles are translated


def test_no_page_or_stylesheet_loads_anything_from_the_network(site: Path) -> None:
    html_files = sorted(site.rglob("*.html"))
    css_files = sorted(site.rglob("*.css"))
    assert len(html_files) >= 10 and css_files
    remote: list[str] = []
    for path in html_files:
        parser = _Resources()
        parser.feed(path.read_text(encoding="utf-8"))
        remote += [
            f"{path.relative_to(site)}:{line} <{tag}> {url}"
            for line, tag, url in parser.found
            if REMOTE.match(url)
        ]
    for path in css_files:
        text = path.read_text(encoding="utf-8")
        remote += [
            f"{path.relative_to(site)} url({url})" for url in _css_urls(text) if REMOTE.match(url)
        ]
    assert not remote, "resources loaded from the network:\n" + "\n".join(remote)


def test_the_scan_finds_a_remote_font_a_script_and_an_import() -> None:
    parser = _Resources()
    parser.feed(
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">\n'
        '<script src="//cdn.example.com/a.js"></script>\n'
        '<a href="https://github.com/">a link is fine</a>\n'
        "<style>@import 'https://example.com/x.css'; b { background: url(http://e.com/i.png) }</style>"
    )
    urls = [url for _, _, url in parser.found if REMOTE.match(url)]
    assert urls == [
        "https://fonts.googleapis.com/css?family=Roboto",
        "//cdn.example.com/a.js",
        "http://e.com/i.png",
        "https://example.com/x.css",
    ]
