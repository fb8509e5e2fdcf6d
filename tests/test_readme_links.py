"""Every link of the README resolves: a relative link names a file or folder of the checkout, and
its anchor (``#...``) a heading of that Markdown file (GitHub's slugs); an anchor alone names a
heading of the README itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.readme_blocks import README, ROOT

_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {_slug(m[1]) for m in re.finditer(r"^#{1,6} (.*)$", text, re.M)}


def _links() -> list[str]:
    return [m[1] for m in _LINK.finditer(README.read_text(encoding="utf-8"))]


def test_the_readme_links_to_its_docs() -> None:
    links = _links()
    assert len(links) >= 20
    assert any(link.startswith("docs/how-to/") for link in links)
    assert any(link.startswith("docs/concepts/") for link in links)


@pytest.mark.parametrize("link", [x for x in _links() if not x.startswith(("http:", "https:"))])
def test_a_readme_link_resolves(link: str) -> None:
    path, _, anchor = link.partition("#")
    target = README if not path else (ROOT / path)
    assert target.exists(), f"README.md links to {path}, which does not exist"
    if anchor:
        assert target.suffix == ".md", f"README.md links to #{anchor} of {path}, not a page"
        assert anchor in _anchors(target), f"README.md links to {link}: no such heading"


def test_a_broken_link_is_caught() -> None:
    assert "no-such-heading" not in _anchors(README)
    assert not (ROOT / "docs" / "no-such-page.md").exists()
