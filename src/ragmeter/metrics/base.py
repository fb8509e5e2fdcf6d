"""The metric hierarchy, shaped like DB-GPT's so its custom metrics run unchanged.

::

    EvaluationMetric
    ├── LLMEvaluationMetric          (prediction = the response; asks a judge)
    └── RetrieverEvaluationMetric    (prediction = the retrieved chunks)

A subclass implements ``sync_compute`` (run off the event loop) or ``compute`` (async). Built-in
metrics also implement ``compute_rows``, a batch path over all rows at once that reads the
dataset's columns and returns its results as columns (``ResultColumns``).
"""

from __future__ import annotations

import asyncio
from abc import ABC
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np

from ragmeter.datasets import Dataset
from ragmeter.errors import ConfigError, ErrorKind, JudgeError, MetricError
from ragmeter.judge.base import Judge
from ragmeter.judge.usage import Usage
from ragmeter.prompts.templates import render_template, template_fields
from ragmeter.reports.columns import ResultColumns
from ragmeter.reports.record import BaseEvaluationResult

if TYPE_CHECKING:
    from ragmeter.datasets import Row
    from ragmeter.metrics.context import EvaluationContext

__all__ = [
    "BaseEvaluationResult",
    "EvaluationMetric",
    "LLMEvaluationMetric",
    "RetrieverEvaluationMetric",
    "put_result",
]

P = TypeVar("P")
C = TypeVar("C")


def put_result(
    results: ResultColumns, index: int, result: Any, null_kind: ErrorKind = "input"
) -> None:
    """Row ``index``'s result from a user metric's return value: NaN or no score becomes a
    null with a reason. A deliberate null is ``null_kind`` (input: the metric could not score
    the row; an LLM metric that could not read the judge's reply says upstream); NaN is a
    metric bug."""
    if not isinstance(result, BaseEvaluationResult):
        reason = f"metric returned {type(result).__name__}, expected BaseEvaluationResult"
        results.fail(index, reason, "metric")
        return
    score = result.score
    results.put(
        index,
        None if score is None else float(score),
        passing=result.passing,
        feedback=result.feedback,
        prediction=result.prediction,
        contexts=result.contexts,
        error=(result.feedback or "metric returned no score and gave no reason")
        if score is None
        else None,
        error_kind=null_kind if score is None else None,
    )
    if result.prediction_cost:
        results.cost[index] = result.prediction_cost


def no_query(rows: Dataset) -> np.ndarray:
    """Rows with no question to judge by (an empty query: an agent's conversation that the
    user did not start, an id-only ranking)."""
    return np.fromiter((not q for q in rows.column("query")), dtype=bool, count=len(rows))


def _defined_in(cls: type, name: str) -> type:
    return next(c for c in cls.__mro__ if name in c.__dict__)


