"""One test case (a row) with canonical field names, validated before any work."""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from ragmeter._grades import MAX_GRADE, whole_grade
from ragmeter.datasets._values import (
    INT_CAP,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    TooLongNumber,
    digits_of,
    nesting_depth,
    scan,
)
from ragmeter.datasets.agent import (
    AgentFormatError,
    Message,
    Tool,
    ToolCall,
    first_user_text,
    plain_items,
    read_messages,
    read_tool_calls,
    read_tools,
    turns_from_tools_called,
)
from ragmeter.errors import DatasetError

__all__ = [
    "FIELD_ALIASES",
    "MAX_DEPTH",
    "MAX_GRADE",
    "MAX_INT_DIGITS",
    "Row",
    "TooLongNumber",
    "nesting_depth",
    "row_from_mapping",
]

#: alias -> canonical field name (canonical names map to themselves).
FIELD_ALIASES: dict[str, str] = {
    "query": "query",
    "question": "query",
    "user_input": "query",
    "doc_name": "doc_name",
    "reference_contexts": "reference_contexts",
    "factual": "reference_contexts",
    "ground_truth_contexts": "reference_contexts",
    "reference": "reference",
    "ground_truth": "reference",
    "answer_reference": "reference",
    "response": "response",
    "prediction": "response",
    "answer": "response",
    "retrieved_contexts": "retrieved_contexts",
    "contexts": "retrieved_contexts",
    "retrieved_ids": "retrieved_ids",
    "retrieved_context_ids": "retrieved_ids",
    "reference_ids": "reference_ids",
    "reference_relevance": "reference_relevance",
    "reference_context_ids": "reference_ids",
    "metadata": "metadata",
    # agents (ragmeter.datasets.agent): OpenAI / Anthropic / RAGAS / DeepEval names
    "messages": "messages",
    "conversation": "messages",
    "turns": "messages",
    "reference_tool_calls": "reference_tool_calls",
    "expected_tools": "reference_tool_calls",
    "reference_topics": "reference_topics",
    "available_tools": "available_tools",
    "tools": "available_tools",
    "tools_called": "tools_called",
    # DeepEval's test case (and its camel-case JSON)
    "input": "query",
    "actual_output": "response",
    "actualOutput": "response",
    "expected_output": "reference",
    "expectedOutput": "reference",
    "retrieval_context": "retrieved_contexts",
    "retrievalContext": "retrieved_contexts",
    "toolsCalled": "tools_called",
    "expectedTools": "reference_tool_calls",
}

_EXPECTED: dict[str, str] = {
    "query": "a non-empty string",
    "doc_name": "a string or a list of strings",
    "reference_contexts": "a list of strings",
    "reference": "a string",
    "response": "a string",
    "retrieved_contexts": "a list of strings",
    "retrieved_ids": "a list of strings (ids)",
    "reference_ids": "a list of strings (ids)",
    "reference_relevance": (
        f"an object of id -> whole-number grade from {-MAX_GRADE:,} to {MAX_GRADE:,}"
    ),
    "metadata": "an object (dict)",
    "reference_topics": "a list of strings",
}

#: why an empty query is refused
_NO_QUERY = "expected a non-empty string, got str ''"

LIST_FIELDS = frozenset(
    {
        "reference_contexts",
        "retrieved_contexts",
        "retrieved_ids",
        "reference_ids",
        "reference_topics",
    }
)
#: agent fields read into their models before the row is validated
_AGENT_READERS = {
    "messages": read_messages,
    "reference_tool_calls": read_tool_calls,
    "available_tools": read_tools,
}


