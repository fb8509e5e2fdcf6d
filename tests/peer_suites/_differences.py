"""docs/peer-differences.md read as data: its one table of deliberate differences from the
peers, the rows with a case id by that id, so a test expects ragmeter's documented value for a
listed case and the peer's for any other."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "peer-differences.md"
HEADER = ("case id", "peer value", "ours", "why")
_CELL_BORDER = re.compile(r"(?<!\\)\|")  # a pipe, not an escaped one inside a cell
_CASE_ID = re.compile(r"^`([^`]+)`$")


@dataclass(frozen=True)
class Difference:
    """One listed difference: the case, the peer's value as written, ragmeter's value (None:
    no score) and why."""

    case_id: str
    peer: str
    ours: float | None
    why: str


class TableError(AssertionError):
    """docs/peer-differences.md is not one well-formed table (the message names the line)."""


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in _CELL_BORDER.split(line.strip())[1:-1]]


def _value(text: str, where: str) -> float | None:
    if text == "null":
        return None
    try:
        return float(text)
    except ValueError:
        raise TableError(f"{where}: 'ours' must be a number or null, got {text!r}") from None


def _tables(lines: list[str]) -> list[list[tuple[int, str]]]:
    """The blocks of consecutive table lines, each line with its number."""
    tables: list[list[tuple[int, str]]] = []
    previous = False
    for number, line in enumerate(lines, start=1):
        is_row = line.lstrip().startswith("|")
        if is_row and not previous:
            tables.append([])
        if is_row:
            tables[-1].append((number, line))
        previous = is_row
    return tables


def read_differences(path: Path = DOC) -> dict[str, Difference]:
    """The listed differences that name a case, by case id. TableError unless the file holds
    exactly one table, headed ``case id | peer value | ours | why``, with each case listed
    once and every ``ours`` a number or null."""
    tables = _tables(path.read_text(encoding="utf-8").splitlines())
    if len(tables) != 1:
        raise TableError(f"{path.name}: expected one table of differences, found {len(tables)}")
    (first, header), *rows = tables[0]
    if tuple(_cells(header)) != HEADER:
        raise TableError(f"{path.name} line {first}: the header must be {' | '.join(HEADER)}")
    found: dict[str, Difference] = {}
    for number, line in rows[1:]:  # rows[0] is the --- line
        where = f"{path.name} line {number}"
        cells = _cells(line)
        if len(cells) != len(HEADER):
            raise TableError(f"{where}: expected {len(HEADER)} cells, found {len(cells)}")
        named = _CASE_ID.match(cells[0])
        if named is None:
            continue  # a difference no peer case shows
        case_id = named.group(1)
        if case_id in found:
            raise TableError(f"{where}: case {case_id!r} is listed twice")
        found[case_id] = Difference(case_id, cells[1], _value(cells[2], where), cells[3])
    return found
