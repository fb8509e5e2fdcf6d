"""Targets: what produces a row's predictions before the metrics score it.

- ``RecallTarget`` (scene ``recall``): a knowledge space's retriever; ``prediction`` is the
  retrieved chunks in rank order; a row's ``doc_name`` chunks become its references.
- ``AppTarget`` (scene ``app``): an app answers every row concurrently; its failures are
  that row's data (a null score with the reason), never the run's end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ragmeter.datasets import Dataset, Row
from ragmeter.embeddings import is_local_embedder
from ragmeter.errors import DatasetError, RagmeterError
from ragmeter.metrics.context import EvaluationContext
from ragmeter.runs.planning.config import AppTargetConfig, EvaluationConfig, SpaceTargetConfig

if TYPE_CHECKING:  # spaces (FAISS) and apps (httpx) load only for a run with such a target
    from ragmeter.apps import App, AppAnswer, AppPolicy
    from ragmeter.knowledge.models import RetrieverName
    from ragmeter.knowledge.search import SpaceSearcher
    from ragmeter.knowledge.spaces import KnowledgeBase

__all__ = [
    "AppTarget",
    "RecallTarget",
    "RowFailure",
    "Target",
    "build_target",
    "resolve_doc_names",
]

Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class RowFailure:
    """A row the target could not produce (the app or retriever failed on it): every metric
    of the row is a null score with this reason, as an upstream failure (worth a retry)."""

    reason: str


Produced = Row | RowFailure


class Target(Protocol):
    """Fills rows before scoring. ``provides`` names the row fields it fills."""

    label: str
    provides: frozenset[str]

    def prepare(self, dataset: Dataset) -> list[Row]:
        """Rows ready to run (references resolved); DatasetError names a bad row."""
        ...

    async def produce(
        self, rows: Sequence[Row], ctx: EvaluationContext, progress: Progress
    ) -> list[Produced]:
        """Each row with the target's output, or the reason it failed."""
        ...


def _same_embedder(a: str, b: str) -> bool:
    return a.lower() == b.lower() or (is_local_embedder(a) and is_local_embedder(b))


def resolve_doc_names(searcher: SpaceSearcher, dataset: Dataset) -> list[Row]:
    """Rows whose ``doc_name`` (one name or several) is replaced by the chunks of those
    documents: texts as ``reference_contexts``, chunk ids as ``reference_ids``. A row that
    already judges chunk ids (``reference_ids``, as a generated test set's source chunks, or
    ``reference_relevance``) keeps them: its ``doc_name`` is only checked."""
    from ragmeter.knowledge.spaces import AmbiguousDocumentError, UnknownDocumentError

    kb, info = searcher.kb, searcher.info
    rows = list(dataset)
    if not any(row.doc_name is not None for row in rows):
        return rows
    names = [d.name for d in kb.documents(info.id)]
    resolved: list[list[str]] = []
    for index, row in enumerate(rows):
        wanted = [] if row.doc_name is None else _as_list(row.doc_name)
        try:
            resolved.append([kb.resolve_document(info, name, names) for name in wanted])
        except (UnknownDocumentError, AmbiguousDocumentError) as exc:
            raise DatasetError(
                str(exc),
                row=index,
                field="doc_name",
                source=dataset.source,
                line=dataset.line_of(index),
            ) from None
    chunks = kb.chunks_of(info.id, sorted({n for names_ in resolved for n in names_}))
    out: list[Row] = []
    for row, doc_names in zip(rows, resolved, strict=True):
        if not doc_names or row.reference_ids is not None or row.reference_relevance is not None:
            out.append(row)
            continue
        picked = [c for name in doc_names for c in chunks[name]]
        out.append(
            row.model_copy(
                update={
                    "reference_contexts": [c.content for c in picked],
                    "reference_ids": [str(c.id) for c in picked],
                }
            )
        )
    return out


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


class RecallTarget:
    """Retrieves ``top_k`` chunks for every query of the dataset in one batched search."""

    provides = frozenset({"retrieved_contexts", "retrieved_ids"})

    def __init__(
        self,
        searcher: SpaceSearcher,
        *,
        retriever: RetrieverName = "vector",
        top_k: int = 5,
        score_threshold: float | None = None,
    ) -> None:
        self.searcher = searcher
        self.retriever = retriever
        self.top_k = top_k
        self.score_threshold = score_threshold
        self.label: str = retriever

    def prepare(self, dataset: Dataset) -> list[Row]:
        return resolve_doc_names(self.searcher, dataset)

    async def produce(
        self, rows: Sequence[Row], ctx: EvaluationContext, progress: Progress
    ) -> list[Produced]:
        hits = await self.searcher.search(
            [row.query for row in rows],
            top_k=self.top_k,
            retriever=self.retriever,
            score_threshold=self.score_threshold,
        )
        if _same_embedder(ctx.embedder_name, self.searcher.info.embedder):
            self._seed(rows, hits, ctx)
        progress(len(rows))
        return [
            row.model_copy(
                update={
                    "retrieved_contexts": [h.content for h in row_hits],
                    "retrieved_ids": [str(h.chunk_id) for h in row_hits],
                }
            )
            for row, row_hits in zip(rows, hits, strict=True)
        ]

    async def aclose(self) -> None:
        aclose = getattr(self.searcher.embedder, "aclose", None)
        if aclose is not None:
            await aclose()

    def _seed(
        self, rows: Sequence[Row], hits: Sequence[Sequence[Any]], ctx: EvaluationContext
    ) -> None:
        """Hand the space's stored vectors of these chunks to the metrics (no re-embedding)."""
        texts: dict[int, str] = {}
        for row, row_hits in zip(rows, hits, strict=True):
            texts.update((h.chunk_id, h.content) for h in row_hits)
            for chunk_id, text in zip(
                row.reference_ids or [], row.reference_contexts or [], strict=False
            ):
                texts[int(chunk_id)] = text
        if texts:
            ids = list(texts)
            ctx.seed_vectors([texts[i] for i in ids], self.searcher.vectors_of(ids))