class EvaluationMetric(ABC, Generic[P, C]):
    """Base of every metric. ``name()`` is the class name; ``metric_name`` what results carry."""

    #: One line shown by ``ragmeter metrics``; defaults to the docstring's first line.
    description: ClassVar[str] = ""
    #: the range of a score, (low, high) with None for an unbounded end, shown beside the
    #: metric's name (``0-1``); None: not declared (a user's metric may declare it)
    scale: ClassVar[tuple[float | None, float | None] | None] = None

    _metric_name: str | None = None

    @classmethod
    def name(cls) -> str:
        """The metric's class name, as DB-GPT reports it."""
        return cls.__name__

    @property
    def metric_name(self) -> str:
        """The name results carry: the spec it was created from (``ndcg@10``) or ``name()``."""
        return self._metric_name or self.name()

    @metric_name.setter
    def metric_name(self, value: str) -> None:
        self._metric_name = value

    @classmethod
    def describe(cls) -> str:
        if cls.description:
            return cls.description
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else cls.__name__

    async def compute(
        self,
        prediction: P,
        contexts: Sequence[C] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        """Score one row; by default runs ``sync_compute`` in a worker thread."""
        return await asyncio.to_thread(self.sync_compute, prediction, contexts, query)

    def sync_compute(
        self,
        prediction: P,
        contexts: Sequence[C] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        """Score one row synchronously."""
        raise NotImplementedError(
            f"{type(self).__name__} implements neither compute nor sync_compute"
        )

    # -- ragmeter's side: how a row feeds the metric ---------------------------------------

    def check_implemented(self) -> None:
        """Fail early when a subclass implements neither scoring method."""
        cls = type(self)
        if (
            cls.compute is EvaluationMetric.compute
            and cls.sync_compute is EvaluationMetric.sync_compute
        ):
            raise MetricError(f"{cls.__name__} implements neither compute nor sync_compute")

    def missing_fields(self, row: Row) -> str | None:
        """What the row lacks for this metric (a field description), or None."""
        return None

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        """``missing_fields`` for all rows at once, read from columns: a mask of the rows
        that lack something (None: ask ``missing_fields`` row by row)."""
        return np.zeros(len(rows), dtype=bool)

    def first_lacking(self, rows: Dataset) -> int | None:
        """The first row lacking what this metric needs, or None. Built-in metrics read
        columns; a subclass with its own ``missing_fields`` is asked row by row."""
        cls = type(self)
        if issubclass(_defined_in(cls, "lacking"), _defined_in(cls, "missing_fields")):
            mask = self.lacking(rows)
            if mask is not None:
                return int(mask.argmax()) if mask.any() else None
        for index, row in enumerate(rows):
            if self.missing_fields(row) is not None:
                return index
        return None

    def row_inputs(self, row: Row, ctx: EvaluationContext) -> tuple[Any, Any, str | None]:
        """The ``(prediction, contexts, query)`` this metric is given for a row."""
        raise NotImplementedError

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        """Score all rows; the default calls ``compute`` per row, concurrently, failures as
        data, each row's result going into the columns."""
        table = Dataset.of(rows)
        results = ResultColumns.empty(self.metric_name, len(table))
        semaphore = asyncio.Semaphore(ctx.max_concurrency)

        async def one(index: int, row: Row) -> None:
            async with semaphore:
                prediction, contexts, query = self.row_inputs(row, ctx)
                try:
                    result = await self.compute(prediction, contexts, query)
                except Exception as exc:  # a user metric's failure is that row's data
                    results.raised(index, exc)
                else:
                    put_result(results, index, result)
                results.default_inputs(index, prediction, contexts)
                ctx.advance(1)

        await asyncio.gather(*(one(i, row) for i, row in enumerate(table)))
        return results


def overrides(obj: object, base: type, method: str) -> bool:
    """Whether ``obj``'s class replaces ``base.method`` (a user subclass of a built-in)."""
    return getattr(type(obj), method) is not getattr(base, method)


class RetrieverEvaluationMetric(EvaluationMetric[list[str], str]):
    """Scores retrieval: ``prediction`` is the retrieved chunks in rank order, ``contexts`` the
    reference contexts of the row."""

    #: Only the first ``top_k`` retrieved chunks count; None means the evaluation's default.
    top_k: int | None = None

    def effective_k(self, ctx: EvaluationContext) -> int | None:
        return self.top_k if self.top_k is not None else ctx.top_k

    def missing_fields(self, row: Row) -> str | None:
        if row.retrieved_contexts is None:
            return "retrieved_contexts"
        if row.reference_contexts is None:
            hint = " (doc_name needs a knowledge space)" if row.doc_name is not None else ""
            return f"reference_contexts{hint}"
        return None

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        mask: np.ndarray = rows.lacking("retrieved_contexts") | rows.lacking("reference_contexts")
        return mask

    def row_inputs(self, row: Row, ctx: EvaluationContext) -> tuple[Any, Any, str | None]:
        retrieved = row.retrieved_contexts or []
        k = self.effective_k(ctx)
        return (retrieved[:k] if k is not None else retrieved), row.reference_contexts, row.query


class LLMEvaluationMetric(EvaluationMetric[str, str]):
    """Scores a response with a judge model: ``prediction`` is the response, ``contexts`` the
    retrieved contexts. Subclasses give ``prompt_template`` (with ``{query}``, ``{context}``,
    ``{answer}``), or ``prompt_templates`` by language, and ``_parse_evaluate_response``, which
    returns a score, a ``(score, feedback)`` pair or a ``BaseEvaluationResult``."""

    prompt_template: str = ""
    #: templates by language ("en", "zh"), used when ``prompt_template`` is empty
    prompt_templates: ClassVar[dict[str, str]] = {}
    #: the fields ``format_prompt`` fills
    template_variables: ClassVar[tuple[str, ...]] = ("query", "context", "answer")
    #: a judge fixed for this metric; None means the evaluation's judge
    judge: Judge | None = None
    _evaluation_judge: Judge | None = None

    def __init__(self, prompt_template: str | None = None, judge: Judge | None = None) -> None:
        if prompt_template is not None:
            self.prompt_template = prompt_template
            self.check_templates()
        if judge is not None:
            self.judge = judge

    def check_implemented(self) -> None:
        super().check_implemented()
        self.check_templates()

    def check_templates(self) -> None:
        """MetricError naming the template and field unless every template holds plain
        fields only (no ``{query:>100000000}``) that ``format_prompt`` fills; a subclass
        with its own ``format_prompt`` may use other names."""
        allowed = (
            None
            if overrides(self, LLMEvaluationMetric, "format_prompt")
            else self.template_variables
        )
        named = {"prompt_template": self.prompt_template} if self.prompt_template else {}
        named.update({f"prompt_templates[{k!r}]": t for k, t in self.prompt_templates.items()})
        for where, template in named.items():
            try:
                template_fields(template, allowed)
            except ConfigError as exc:
                raise MetricError(f"{type(self).__name__} {where}: {exc}") from None

    def missing_fields(self, row: Row) -> str | None:
        if not row.query:
            return "query (a non-empty question)"
        return "response" if row.response is None else None

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        mask: np.ndarray = rows.lacking("response") | no_query(rows)
        return mask

    def row_inputs(self, row: Row, ctx: EvaluationContext) -> tuple[Any, Any, str | None]:
        return row.response, row.retrieved_contexts, row.query

    def judge_for(self, ctx: EvaluationContext) -> Any:
        """This metric's own judge, else the evaluation's; JudgeError if there is neither."""
        judge = self.judge or ctx.judge
        if judge is None:
            raise JudgeError(f"{self.metric_name} has no judge model")
        return judge

    def template(self, language: str = "en") -> str:
        """The prompt template for ``language``: the explicit one, else the language's own."""
        if self.prompt_template:
            return self.prompt_template
        return self.prompt_templates.get(language) or self.prompt_templates.get("en", "")

    def format_prompt(
        self,
        prediction: str,
        contexts: Sequence[str] | None,
        query: str | None,
        language: str = "en",
    ) -> str:
        """The judge's prompt for one row; plain ``{field}`` substitution, never ``format``."""
        values = {
            "query": query or "",
            "context": "\n".join(contexts or []),
            "answer": prediction or "",
        }
        return render_template(self.template(language), values)

    async def compute(
        self,
        prediction: str,
        contexts: Sequence[str] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        """Ask the judge with the formatted prompt and parse its reply."""
        judge = self.judge or self._evaluation_judge
        if judge is None:
            raise JudgeError(f"{self.metric_name} has no judge model")
        reply = await judge.complete(self.format_prompt(prediction, contexts, query))
        return self._result(reply, prediction, contexts)

    def _result(self, reply: str, prediction: Any, contexts: Any) -> BaseEvaluationResult:
        parsed = self._parse_evaluate_response(reply)
        if isinstance(parsed, BaseEvaluationResult):
            return parsed
        feedback = None
        if isinstance(parsed, tuple):
            parsed, feedback = parsed[0], (parsed[1] if len(parsed) > 1 else None)
        if parsed is None and feedback is None:
            feedback = f"could not read a score from the judge's reply: {reply[:200]!r}"
        return BaseEvaluationResult(
            prediction=prediction,
            contexts=contexts,
            score=None if parsed is None else float(parsed),
            passing=self.passing(None if parsed is None else float(parsed)),
            feedback=None if feedback is None else str(feedback),
        )

    def passing(self, score: float | None) -> bool | None:
        """Whether a score passes; None (no opinion) unless a subclass sets a threshold."""
        return None

    def result_details(self, result: BaseEvaluationResult) -> dict[str, Any] | None:
        """The judge's reasoning behind a scored result (``ragmeter.reports.details``);
        None (not recorded) unless a subclass shows it."""
        return None

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        self._evaluation_judge = ctx.judge  # per evaluation; never overrides self.judge
        if overrides(self, LLMEvaluationMetric, "compute"):
            return await super().compute_rows(rows, ctx)
        judge = self.judge_for(ctx)
        table = Dataset.of(rows)
        results = ResultColumns.empty(self.metric_name, len(table))
        semaphore = asyncio.Semaphore(ctx.max_concurrency)

        async def one(index: int, row: Row) -> None:
            prediction, contexts, query = self.row_inputs(row, ctx)
            language = ctx.language_of(row)
            usage = Usage()
            async with semaphore:
                try:
                    prompt = self.format_prompt(prediction, contexts, query, language)
                    reply = await ask_text(judge, prompt, usage)
                    result = self._result(reply, prediction, contexts)
                    # no score read from the judge's reply: the judge's fault, worth a retry
                    put_result(results, index, result, null_kind="upstream")
                    if result.score is not None:
                        reasoning = self.result_details(result)
                        if reasoning is not None:
                            results.details[index] = reasoning
                except Exception as exc:  # the row's failure is data, with its reason
                    results.raised(index, exc)
            results.default_inputs(index, prediction, contexts)
            results.charge(index, usage.to_dict(), usage.tokens)
            ctx.advance(1)

        await asyncio.gather(*(one(i, row) for i, row in enumerate(table)))
        return results

    def _parse_evaluate_response(self, response: str) -> Any:
        """Turn the judge's reply into a score (and optionally feedback)."""
        raise NotImplementedError


async def ask_text(judge: Any, prompt: str, usage: Usage) -> str:
    """Free text from ``judge``: the engine's counted call, or a plain ``complete``."""
    if hasattr(judge, "ask_text"):
        reply: str = await judge.ask_text(prompt, usage)
        return reply
    usage.add(Usage(requests=1))
    text: str = await judge.complete(prompt)
    return text