class Row(BaseModel):
    """A test case. ``extra`` holds input fields ragmeter does not know, carried through.
    ``query`` is empty only for a row with something else to score: a conversation with no
    user text (a RAGAS sample of AI and tool messages only), or a ranking of ids given
    without a question (RAGAS's id-based samples)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    doc_name: str | list[str] | None = None
    reference_contexts: list[str] | None = None
    reference: str | None = None
    response: str | None = None
    retrieved_contexts: list[str] | None = None
    retrieved_ids: list[str] | None = None
    reference_ids: list[str] | None = None
    #: graded relevance: id -> grade (0 judged not relevant; a negative grade judged "in the
    #: pool, not assessed", as TREC qrels write it); ``reference_ids`` are grade 1
    reference_relevance: dict[str, int] | None = None
    messages: tuple[Message, ...] | None = None
    reference_tool_calls: tuple[ToolCall, ...] | None = None
    reference_topics: list[str] | None = None
    available_tools: tuple[Tool, ...] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("retrieved_ids", "reference_ids", mode="before")
    @classmethod
    def _ids_as_strings(cls, value: Any) -> Any:
        """Integer ids are common in IR data; accept them as their decimal string."""
        if isinstance(value, list | tuple):
            return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        return value

    @field_validator("reference_relevance", mode="before")
    @classmethod
    def _grades(cls, value: Any) -> Any:
        """Ids as strings (integer ids accepted), grades whole numbers within the limit; an
        integral float (2.0, as pandas writes grades) is taken as its integer."""
        if not isinstance(value, Mapping):
            return value
        out: dict[str, int] = {}
        for key, grade in value.items():
            if isinstance(key, int) and not isinstance(key, bool):
                key = str(key)
            if not isinstance(key, str):
                raise ValueError("ids must be strings")
            whole = whole_grade(grade)
            if whole is None:
                what = "null" if grade is None else repr(grade)[:40]
                raise ValueError(
                    f"the grade of '{key[:60]}' is {what}, not a whole number within the limit"
                )
            out[key] = whole
        return out

    @model_validator(mode="after")
    def _asks_something(self) -> Row:
        if not self.query and not self.messages and self.retrieved_ids is None:
            raise ValueError(f"query: {_NO_QUERY}")
        return self

    @field_serializer("messages", "reference_tool_calls", "available_tools")
    def _plain(
        self, value: Sequence[Message | ToolCall | Tool] | None
    ) -> list[dict[str, Any]] | None:
        return None if value is None else plain_items(value)

    def to_raw(self) -> dict[str, Any]:
        """The row as a plain dict with canonical names, absent fields left out."""
        raw = self.model_dump(exclude_none=True, exclude={"extra"})
        if not raw.get("metadata"):
            raw.pop("metadata", None)
        raw.update(self.extra)
        return raw


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, float) and math.isnan(value)


def _canonical_fields(raw: Mapping[str, Any], where: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    extra: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            raise DatasetError(f"field names must be strings, got {_describe(key)}", **where)
        canonical = FIELD_ALIASES.get(key)
        if canonical is None:
            extra[key] = value
            continue
        if _is_missing(value):
            continue
        if canonical == "query" and isinstance(value, list | tuple):
            canonical = "messages"  # RAGAS's multi-turn user_input: the conversation
        if canonical in fields and not _same(fields[canonical], value):
            raise DatasetError(
                f"given twice with different values, as '{given_as[canonical]}' and '{key}'",
                field=canonical,
                **where,
            )
        fields[canonical] = value
        given_as[canonical] = key
    if extra:
        fields["extra"] = extra
    return fields


def _empty_text(value: Any) -> bool:
    """Whether a query is absent or the empty text."""
    return value is None or (isinstance(value, str) and not value)


def _same(one: Any, other: Any) -> bool:
    """Whether two values of a field are equal; values too deep to compare are not."""
    try:
        return bool(one == other)
    except RecursionError:
        return False


class _ShortRepr(reprlib.Repr):
    """A repr bounded in length whatever the value: long strings and lists are cut, an
    integer too long to print is named by its size."""

    def repr_int(self, x: int, level: int) -> str:
        if abs(x) >= INT_CAP:
            return f"<an integer of more than {MAX_INT_DIGITS:,} digits>"
        return super().repr_int(x, level)


_SHORT = _ShortRepr()
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 60


def _describe(value: Any) -> str:
    text = _SHORT.repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _field_name(key: Any) -> str:
    """A field name for a message: a key as given (at most 100 characters), or its kind."""
    return key[:100] if isinstance(key, str) else _describe(key)


def _check_values(raw: Mapping[Any, Any], limit: int, setting: str, where: dict[str, Any]) -> None:
    """DatasetError naming the field whose value nests deeper than ``limit`` or holds an
    integer too long to write down (every message and stored row would fail on it). The agent
    fields with a reader are left to it: it checks the same, and reads the usual conversation
    without a second walk (``datasets.agent``)."""
    for key, value in raw.items():
        if isinstance(key, str) and FIELD_ALIASES.get(key) in _AGENT_READERS:
            continue
        depth, digits = scan(value, limit)
        if 1 + depth > limit:
            hint = f" ({setting})" if setting else ""
            raise DatasetError(
                f"nested deeper than {limit} levels{hint}", field=_field_name(key), **where
            )
        digits = digits_of(key) or digits
        if digits is not None:
            raise DatasetError(
                f"holds an integer of about {digits:,} digits; numbers in a row have at most "
                f"{MAX_INT_DIGITS:,}",
                field=_field_name(key),
                **where,
            )


def row_from_mapping(
    raw: Any,
    row: int,
    *,
    source: str | None = None,
    line: int | None = None,
    max_depth: int = MAX_DEPTH,
    depth_setting: str = "",
) -> Row:
    """Validate one input mapping into a ``Row``; a bad one raises ``DatasetError`` naming it.
    A row nested deeper than ``max_depth`` (named ``depth_setting`` in the message) is
    refused, so what is stored can always be read back."""
    if not isinstance(raw, Mapping):
        raise DatasetError(
            f"expected an object with a 'query' field, got {_describe(raw)}",
            row=row,
            source=source,
            line=line,
        )
    where = {"row": row, "source": source, "line": line}
    _check_values(raw, max_depth, depth_setting, where)
    fields = _canonical_fields(raw, where)
    _agent_fields(fields, where, max_depth, depth_setting)
    if "query" not in fields and "retrieved_ids" in fields:
        fields["query"] = ""  # RAGAS's id-based samples: a ranking, no question
    if "query" not in fields:
        raise DatasetError(
            "missing; every row needs a query (aliases: question, user_input)",
            row=row,
            field="query",
            source=source,
            line=line,
        )
    if (
        _empty_text(fields["query"])
        and not fields.get("messages")
        and "retrieved_ids" not in fields
    ):
        raise DatasetError(_NO_QUERY, row=row, field="query", source=source, line=line)
    try:
        validated = Row.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else None
        bad = first.get("input")
        expected = _EXPECTED.get(field or "", "a valid value")
        if field in LIST_FIELDS and len(first["loc"]) > 1:
            detail = f"expected {expected}; item {first['loc'][1]} is {_describe(bad)}"
        elif first["type"] == "value_error":  # our own validator said what is wrong
            reason = str(first["msg"]).removeprefix("Value error, ")
            detail = f"expected {expected}: {reason}"
        else:
            detail = f"expected {expected}, got {_describe(bad)}"
        raise DatasetError(detail, row=row, field=field, source=source, line=line) from None
    _check_ids_align(validated, row, source, line)
    _check_grades_agree(validated, row, source, line)
    return validated


def _agent_error(exc: AgentFormatError, setting: str) -> str:
    """The message of an agent reader's error, naming the setting of a limit it hit."""
    return f"{exc.message} ({setting})" if exc.over_limit and setting else exc.message


