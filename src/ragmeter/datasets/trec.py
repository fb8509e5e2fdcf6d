"""TREC files as trec_eval reads them: relevance judgements (qrels, ``QID ITER DOCID REL``)
and runs (``QID Q0 DOCID RANK SCORE RUNID``), plain or gzip-compressed; and the same data
given as pytrec_eval's dicts.

Fields are separated by whitespace (ASCII, as trec_eval's); a line whose first character is
``#`` is a comment; blank lines are skipped. ``ITER``, ``Q0`` and ``RANK`` are read and
ignored (trec_eval ranks by score), and so is any field after ``RUNID``. The run's id is its
last line's ``RUNID``, as trec_eval keeps it. A line with too few fields, a grade that is not
an integer, a score that is not a number, a document given twice for one query, or text
that is not UTF-8 is a ``DatasetError`` naming the file, the line and the field, raised
before any work.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from ragmeter._grades import MAX_GRADE, whole_grade
from ragmeter.datasets.loader import DatasetLimits
from ragmeter.errors import DatasetError, LimitError, clip

__all__ = [
    "QRELS_FIELDS",
    "RUN_FIELDS",
    "Qrels",
    "TrecRun",
    "qrels_from_mapping",
    "read_qrels",
    "read_run",
    "run_from_mapping",
]

QRELS_FIELDS = ("QID", "ITER", "DOCID", "REL")
RUN_FIELDS = ("QID", "Q0", "DOCID", "RANK", "SCORE", "RUNID")

#: query id -> document id -> relevance grade (every grade as given: 0 and negatives too)
Qrels: TypeAlias = dict[str, dict[str, int]]

_GZIP_MAGIC = b"\x1f\x8b"
#: a grade: a whole number (of up to 18 digits: read at once, then checked against MAX_GRADE)
_INTEGER = re.compile(rb"[+-]?[0-9]{1,18}")
_GRADES = f"grade {{}} is outside {-MAX_GRADE:,} to {MAX_GRADE:,}, the grades ragmeter keeps"


@dataclass(frozen=True, slots=True)
class TrecRun:
    """A run: query id -> document id -> score, and the run's id (``RUNID``)."""

    scores: dict[str, dict[str, float]]
    runid: str


def read_qrels(
    path: str | os.PathLike[str], *, name: str | None = None, limits: DatasetLimits | None = None
) -> Qrels:
    """The judgements of a qrels file (``QID ITER DOCID REL``, plain or gzip); errors name
    ``name`` (default: the path). ``limits.max_bytes`` caps the text read (decompressed)."""
    source = name or str(path)
    qrels: Qrels = {}
    for number, fields in _lines(Path(path), source, limits):
        if len(fields) != len(QRELS_FIELDS):
            raise _field_count(fields, QRELS_FIELDS, "a qrels", source, number)
        qid, docid = _ids(fields, source, number)
        if _INTEGER.fullmatch(fields[3]) is None:
            raise DatasetError(
                f"expected an integer relevance grade, got {_quote(fields[3])}",
                source=source,
                line=number,
                field="REL",
            )
        grade = int(fields[3])
        if not -MAX_GRADE <= grade <= MAX_GRADE:
            raise DatasetError(_GRADES.format(grade), source=source, line=number, field="REL")
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            raise _twice(docid, qid, source, number)
        judged[docid] = grade
    if not qrels:
        raise DatasetError("holds no judgements (QID ITER DOCID REL lines)", source=source)
    return qrels


