"""The code blocks of the README and of every docs page: those marked ``<!-- offline -->`` run as
written (``tests/test_readme.py``, ``tests/test_docs_blocks.py``), the others at least parse as
their language; and the files blocks write with heredocs (the prompt files other tests use)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DOCS",
    "README",
    "ROOT",
    "Block",
    "all_blocks",
    "docs_pages",
    "heredoc",
    "offline_blocks",
]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: the page whose walkthrough writes the prompt files other tests use
WALKTHROUGH = DOCS / "how-to" / "evaluate-rag-app.md"
_OFFLINE = re.compile(
    r"^<!-- offline -->\n```(?P<lang>bash|python)\n(?P<code>.*?)^```$", re.M | re.S
)
#: every fenced block at the start of a line (indented blocks, in lists, too)
_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
    re.M | re.S,
)


@dataclass(frozen=True)
class Block:
    line: int
    lang: str
    code: str
    path: Path = README

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}-{self.lang}"


def _read(path: Path, text: str | None) -> str:
    return path.read_text(encoding="utf-8") if text is None else text


def offline_blocks(text: str | None = None, path: Path = README) -> list[Block]:
    """The blocks marked ``<!-- offline -->``, in order, with the line their code starts on."""
    text = _read(path, text)
    return [
        Block(text.count("\n", 0, m.start("code")) + 1, m["lang"], m["code"], path)
        for m in _OFFLINE.finditer(text)
    ]


def all_blocks(path: Path, text: str | None = None) -> list[Block]:
    """Every fenced block of a page, in order, its code with the fence's indent removed."""
    text = _read(path, text)
    blocks = []
    for m in _FENCE.finditer(text):
        indent = len(m["indent"])
        code = "".join(line[indent:] for line in m["code"].splitlines(keepends=True))
        blocks.append(Block(text.count("\n", 0, m.start("code")) + 1, m["lang"], code, path))
    return blocks


def docs_pages() -> list[Path]:
    """Every Markdown page of the docs site, English and Chinese, sorted."""
    return sorted(DOCS.rglob("*.md"))


def heredoc(name: str, text: str | None = None, path: Path = README) -> str:
    """The text a block writes to ``name`` with ``cat > name <<'TAG' ... TAG``."""
    text = _read(path, text)
    match = re.search(rf"cat > {re.escape(name)} <<'(\w+)'\n(.*?)\n\1\n", text, re.S)
    assert match is not None, f"{path.name} writes no {name}"
    return match.group(2) + "\n"
