"""Generating a test set from a knowledge space: candidates from the chunk pool, one
generation request each, the gates, replacement of rejected candidates until the size or the
budget is reached. Accepted rows are handed out as they pass (``on_row``), so a run cut short
keeps them and a later run with the same seed resumes after them.

Requests per accepted question with no rejection: 1 (generation) + 2 (groundedness: the
answer's statements, then their verdicts); the other gates cost no request.
"""

from __future__ import annotations

import asyncio
import itertools
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError, JudgeError, LimitError
from ragmeter.judge.engine import JudgeEngine
from ragmeter.judge.tasks import Language, build_request
from ragmeter.judge.tokens import count_tokens
from ragmeter.judge.usage import Usage
from ragmeter.knowledge.models import ChunkInfo
from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.testsets.config import TestsetConfig, type_quotas
from ragmeter.testsets.gates import (
    GROUNDED_TASKS,
    DuplicateFilter,
    grounded,
    language_problem,
    self_answer_problem,
    standalone_problem,
    unused_source_problem,
)
from ragmeter.testsets.prompts import GeneratedQA, generation_prompt
from ragmeter.testsets.selection import Candidate, ChunkPool, body_of

__all__ = ["Estimate", "TestsetGenerator", "TestsetReport"]

#: chat requests one candidate costs when nothing is re-asked
REQUESTS_PER_CANDIDATE = 3
_PAGE = 1000


@dataclass
class Estimate:
    """What generating ``questions`` costs if every candidate passes (from the prompts)."""

    questions: int
    requests: int
    prompt_tokens: int
    per_candidate_requests: int = REQUESTS_PER_CANDIDATE
    skipped: Counter[str] = field(default_factory=Counter)
    usable_chunks: int = 0


@dataclass
class TestsetReport:
    """What a generation did: rows kept (including resumed ones), gate counts, cost."""

    __test__ = False

    rows: list[dict[str, Any]] = field(default_factory=list)
    resumed: int = 0
    candidates: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    stopped: str | None = None
    #: questions a type still needed when every chosen chunk had been tried
    short: dict[str, int] = field(default_factory=dict)
    #: questions of a type written as ``single`` instead: the type ran out of groups
    moved: dict[str, int] = field(default_factory=dict)

    @property
    def accepted(self) -> int:
        return len(self.rows)

    def reject(self, gate: str, reason: str) -> None:
        self.rejected[gate] += 1
        self.examples.setdefault(gate, reason)


@dataclass(frozen=True, slots=True)
class Voice:
    """How a question is worded: its style and, optionally, the persona asking it."""

    style: str
    persona: str | None = None


@dataclass
class _Outcome:
    candidate: Candidate
    style: Voice
    usage: Usage
    qa: GeneratedQA | None = None
    gate: str | None = None
    reason: str = ""