def read_run(
    path: str | os.PathLike[str], *, name: str | None = None, limits: DatasetLimits | None = None
) -> TrecRun:
    """The results of a run file (``QID Q0 DOCID RANK SCORE RUNID``, plain or gzip); errors
    name ``name`` (default: the path). ``limits.max_bytes`` caps the text read (decompressed)."""
    source = name or str(path)
    scores: dict[str, dict[str, float]] = {}
    last: tuple[bytes, int] = (b"", 0)
    for number, fields in _lines(Path(path), source, limits):
        if len(fields) < len(RUN_FIELDS):
            raise _field_count(fields, RUN_FIELDS, "a run", source, number)
        try:  # the usual line in one step; a failure is then named field by field
            qid, docid, score = fields[0].decode(), fields[2].decode(), float(fields[4])
        except (UnicodeDecodeError, ValueError):
            qid, docid = _ids(fields, source, number)
            score = _score(fields[4], source, number)
        if score != score or b"_" in fields[4]:  # NaN (unequal to itself), or 1_000
            _score(fields[4], source, number)
        ranked = scores.setdefault(qid, {})
        if docid in ranked:
            raise _twice(docid, qid, source, number)
        ranked[docid] = score
        last = (fields[5], number)
    if not scores:
        raise DatasetError("holds no results (QID Q0 DOCID RANK SCORE RUNID lines)", source=source)
    return TrecRun(scores, _text(last[0], "RUNID", source, last[1]))


def _score(field: bytes, source: str, line: int) -> float:
    """A score as ``atof`` reads a decimal number; NaN and ``1_0`` refused (``float`` reads
    no hexadecimal)."""
    try:
        score = float(field)
    except ValueError:
        score = math.nan
    if score != score or b"_" in field:  # NaN is not equal to itself
        raise DatasetError(
            f"expected a number, got {_quote(field)}", source=source, line=line, field="SCORE"
        )
    return score


def _open(path: Path, source: str) -> io.BufferedIOBase:
    """The file's bytes, decompressed when it starts as gzip does (whatever its name)."""
    if not path.is_file():
        raise DatasetError(f"{source}: no such file")
    handle = path.open("rb")
    if handle.read(2) == _GZIP_MAGIC:
        handle.close()
        return gzip.open(path, "rb")
    handle.seek(0)
    return handle


def _lines(
    path: Path, source: str, limits: DatasetLimits | None
) -> Iterator[tuple[int, list[bytes]]]:
    """The fields of each line that is not blank or a comment, with its line number."""
    cap = None if limits is None else limits.max_bytes
    read = 0
    with _open(path, source) as handle:
        number = 0
        try:
            while True:
                # never more than the cap in memory, however long a line (a gzip bomb)
                raw = handle.readline(-1 if cap is None else cap - read + 1)
                if not raw:
                    break
                number += 1
                read += len(raw)
                if cap is not None and read > cap:
                    raise _too_large(source, cap, limits)
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a byte order mark
                    raw = raw[3:]
                if raw.startswith(b"#"):
                    continue
                fields = raw.split()
                if fields:
                    yield number, fields
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:  # damaged or cut gzip
            raise DatasetError(
                f"cannot read it after line {number}: {exc}", source=source
            ) from None


def _too_large(source: str, cap: int, limits: DatasetLimits | None) -> LimitError:
    setting = (limits.setting("max_upload_mb") if limits is not None else "") or "max_bytes"
    return LimitError(
        f"{source} holds more than {cap / 1_000_000:g} MB of text (decompressed)",
        setting=setting,
        status=413,
    )


def _ids(fields: list[bytes], source: str, line: int) -> tuple[str, str]:
    """The line's query and document ids (fields 1 and 3 of both formats)."""
    try:
        return fields[0].decode(), fields[2].decode()
    except UnicodeDecodeError:
        return _text(fields[0], "QID", source, line), _text(fields[2], "DOCID", source, line)


def _text(field: bytes, name: str, source: str, line: int) -> str:
    try:
        return field.decode()
    except UnicodeDecodeError:
        raise DatasetError(
            "is not UTF-8 text; save the file as UTF-8", source=source, line=line, field=name
        ) from None


def _quote(field: bytes) -> str:
    return repr(clip(field.decode("utf-8", "replace")))