class AppTarget:
    """Runs an app on every row, ``max_concurrency`` at a time (or through its batch call)."""

    provides = frozenset({"response", "retrieved_contexts", "messages"})

    def __init__(
        self,
        app: App,
        *,
        searcher: SpaceSearcher | None = None,
        max_concurrency: int = 16,
    ) -> None:
        self.app = app
        self.searcher = searcher
        self.max_concurrency = max_concurrency
        self.label = app.name

    async def aclose(self) -> None:
        aclose = getattr(self.app, "aclose", None)
        if aclose is not None:
            await aclose()

    def prepare(self, dataset: Dataset) -> list[Row]:
        if self.searcher is None:
            return list(dataset)
        return resolve_doc_names(self.searcher, dataset)

    async def _answers(
        self, rows: Sequence[Row], progress: Progress
    ) -> list[AppAnswer | BaseException]:
        many = getattr(self.app, "answer_many", None)
        if many is not None:
            answers: list[AppAnswer | BaseException] = await many(
                [row.query for row in rows], progress
            )
            return answers
        semaphore = asyncio.Semaphore(self.max_concurrency)
        # an agent reads the whole row (its available_tools), other apps the query
        answer_row = getattr(self.app, "answer_row", None)

        async def one(row: Row) -> AppAnswer | BaseException:
            async with semaphore:
                try:
                    if answer_row is not None:
                        answered: AppAnswer = await answer_row(row)
                        return answered
                    return await self.app.answer(row.query)
                except Exception as exc:  # the row's failure is data
                    return exc
                finally:
                    progress(1)

        return list(await asyncio.gather(*(one(row) for row in rows)))

    async def produce(
        self, rows: Sequence[Row], ctx: EvaluationContext, progress: Progress
    ) -> list[Produced]:
        from ragmeter.apps import AppAnswer

        answers = await self._answers(rows, progress)
        failure = getattr(self.app, "failure", None)
        if failure is not None:  # it cannot answer at all: stop, naming why
            raise failure
        out: list[Produced] = []
        for row, answer in zip(rows, answers, strict=True):
            if isinstance(answer, AppAnswer):
                out.append(row.model_copy(update=_answered(row, answer)))
            else:
                out.append(_failure(self.app.name, answer))
        return out


def _answered(row: Row, answer: AppAnswer) -> dict[str, Any]:
    """The row's fields an app's answer fills: the response and contexts; an agent's
    conversation (or one made of its tool calls), and its steps' latency and tokens."""
    from ragmeter.datasets.agent import plain_items, turns_from_tools_called

    update: dict[str, Any] = {"response": answer.answer, "retrieved_contexts": answer.contexts}
    if answer.messages is not None:
        update["messages"] = answer.messages
    elif answer.tool_calls is not None:
        calls = plain_items(answer.tool_calls)
        update["messages"] = turns_from_tools_called(row.query, calls, answer.answer)
    if answer.steps:
        update["metadata"] = {**row.metadata, "agent_steps": list(answer.steps)}
    return update


def _failure(app: str, exc: BaseException) -> RowFailure:
    if isinstance(exc, RagmeterError):
        return RowFailure(f"app '{app}' failed: {exc}")
    return RowFailure(f"app '{app}' failed: {type(exc).__name__}: {exc}")


def build_target(
    config: EvaluationConfig,
    kb: KnowledgeBase | None = None,
    *,
    app: Any = None,
    policy: AppPolicy | None = None,
) -> Target | None:
    """The target ``config`` names: a space's retriever (recall), a stored app (app), or None
    (rows carry their predictions). ``app`` is an ``App`` or a function of the query given
    from Python instead of a stored app's name; ``policy`` is the service's: a stored app may
    only use what it allows. The CLI and Python run apps without a policy."""
    spec = config.target
    if not isinstance(spec, SpaceTargetConfig | AppTargetConfig):
        return None
    from ragmeter.knowledge.search import SpaceSearcher
    from ragmeter.knowledge.spaces import KnowledgeBase

    if isinstance(spec, SpaceTargetConfig):
        return RecallTarget(
            SpaceSearcher(kb or KnowledgeBase(), spec.space),
            retriever=spec.retriever,
            top_k=spec.top_k,
            score_threshold=spec.score_threshold,
        )
    from ragmeter.apps import App, AppStore, CallableApp, RagApp, build_app

    kb = kb or KnowledgeBase()
    if app is None:
        store = AppStore(kb.store)
        record = store.get(spec.app)  # the version ``NAME@V`` names, if it names one
        cache = config.judge.cache if config.judge is not None else True
        app = build_app(
            record.name,
            store.config(spec.app),
            kb=kb,
            cache=cache,
            max_concurrency=config.app_concurrency,
            policy=policy,
        )
    elif not isinstance(app, App):
        app = CallableApp(app)
    searcher = SpaceSearcher(kb, spec.space) if spec.space is not None else None
    if searcher is None and isinstance(app, RagApp):
        searcher = app.searcher
    return AppTarget(app, searcher=searcher, max_concurrency=config.app_concurrency)