class TestsetGenerator:
    """Writes ``config.size`` questions from the chunks of ``searcher``'s space with
    ``judge`` (None: only ``estimate``); see the module doc for the steps."""

    __test__ = False

    def __init__(
        self, searcher: SpaceSearcher, judge: JudgeEngine | None, config: TestsetConfig
    ) -> None:
        self.searcher = searcher
        self.judge = judge
        self.config = config
        self._pool: ChunkPool | None = None

    # -- selection ------------------------------------------------------------------------

    def _chunks(self) -> list[ChunkInfo]:
        kb, info = self.searcher.kb, self.searcher.info
        if info.chunks == 0:
            raise ConfigError(
                f"space '{info.name}' has no chunks to write questions from; add documents "
                f"first: ragmeter space add {info.name} PATH"
            )
        chunks: list[ChunkInfo] = []
        while len(chunks) < info.chunks:
            page, _ = kb.space_chunks(info.id, len(chunks), _PAGE)
            if not page:
                break
            chunks.extend(page)
        if self.config.docs:
            names = [d.name for d in kb.documents(info.id)]
            wanted = {kb.resolve_document(info, name, names) for name in self.config.docs}
            chunks = [c for c in chunks if c.document in wanted]
        return chunks

    def pool(self) -> ChunkPool:
        """The usable chunks in the seed's order (built once)."""
        if self._pool is None:
            pool = ChunkPool.build(
                self._chunks(),
                self.searcher.vectors_of,
                seed=self.config.seed,
                language=self.config.language,
            )
            if not pool.chunks:
                skipped = ", ".join(f"{n} {r}" for r, n in sorted(pool.skipped.items()))
                raise ConfigError(
                    f"space '{self.searcher.info.name}' has no chunk to write questions from "
                    f"(skipped: {skipped or 'none'}); add documents with prose, or change "
                    "--docs / --language"
                )
            self._pool = pool
        return self._pool

    def streams(self) -> dict[str, Iterator[Candidate]]:
        """Candidates of each question type (``single`` always), in the order they are
        tried, made as they are asked for."""
        pool = self.pool()
        indexes = self.searcher.indexes()

        def lexical(query: str, k: int) -> list[tuple[int, float]]:
            return indexes.lexical.search([query], k)[0]

        makers: Mapping[str, Callable[[], Iterator[Candidate]]] = {
            "single": pool.singles,
            "multi": lambda: pool.multis(lexical),
            "abstract": pool.abstracts,
        }
        return {kind: makers[kind]() for kind in ("single", *self.config.types) if kind in makers}

    def _language(self, candidate: Candidate) -> Language:
        chosen = self.config.language
        return candidate.language if chosen == "auto" else chosen

    def _style(self, candidate: Candidate) -> Voice:
        """The style (and persona, when some are given) of a candidate, spread over the
        candidates by their chunk ids: the same candidate gets the same wording in a resumed
        run as in an uninterrupted one."""
        styles, personas = self.config.styles, self.config.personas
        spread = zlib.crc32(",".join(candidate.key).encode())
        persona = personas[(spread // len(styles)) % len(personas)] if personas else None
        return Voice(styles[spread % len(styles)], persona)

    def _prompt_tokens(self, candidate: Candidate, style: Voice) -> int:
        """Prompt tokens of the candidate's generation request and of its two groundedness
        requests, with the first sentence-sized piece of the anchor standing in for the
        answer and for its one statement."""
        language = self._language(candidate)
        passages = [c.content for c in candidate.chunks]
        prompt = generation_prompt(
            candidate.kind, passages, language, style.style, persona=style.persona
        )
        answer = body_of(candidate.chunks[0])[:200]
        inputs = {
            "question": answer[:80],
            "response": answer,
            "contexts": passages,
            "response_statements": [answer],
        }
        texts = [prompt.system, prompt.user]
        for task in GROUNDED_TASKS:
            request = build_request((task,), inputs, language)
            texts += [request.system, request.user]
        return sum(count_tokens(t) for t in texts)

    # -- the estimate -----------------------------------------------------------------------

    def estimate(self) -> Estimate:
        """Requests and prompt tokens of the candidates the generation would send first (one
        per question asked, as if all passed)."""
        picked = _take(self.streams(), type_quotas(self.config.types, self.config.size))
        tokens = sum(self._prompt_tokens(c, self._style(c)) for c in picked)
        pool = self.pool()
        return Estimate(
            questions=len(picked),
            requests=REQUESTS_PER_CANDIDATE * len(picked),
            prompt_tokens=tokens,
            skipped=Counter(pool.skipped),
            usable_chunks=len(pool.chunks),
        )

    def _check_budget(self, first: Candidate) -> None:
        config = self.config
        tokens = self._prompt_tokens(first, self._style(first))
        too_few_requests = config.max_requests is not None and (
            config.max_requests < REQUESTS_PER_CANDIDATE
        )
        too_few_tokens = config.max_tokens is not None and config.max_tokens < tokens
        if too_few_requests or too_few_tokens:
            raise LimitError(
                f"the budget is too small for one question: it takes {REQUESTS_PER_CANDIDATE} "
                f"requests and about {tokens} prompt tokens; raise --max-requests or --max-tokens",
                setting=f"--max-requests {config.max_requests}, --max-tokens {config.max_tokens}",
            )

    def _over_budget(self, spent: Usage, planned: int, planned_tokens: int) -> str | None:
        config = self.config
        if config.max_requests is not None and spent.requests + planned > config.max_requests:
            return f"--max-requests {config.max_requests} reached"
        tokens = spent.prompt_tokens + spent.completion_tokens + planned_tokens
        if config.max_tokens is not None and tokens > config.max_tokens:
            return f"--max-tokens {config.max_tokens} reached"
        return None

    # -- generation ------------------------------------------------------------------------

    async def _write(self, judge: JudgeEngine, candidate: Candidate, style: Voice) -> _Outcome:
        outcome = _Outcome(candidate, style, Usage())
        language = self._language(candidate)
        passages = [c.content for c in candidate.chunks]
        prompt = generation_prompt(
            candidate.kind, passages, language, style.style, persona=style.persona
        )
        try:
            qa = await judge.ask(prompt.system, prompt.user, GeneratedQA, outcome.usage)
        except JudgeError as exc:
            outcome.gate, outcome.reason = "generation_failed", str(exc)
            return outcome
        outcome.qa = qa
        question, answer = qa.question.strip(), qa.answer.strip()
        checks = (
            ("standalone", standalone_problem(question)),
            ("self_answer", self_answer_problem(question, answer)),
            ("language", language_problem(question, answer, language)),
            (
                "uses_all",
                unused_source_problem(answer, passages) if candidate.kind == "multi" else None,
            ),
        )
        for gate, problem in checks:
            if problem is not None:
                outcome.gate, outcome.reason = gate, problem
                return outcome
        try:
            problem = await grounded(judge, question, answer, passages, language, outcome.usage)
        except JudgeError as exc:
            problem = f"the judge failed: {exc}"
        if problem is not None:
            outcome.gate, outcome.reason = "grounded", problem
        return outcome

    def _row(self, outcome: _Outcome) -> dict[str, Any]:
        assert outcome.qa is not None  # only passed outcomes become rows
        chunks = outcome.candidate.chunks
        documents = list(dict.fromkeys(c.document for c in chunks))
        return {
            "query": outcome.qa.question.strip(),
            "reference": outcome.qa.answer.strip(),
            "reference_contexts": [c.content for c in chunks],
            "reference_ids": [str(c.id) for c in chunks],
            "doc_name": documents[0] if len(documents) == 1 else documents,
            "type": outcome.candidate.kind,
            "style": outcome.style.style,
            **({"persona": outcome.style.persona} if outcome.style.persona else {}),
            "language": self._language(outcome.candidate),
            "cost": outcome.usage.to_dict(),
            "metadata": {"generator": "ragmeter testset", "seed": self.config.seed},
            **({"reference_relevance": self._grades(chunks)} if self.config.graded else {}),
        }

    def _grades(self, chunks: Sequence[ChunkInfo]) -> dict[str, int]:
        """Graded relevance of a row: 2 for its source chunks, 1 for the other usable chunks
        of their documents (on the subject, not what the question was written from)."""
        pool = self.pool()
        grades = {
            str(c.id): 1
            for document in {c.document for c in chunks}
            for c in pool.of_document(document)
        }
        grades.update((str(c.id), 2) for c in chunks)
        return grades

    async def generate(
        self,
        *,
        existing: Iterable[Mapping[str, Any]] = (),
        on_row: Callable[[dict[str, Any]], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> TestsetReport:
        """Generate until ``config.size`` rows (``existing`` ones count: a resumed file) or
        the budget ends. ``on_row`` gets each new row as it passes; ``progress`` the number
        of rows so far."""
        config, judge = self.config, self.judge
        if judge is None:
            raise ConfigError("generating a test set needs a judge (--judge-model)")
        report = TestsetReport()
        quotas = type_quotas(config.types, config.size)
        duplicates = DuplicateFilter(config.duplicate_threshold)
        done: set[tuple[str, ...]] = set()
        for row in existing:
            kind = str(row.get("type", "single"))
            quotas[kind] = quotas.get(kind, 0) - 1
            done.add(tuple(str(i) for i in row.get("reference_ids") or ()))
            report.rows.append(dict(row))
        report.resumed = len(report.rows)
        if report.rows:
            kept = [str(r["query"]) for r in report.rows]
            for text, vector in zip(kept, await self.searcher.embed_queries(kept), strict=True):
                duplicates.keep(text, vector)
        iterators = self.streams()
        quotas.setdefault("single", 0)
        report.skipped = Counter(self.pool().skipped)
        self._check_budget(next(self.pool().singles()))
        if progress is not None:
            progress(report.accepted)
        while any(need > 0 for need in quotas.values()):
            wave = self._wave(iterators, quotas, done, report)
            if not wave:
                break
            outcomes = await asyncio.gather(*(self._write(judge, c, s) for c, s in wave))
            await self._keep(outcomes, quotas, duplicates, report, on_row)
            if progress is not None:
                progress(report.accepted)
            if report.stopped is not None:
                break
        for kind, need in quotas.items():
            if need > 0:
                report.short[kind] = need
        if report.stopped is None and report.short:
            report.stopped = "every candidate chunk was tried"
        return report

    def _wave(
        self,
        iterators: dict[str, Iterator[Candidate]],
        quotas: dict[str, int],
        done: set[tuple[str, ...]],
        report: TestsetReport,
    ) -> list[tuple[Candidate, Voice]]:
        """The next candidates: as many per type as it still needs, at most ``concurrency``
        in all, within the budget (else ``report.stopped`` says why)."""
        wave: list[tuple[Candidate, Voice]] = []
        planned_tokens = 0
        for kind in sorted(quotas, key=lambda k: k == "single"):  # single last: it takes over
            taken = 0
            while taken < quotas[kind] and len(wave) < self.config.concurrency:
                candidate = next(iterators[kind], None)
                if candidate is None:
                    if kind != "single":
                        _hand_to_single(kind, quotas, taken, report)
                    break
                if candidate.key in done:
                    continue
                style = self._style(candidate)
                tokens = self._prompt_tokens(candidate, style)
                planned = REQUESTS_PER_CANDIDATE * (len(wave) + 1)
                stop = self._over_budget(report.usage, planned, planned_tokens + tokens)
                if stop is not None:
                    report.stopped = stop
                    return wave
                done.add(candidate.key)
                planned_tokens += tokens
                wave.append((candidate, style))
                taken += 1
        return wave

    async def _keep(
        self,
        outcomes: Sequence[_Outcome],
        quotas: dict[str, int],
        duplicates: DuplicateFilter,
        report: TestsetReport,
        on_row: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        """Count the wave's rejections; keep, in candidate order, the passed ones that
        duplicate no kept question."""
        passed = [o for o in outcomes if o.gate is None and o.qa is not None]
        texts = [o.qa.question.strip() for o in passed if o.qa is not None]
        vectors = await self.searcher.embed_queries(texts) if texts else np.zeros((0, 1))
        by_id = {id(o): v for o, v in zip(passed, vectors, strict=True)}
        for outcome in outcomes:
            report.candidates += 1
            report.usage.add(outcome.usage)
            if outcome.gate is not None:
                report.reject(outcome.gate, outcome.reason)
                continue
            vector = by_id.get(id(outcome))
            assert outcome.qa is not None
            question = outcome.qa.question.strip()
            duplicate = duplicates.problem(question, vector)
            if duplicate is not None:
                report.reject(*duplicate)
                continue
            duplicates.keep(question, vector)
            row = self._row(outcome)
            quotas[outcome.candidate.kind] -= 1
            report.rows.append(row)
            if on_row is not None:
                on_row(row)


def _take(streams: Mapping[str, Iterator[Candidate]], quotas: Mapping[str, int]) -> list[Candidate]:
    """The first candidates of each type as many as its quota; a type with too few hands
    the rest to ``single``."""
    picked: list[Candidate] = []
    extra = 0
    for kind, need in quotas.items():
        if kind == "single":
            continue
        got = list(itertools.islice(streams[kind], max(need, 0)))
        picked += got
        extra += max(need, 0) - len(got)
    picked += itertools.islice(streams["single"], max(quotas.get("single", 0), 0) + extra)
    return picked


def _hand_to_single(kind: str, quotas: dict[str, int], taken: int, report: TestsetReport) -> None:
    """``kind`` has no candidate left: what it still needs beyond ``taken`` (in flight)
    becomes ``single`` questions."""
    moved = quotas[kind] - taken
    if moved <= 0:
        return
    quotas[kind] = taken
    quotas["single"] = quotas.get("single", 0) + moved
    report.moved[kind] = report.moved.get(kind, 0) + moved