def _agent_fields(
    fields: dict[str, Any], where: dict[str, Any], max_depth: int = MAX_DEPTH, setting: str = ""
) -> None:
    """The agent fields in their one form (``datasets.agent``), in place: DeepEval's
    ``tools_called`` become ``messages``; a row without a query (or with an empty one) takes
    its conversation's first user text, empty when it has none (RAGAS's samples of AI and
    tool messages only)."""
    for name, read in _AGENT_READERS.items():
        if name in fields:
            try:
                fields[name] = read(fields[name], max_depth)
            except AgentFormatError as exc:
                message = _agent_error(exc, setting)
                raise DatasetError(message, field=f"{name}{exc.path}", **where) from None
    if "tools_called" in fields:
        calls = fields.pop("tools_called")
        if "messages" in fields:
            raise DatasetError(
                "give the calls inside messages, not beside them", field="tools_called", **where
            )
        if isinstance(fields.get("query"), str):
            try:
                fields["messages"] = turns_from_tools_called(
                    fields["query"], calls, fields.get("response"), max_depth
                )
            except AgentFormatError as exc:
                path = exc.path.replace("[1].tools_called", "", 1)
                message = _agent_error(exc, setting)
                raise DatasetError(message, field=f"tools_called{path}", **where) from None
    if _empty_text(fields.get("query")) and fields.get("messages"):
        fields["query"] = first_user_text(fields["messages"]) or ""


def _check_ids_align(row_obj: Row, row: int, source: str | None, line: int | None) -> None:
    ids, texts = row_obj.retrieved_ids, row_obj.retrieved_contexts
    if ids is not None and texts is not None and len(ids) != len(texts):
        raise DatasetError(
            f"has {len(ids)} ids but retrieved_contexts has {len(texts)} items; "
            "they must align one to one",
            row=row,
            field="retrieved_ids",
            source=source,
            line=line,
        )


def _check_grades_agree(row_obj: Row, row: int, source: str | None, line: int | None) -> None:
    """``reference_ids`` are relevant (grade 1): an id there that ``reference_relevance`` grades
    below 1 is a contradiction."""
    ids, grades = row_obj.reference_ids, row_obj.reference_relevance
    if ids is None or grades is None:
        return
    for item in ids:
        grade = grades.get(item)
        if grade is not None and grade < 1:
            raise DatasetError(
                f"lists '{item[:60]}' as relevant, but reference_relevance grades it {grade}; "
                "give the grade in one place",
                row=row,
                field="reference_ids",
                source=source,
                line=line,
            )
