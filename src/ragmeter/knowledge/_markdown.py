"""Markdown sections: the text under each header, with the path of headers above it.

Headers inside fenced code blocks are text, not headers. YAML front matter is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Section", "markdown_sections"]

#: no pattern here may backtrack over a run of spaces: one line of 40 KB of spaces took
#: seconds per pattern (quadratic), with the GIL held; titles are trimmed in Python instead
_HEADER = re.compile(r"^ {0,3}(#{1,6})(?:[ \t](.*))?$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*(?:\n|\Z)", re.DOTALL)


def _title(rest: str | None) -> str:
    """A header's title: the text after ``#``s, without a closing run of ``#`` that follows
    a space or tab (CommonMark), trimmed."""
    title = (rest or "").strip(" \t")
    bare = title.rstrip("#")
    if bare != title and bare[-1:] in (" ", "\t"):
        title = bare
    return title.strip()


@dataclass(frozen=True, slots=True)
class Section:
    """Headers from the top level down to this section, and the section's own text."""

    path: tuple[str, ...]
    text: str


class _Builder:
    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.path: tuple[str, ...] = ()
        self.levels: list[int] = []
        self.paragraphs: list[str] = []
        self.lines: list[str] = []

    def end_paragraph(self) -> None:
        if self.lines:
            self.paragraphs.append("\n".join(self.lines))
            self.lines = []

    def end_section(self) -> None:
        self.end_paragraph()
        if self.paragraphs:
            self.sections.append(Section(self.path, "\n\n".join(self.paragraphs)))
            self.paragraphs = []

    def header(self, level: int, title: str) -> None:
        self.end_section()
        keep = 0
        while keep < len(self.levels) and self.levels[keep] < level:
            keep += 1
        self.levels = [*self.levels[:keep], level]
        self.path = (*self.path[:keep], title)


def markdown_sections(text: str) -> list[Section]:
    """Split markdown into sections at ATX headers (``#`` to ``######``)."""
    text = _FRONT_MATTER.sub("", text.replace("\r\n", "\n"), count=1)
    builder = _Builder()
    fence: str | None = None
    for raw in text.split("\n"):
        line = raw.rstrip()
        if fence is not None:  # inside a code block: keep lines as they are, blank ones too
            builder.lines.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            builder.lines.append(line.strip())
            continue
        header = _HEADER.match(line)
        if header:
            builder.header(len(header.group(1)), _title(header.group(2)))
        elif line.strip():
            builder.lines.append(line.strip())
        else:
            builder.end_paragraph()
    builder.end_section()
    return builder.sections
