"""HTML as light markdown: headers kept (so header chunking works), lists as ``-`` items,
``<pre>`` as fenced code, scripts and styles dropped.

Standard library only: the document worker loads this file by its path, without importing
ragmeter, because CPython's ``html.parser`` takes time quadratic in some inputs (``<a`` or
``</`` repeated) and must run under the worker's CPU limit, never in the server.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_markdown"]

_BLOCK = frozenset(
    {"p", "div", "section", "article", "br", "tr", "table", "ul", "ol", "blockquote", "hr"}
)
_SKIP = frozenset({"script", "style", "head", "noscript", "template", "svg"})
_HEADER_TAG = re.compile(r"^h([1-6])$")


class _HtmlToText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif (header := _HEADER_TAG.match(tag)) is not None:
            self.parts.append("\n\n" + "#" * int(header.group(1)) + " ")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag == "pre":
            self.pre += 1
            self.parts.append("\n\n```\n")
        elif tag in _BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif _HEADER_TAG.match(tag):
            self.parts.append("\n\n")
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.parts.append("\n```\n\n")
        elif tag in _BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self) -> str:
        lines: list[str] = []
        in_code = False
        for line in "".join(self.parts).split("\n"):
            if line.strip() == "```":
                in_code = not in_code
                lines.append("```")
            else:
                lines.append(line.rstrip() if in_code else line.strip())
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def html_to_markdown(html: str) -> str:
    """The text of an HTML page as light markdown."""
    parser = _HtmlToText()
    parser.feed(html)
    parser.close()
    return parser.text()