def _field_count(
    fields: list[bytes], names: tuple[str, ...], kind: str, source: str, line: int
) -> DatasetError:
    layout = " ".join(names)
    if len(fields) < len(names):
        return DatasetError(
            f"missing: the line has {len(fields)} field(s); {kind} line is {layout}",
            source=source,
            line=line,
            field=names[len(fields)],
        )
    extra = len(fields) - len(names)
    return DatasetError(
        f"is followed by {extra} more field(s) ({_quote(fields[len(names)])}); {kind} line "
        f"is {layout}",
        source=source,
        line=line,
        field=names[-1],
    )


def _twice(docid: str, qid: str, source: str, line: int) -> DatasetError:
    return DatasetError(
        f"{clip(docid)!r} is given twice for query {clip(qid)!r}",
        source=source,
        line=line,
        field="DOCID",
    )


# -- pytrec_eval's dicts -------------------------------------------------------------------


def qrels_from_mapping(qrels: Any, name: str = "qrels") -> Qrels:
    """Judgements given as ``{qid: {docid: grade}}`` (pytrec_eval's shape), checked: ids are
    strings and grades integers."""
    checked: Qrels = {}
    for qid, judged in _queries(qrels, name):
        grades: dict[str, int] = {}
        for docid, grade in _documents(judged, qid, name):
            whole = whole_grade(grade)
            if whole is None and whole_grade(_clamped(grade)) is not None:
                raise DatasetError(
                    f"query {clip(qid)!r} document {clip(docid)!r}: {_GRADES.format(grade)}",
                    source=name,
                )
            if whole is None:
                raise _bad_value(name, qid, docid, "an integer relevance grade", grade)
            grades[docid] = whole
        checked[qid] = grades
    return checked


def _clamped(grade: Any) -> Any:
    """A whole number pulled within the grade limit (to tell "out of range" from "not a
    whole number"); anything else as it is."""
    try:
        return max(-MAX_GRADE, min(MAX_GRADE, grade)) if float(grade).is_integer() else grade
    except (TypeError, ValueError, OverflowError):
        return grade


def run_from_mapping(run: Any, name: str = "run", runid: str = "run") -> TrecRun:
    """Results given as ``{qid: {docid: score}}`` (pytrec_eval's shape), checked: ids are
    strings and scores numbers (not NaN)."""
    scores: dict[str, dict[str, float]] = {}
    for qid, ranked in _queries(run, name):
        values: dict[str, float] = {}
        for docid, score in _documents(ranked, qid, name):
            if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
                raise _bad_value(name, qid, docid, "a number (the score)", score)
            values[docid] = float(score)
        scores[qid] = values
    if not scores:
        raise DatasetError("holds no queries", source=name)
    return TrecRun(scores, runid)


def _queries(value: Any, name: str) -> Iterator[tuple[str, Any]]:
    if not isinstance(value, Mapping):
        raise DatasetError(
            f"expected a path or a dict {{qid: {{docid: value}}}}, got {type(value).__name__}",
            source=name,
        )
    for qid, inner in value.items():
        if not isinstance(qid, str):
            raise DatasetError(
                f"query ids must be strings, got {type(qid).__name__} {clip(repr(qid))}",
                source=name,
            )
        yield qid, inner


def _documents(value: Any, qid: str, name: str) -> Iterator[tuple[str, Any]]:
    if not isinstance(value, Mapping):
        raise DatasetError(
            f"query {clip(qid)!r}: expected a dict {{docid: value}}, got {type(value).__name__}",
            source=name,
        )
    for docid, item in value.items():
        if not isinstance(docid, str):
            raise DatasetError(
                f"query {clip(qid)!r}: document ids must be strings, got "
                f"{type(docid).__name__} {clip(repr(docid))}",
                source=name,
            )
        yield docid, item


def _bad_value(name: str, qid: str, docid: str, expected: str, value: Any) -> DatasetError:
    return DatasetError(
        f"query {clip(qid)!r} document {clip(docid)!r}: expected {expected}, got "
        f"{type(value).__name__} {clip(repr(value))}",
        source=name,
    )
