"""The README's code blocks: those marked ``<!-- offline -->`` (run by ``tests/test_readme.py``)
and the files its blocks write with heredocs (the prompt files other tests use)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["README", "Block", "heredoc", "offline_blocks"]

README = Path(__file__).resolve().parents[1] / "README.md"
_OFFLINE = re.compile(
    r"^<!-- offline -->\n```(?P<lang>bash|python)\n(?P<code>.*?)^```$", re.M | re.S
)


@dataclass(frozen=True)
class Block:
    line: int
    lang: str
    code: str

    def __str__(self) -> str:
        return f"README.md:{self.line}-{self.lang}"


def offline_blocks(text: str | None = None) -> list[Block]:
    """The blocks marked ``<!-- offline -->``, in order, with the line their code starts on."""
    text = README.read_text(encoding="utf-8") if text is None else text
    return [
        Block(text.count("\n", 0, m.start("code")) + 1, m["lang"], m["code"])
        for m in _OFFLINE.finditer(text)
    ]


def heredoc(name: str, text: str | None = None) -> str:
    """The text a README block writes to ``name`` with ``cat > name <<'TAG' ... TAG``."""
    text = README.read_text(encoding="utf-8") if text is None else text
    match = re.search(rf"cat > {re.escape(name)} <<'(\w+)'\n(.*?)\n\1\n", text, re.S)
    assert match is not None, f"the README writes no {name}"
    return match.group(2) + "\n"
