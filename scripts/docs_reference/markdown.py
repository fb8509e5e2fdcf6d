"""Markdown for the reference pages: table cells, inline code, docstrings as prose."""

from __future__ import annotations

import inspect
import re

GENERATED = "<!-- written by scripts/docs_reference from the code: edit the code, not this -->"

# -- Markdown helpers ----------------------------------------------------------------------


def cell(text: object) -> str:
    """``text`` fit for one cell of a Markdown table: one line, no bar, no raw HTML."""
    one_line = " ".join(str(text).split())
    return one_line.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def code(text: object) -> str:
    """``text`` as inline code (a backtick inside widens the fence; a table does not split
    a cell at a bar inside code)."""
    value = " ".join(str(text).split())
    fence = "``" if "`" in value else "`"
    return f"{fence}{value}{fence}" if value else ""


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def prose(text: str) -> str:
    """A docstring as Markdown: reST's ``code`` is Markdown's code too and its indented
    literal blocks are Markdown's code blocks, but its ``::`` goes (``text::`` -> ``text:``),
    and ``<tag`` or a leading ``#`` would be read as HTML or a heading."""
    out = []
    for line in inspect.cleandoc(text).splitlines():
        if not line.startswith("    "):  # an indented line is code, shown as it is
            line = _TAG_START.sub("&lt;", line)
        if line.strip() == "::":
            continue
        if line.endswith("::"):
            line = line[:-1]
        out.append(("\\" + line) if line.lstrip().startswith("#") else line)
    return "\n".join(out)


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)
