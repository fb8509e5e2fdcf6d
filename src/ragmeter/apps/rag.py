"""``RagApp``: a knowledge space, an answer prompt and a chat model. It retrieves for all
queries in one batched search, then asks the model for each answer concurrently."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from ragmeter.apps.base import AppAnswer, AppError
from ragmeter.errors import RagmeterError
from ragmeter.judge.engine import JudgeEngine
from ragmeter.judge.tasks import detect_language
from ragmeter.judge.usage import Usage
from ragmeter.knowledge.models import RetrieverName
from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.prompts.templates import render_template

__all__ = ["RAG_ANSWER_TEMPLATES", "RagApp"]

#: the default answer prompts; ``{context}`` is the retrieved chunks, one block each
RAG_ANSWER_TEMPLATES: dict[str, str] = {
    "en": (
        "Answer the question using only the passages below. If they do not hold the answer, "
        "say that you do not know.\n\nPassages:\n{context}\n\nQuestion: {query}\nAnswer:"
    ),
    "zh": (
        "请只根据下面的参考段落回答问题。如果段落中没有答案，请直接说不知道。\n\n"
        "参考段落：\n{context}\n\n问题：{query}\n回答："
    ),
}


class RagApp:
    """Retrieve ``top_k`` chunks from a space, then ask ``model`` with the answer prompt."""

    def __init__(
        self,
        name: str,
        searcher: SpaceSearcher,
        model: JudgeEngine,
        *,
        prompt_template: str | None = None,
        top_k: int = 5,
        retriever: RetrieverName = "vector",
        score_threshold: float | None = None,
        max_concurrency: int = 16,
    ) -> None:
        self._name = name
        self.searcher = searcher
        self.model = model
        self.prompt_template = prompt_template
        self.top_k = top_k
        self.retriever: RetrieverName = retriever
        self.score_threshold = score_threshold
        self.max_concurrency = max_concurrency
        #: what the app's model calls cost (requests, tokens), apart from the judge's
        self.usage = Usage()

    @property
    def name(self) -> str:
        return self._name

    @property
    def failure(self) -> RagmeterError | None:
        """The model's endpoint refused the key, is unknown or is unreachable: no query can be
        answered, so the evaluation stops naming it."""
        fatal = self.model.fatal
        return None if fatal is None else AppError(f"app '{self.name}': {fatal}")

    def prompt(self, query: str, contexts: Sequence[str]) -> str:
        """The model's prompt for a query: plain ``{query}``/``{context}`` substitution only,
        so no template can pad or convert a value (ConfigError names a field that is not)."""
        template = self.prompt_template or RAG_ANSWER_TEMPLATES[detect_language(query)]
        return render_template(template, {"query": query, "context": "\n\n".join(contexts)})

    async def answer(self, query: str) -> AppAnswer:
        (result,) = await self.answer_many([query])
        if isinstance(result, BaseException):
            raise result
        return result

    async def answer_many(
        self, queries: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> list[AppAnswer | BaseException]:
        """Answers in query order; a query whose model call failed gets its exception."""
        hits = await self.searcher.search(
            queries,
            top_k=self.top_k,
            retriever=self.retriever,
            score_threshold=self.score_threshold,
        )
        semaphore = asyncio.Semaphore(self.max_concurrency)

        async def one(query: str, contexts: list[str]) -> AppAnswer | BaseException:
            async with semaphore:
                try:
                    text = await self.model.ask_text(self.prompt(query, contexts), self.usage)
                    return AppAnswer(text.strip(), contexts)
                except Exception as exc:  # that query's failure is its row's data
                    return exc if isinstance(exc, AppError) else AppError(str(exc))
                finally:
                    if progress is not None:
                        progress(1)

        return list(
            await asyncio.gather(
                *(one(q, [h.content for h in row]) for q, row in zip(queries, hits, strict=True))
            )
        )

    async def aclose(self) -> None:
        await self.model.aclose()
