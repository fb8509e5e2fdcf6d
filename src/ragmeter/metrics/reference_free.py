"""Deterministic metrics that need no reference: what a team monitoring production traffic
checks on every trace at no judge cost (a trace carries a query, a response and what was
retrieved, but no expected answer). Each scores 0-1 from the row alone::

    answered          = 1 if the response has a letter, number, symbol or mark, else 0
    json_response     = 1 if the response parses as strict JSON (of the asked shape), else 0
    retrieved_any     = 1 if the row retrieved at least one context or document id, else 0
    lexical_grounding = |{w in W(response) : w occurs in a retrieved context}| / |W(response)|

``W(text)`` is the set of content words of ``ragmeter.knowledge.tokenize`` (the BM25
tokenizer: lower-cased, English words stemmed and Chinese words cut by jieba, stop words of
both dropped). ``lexical_grounding`` is a cheap lexical proxy of grounding, not faithfulness:
a paraphrase scores low and a response that reorders the contexts' words into a false claim
scores 1; use ``faithfulness`` (judged) to know whether claims are supported."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
import orjson

from ragmeter.datasets import Dataset, Row
from ragmeter.errors import ErrorKind
from ragmeter.knowledge.tokenize import has_cjk, tokenize
from ragmeter.metrics.agent.base import Outcome
from ragmeter.metrics.base import BaseEvaluationResult, EvaluationMetric, overrides
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.reports.columns import ResultColumns

__all__ = [
    "JSON_SHAPES",
    "AnsweredMetric",
    "JsonResponseMetric",
    "LexicalGroundingMetric",
    "ReferenceFreeMetric",
    "RetrievedAnyMetric",
]

NO_RESPONSE = "the row has no response (field 'response')"
NO_CONTEXTS = "the row retrieved no contexts (field 'retrieved_contexts' is empty)"
NO_WORDS = "the response has no content words (only stop words, punctuation or spaces)"
#: the shapes ``json_response(shape=...)`` accepts
JSON_SHAPES = ("any", "object", "array")
#: words not found in the contexts quoted in a row's feedback
_QUOTED = 5
#: Unicode categories that make text an answer: letters, marks, numbers, symbols
_CONTENT = frozenset("LMNS")


class ReferenceFreeMetric(EvaluationMetric[Any, Any]):
    """A 0-1 metric of a row's own fields: ``prediction`` and ``contexts`` are what
    ``row_inputs`` reads (the response and the retrieved contexts unless a subclass says
    otherwise), scored by ``score_one``. Binary metrics pass when they score 1."""

    scale = (0.0, 1.0)
    #: whether scores are 0 or 1 only (then ``passing`` is score == 1)
    binary = True

    def score_one(self, prediction: Any, contexts: Any) -> Outcome:
        """(score, feedback) of one row; a None score with its reason as feedback."""
        raise NotImplementedError

    def row_inputs(self, row: Row, ctx: EvaluationContext) -> tuple[Any, Any, str | None]:
        return row.response, row.retrieved_contexts, row.query

    def columns(self, table: Dataset) -> tuple[list[Any], list[Any]]:
        """Every row's ``prediction`` and ``contexts``, read as columns."""
        return table.column("response"), table.column("retrieved_contexts")

    def _result(self, prediction: Any, contexts: Any) -> BaseEvaluationResult:
        score, said = self.score_one(prediction, contexts)
        return BaseEvaluationResult(
            prediction=prediction,
            contexts=contexts,
            score=score,
            passing=None if score is None or not self.binary else score == 1.0,
            feedback=said,
        )

    def sync_compute(
        self,
        prediction: Any,
        contexts: Sequence[Any] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        return self._result(prediction, contexts)

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        """All rows in one pass over the columns (no thread or task per row); a user
        subclass overriding a scoring method is called per row."""
        if overrides(self, ReferenceFreeMetric, "sync_compute") or overrides(
            self, EvaluationMetric, "compute"
        ):
            return await super().compute_rows(rows, ctx)
        table = Dataset.of(rows)
        predictions, contexts = self.columns(table)
        scores = np.full(len(table), np.nan)
        errors: dict[int, tuple[str, ErrorKind]] = {}
        feedback: dict[int, str] = {}
        passing: dict[int, bool] = {}
        score_one = self.score_one
        for index, (prediction, found) in enumerate(zip(predictions, contexts, strict=True)):
            score, said = score_one(prediction, found)
            if score is None:
                errors[index] = (said or "the metric gave no score", "input")
                continue
            scores[index] = score
            if said is not None:
                feedback[index] = said
            if self.binary:
                passing[index] = score == 1.0
        ctx.advance(len(table))
        return ResultColumns(
            self.metric_name,
            scores,
            errors=errors,
            feedback=feedback,
            passing=passing,
            prediction=predictions,
            contexts=contexts,
        )


def is_answer(text: str) -> bool:
    """Whether ``text`` holds a letter, mark, number or symbol (Unicode categories L, M, N,
    S): not empty, not only spaces, punctuation or invisible characters."""
    return any(unicodedata.category(ch)[0] in _CONTENT for ch in text)


@register_metric("answered")
class AnsweredMetric(ReferenceFreeMetric):
    """Answered = 1 if the response holds a letter, number, symbol or mark, else 0 (an
    absent, empty, blank or punctuation-only response: the app did not answer).

    A row without a response scores 0 rather than null: in production a trace whose app
    failed before answering has none, and the answer rate should count it."""

    def missing_fields(self, row: Row) -> str | None:
        return None

    def score_one(self, prediction: Any, contexts: Any) -> Outcome:
        if prediction is None:
            return 0.0, NO_RESPONSE
        if not prediction.strip():
            return 0.0, "the response is empty"
        if not is_answer(prediction):
            return 0.0, "the response has only punctuation or invisible characters"
        return 1.0, None


@register_metric("json_response")
class JsonResponseMetric(ReferenceFreeMetric):
    """JsonResponse = 1 if the response parses as strict JSON (RFC 8259, orjson; no code
    fence, comment, trailing comma or NaN), else 0; ``shape=object`` or ``shape=array``
    also asks for that top-level value (``any``: a bare number or string counts too).

    A row without a response is null (it needs one: ``answered`` counts those)."""

    def __init__(self, shape: Literal["any", "object", "array"] = "any") -> None:
        if shape not in JSON_SHAPES:
            raise ValueError(f"shape must be one of {', '.join(JSON_SHAPES)}, got {shape!r}")
        self.shape = shape

    def missing_fields(self, row: Row) -> str | None:
        return "response" if row.response is None else None

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        mask: np.ndarray = rows.lacking("response")
        return mask

    def score_one(self, prediction: Any, contexts: Any) -> Outcome:
        if prediction is None:
            return None, NO_RESPONSE
        if not prediction.strip():
            return 0.0, "the response is empty"
        try:
            value = orjson.loads(prediction)
        except orjson.JSONDecodeError as exc:
            return 0.0, f"the response is not JSON ({exc})"
        if self.shape == "object" and not isinstance(value, dict):
            return 0.0, f"the response is JSON but not an object ({_json_type(value)})"
        if self.shape == "array" and not isinstance(value, list):
            return 0.0, f"the response is JSON but not an array ({_json_type(value)})"
        return 1.0, None


def _json_type(value: Any) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


@register_metric("retrieved_any")
class RetrievedAnyMetric(ReferenceFreeMetric):
    """RetrievedAny = 1 if the row retrieved at least one context or document id, else 0
    (the retriever found nothing, or was not called: a production failure worth a line).

    ``prediction`` is the retrieved contexts, ``contexts`` the retrieved ids. A row without
    either field scores 0: a trace's row has them only when its retriever returned
    documents."""

    def missing_fields(self, row: Row) -> str | None:
        return None

    def row_inputs(self, row: Row, ctx: EvaluationContext) -> tuple[Any, Any, str | None]:
        return row.retrieved_contexts, row.retrieved_ids, row.query

    def columns(self, table: Dataset) -> tuple[list[Any], list[Any]]:
        return table.column("retrieved_contexts"), table.column("retrieved_ids")

    def score_one(self, prediction: Any, contexts: Any) -> Outcome:
        if prediction or contexts:
            return 1.0, None
        if prediction is None and contexts is None:
            return 0.0, "the row has no retrieved contexts or ids"
        return 0.0, "the retrieval returned nothing"


@register_metric("lexical_grounding")
class LexicalGroundingMetric(ReferenceFreeMetric):
    """LexicalGrounding = distinct content words of the response found in the retrieved
    contexts / distinct content words of the response: a cheap lexical proxy, not
    faithfulness.

    Words are ``ragmeter.knowledge.tokenize``'s (the BM25 tokenizer: English stemmed, Chinese
    cut by jieba, stop words of both dropped). An English word is found when its stem is
    among a context's; a Chinese word when its characters appear together in a context
    (jieba may cut the context elsewhere). So a response taken from a context (from word
    boundaries; any part of Chinese text) scores 1, and one sharing no word with them 0.
    Null when the response has no content word or the row retrieved no contexts; a row
    without a response or ``retrieved_contexts`` lacks what it needs."""

    binary = False

    def missing_fields(self, row: Row) -> str | None:
        if row.response is None:
            return "response"
        return "retrieved_contexts" if row.retrieved_contexts is None else None

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        mask: np.ndarray = rows.lacking("response") | rows.lacking("retrieved_contexts")
        return mask

    def score_one(self, prediction: Any, contexts: Any) -> Outcome:
        if prediction is None:
            return None, NO_RESPONSE
        if contexts is None or not any(c.strip() for c in contexts):
            return None, NO_CONTEXTS
        words = list(dict.fromkeys(tokenize(prediction)))
        if not words:
            return None, NO_WORDS
        stems = {w for c in contexts for w in tokenize(c)}
        text = "\n".join(contexts)
        missed = [w for w in words if not (w in text if has_cjk(w) else w in stems)]
        score = 1 - len(missed) / len(words)
        if not missed:
            return score, None
        shown = ", ".join(missed[:_QUOTED]) + (", ..." if len(missed) > _QUOTED else "")
        return score, f"{len(missed)} of {len(words)} words not in the contexts: {shown}"
