"""Rows as an xlsx workbook (openpyxl, write-only: one row in memory at a time), for the
downloads of DB-GPT's evaluation page."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell

__all__ = ["XLSX_TYPE", "cell_value", "content_disposition", "xlsx_bytes"]

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
#: a cell holds at most this many characters (Excel's own limit)
MAX_CELL_CHARS = 32_767
#: characters XML 1.0 cannot carry; openpyxl refuses them
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def cell_value(value: Any) -> Any:
    """A value a cell can hold: numbers and booleans as they are, anything else as text
    (lists and objects as JSON), cut to Excel's limit and without XML-illegal characters.
    Text that starts like a formula is kept as text (a leading quote), never evaluated."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = _ILLEGAL.sub("", text)[:MAX_CELL_CHARS]
    if text[:1] in ("=", "+", "-", "@"):
        text = "'" + text[: MAX_CELL_CHARS - 1]
    return text


def xlsx_bytes(title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    """One sheet named ``title``: ``header`` in bold, then ``rows``."""
    book = Workbook(write_only=True)
    sheet = book.create_sheet(title=re.sub(r"[\[\]:*?/\\]", "_", title)[:31] or "Sheet")
    bold = []
    for name in header:
        cell = WriteOnlyCell(sheet, value=cell_value(name))
        cell.font = cell.font.copy(bold=True)
        bold.append(cell)
    sheet.append(bold)
    for row in rows:
        sheet.append([cell_value(v) for v in row])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def content_disposition(filename: str) -> str:
    """``attachment`` naming ``filename``: percent-encoded in ``filename`` (DB-GPT's page
    decodes it with decodeURIComponent) and in ``filename*`` (RFC 6266) for everyone else."""
    quoted = quote(filename, safe="")
    return f"attachment; filename=\"{quoted}\"; filename*=UTF-8''{quoted}"
