"""The test set generator's parts: boilerplate reasons, the chunk order, groups, the mix,
options, and every quality gate on crafted candidates (groundedness with the scripted judge)."""

from __future__ import annotations

import asyncio
from collections import Counter

import numpy as np
import pytest

from ragmeter.errors import ConfigError
from ragmeter.judge.from_config import judge_from_config
from ragmeter.judge.usage import Usage
from ragmeter.knowledge.models import ChunkInfo
from ragmeter.testing import ScriptedJudgeServer
from ragmeter.testing._testset import scripted_testset_reply
from ragmeter.testsets.config import TestsetConfig, parse_styles, parse_types, type_quotas
from ragmeter.testsets.gates import (
    DuplicateFilter,
    grounded,
    language_problem,
    normalise,
    self_answer_problem,
    standalone_problem,
    unused_source_problem,
)
from ragmeter.testsets.prompts import generation_prompt
from ragmeter.testsets.selection import ChunkPool, skip_reason

PROSE = (
    '"Guide-Compost": Microbes need both nitrogen and carbon. Green material supplies nitrogen '
    "and brown material supplies carbon, so mix two parts brown with one part green."
)


def _chunk(i: int, text: str, document: str = "a.md") -> ChunkInfo:
    return ChunkInfo(id=i, document=document, position=i, content=text, meta={})


# -- boilerplate ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("![diagram](img/arch.png)\n\n<img src='x.png'>", "image_only"),
        (
            "```python\nimport os\nprint(os.getcwd())\nfor i in range(3): pass\n```\nRun it.",
            "code_only",
        ),
        (
            "- [Install](install.md)\n- [Quick start](start.md)\n- [FAQ](faq.md)\n- [API](api.md)",
            "navigation",
        ),
        ('"Guide-Intro": Welcome to the guide.', "too_short"),
        ("欢迎使用。", "too_short"),
        (PROSE, None),
        (
            "绿茶不发酵，芽叶细嫩，怕烫。水烧开后放凉到八十五度再冲泡，否则茶汤发苦、颜色变黄。",
            None,
        ),
    ],
)
def test_boilerplate_is_skipped_with_its_reason(text: str, reason: str | None) -> None:
    assert skip_reason(text) == reason


def test_prose_with_a_code_block_is_kept() -> None:
    text = PROSE + "\n\n```bash\nragmeter demo\n```"
    assert skip_reason(text) is None


def test_pool_counts_skips_and_orders_by_seed() -> None:
    chunks = [
        _chunk(i, PROSE.replace("Compost", f"Compost {i}"), f"d{i % 3}.md") for i in range(30)
    ]
    chunks.append(_chunk(99, "![only](a.png)"))
    vectors = lambda ids: np.eye(64, dtype=np.float32)[: len(ids)]  # noqa: E731
    first = ChunkPool.build(chunks, vectors, seed=1)
    again = ChunkPool.build(chunks, vectors, seed=1)
    other = ChunkPool.build(chunks, vectors, seed=2)
    assert first.skipped == Counter({"image_only": 1})
    assert [c.id for c in first.chunks] == [c.id for c in again.chunks]
    assert [c.id for c in first.chunks] != [c.id for c in other.chunks]
    assert len(first.chunks) == 30


def test_documents_are_drawn_in_proportion_to_their_content() -> None:
    long_text = " ".join(["The heap needs nitrogen and carbon in balance."] * 6)
    short_text = "The kettle boils water for tea in the kitchen every morning today."
    chunks = [_chunk(i, long_text, "long.md") for i in range(50)]
    chunks += [_chunk(100 + i, short_text, "short.md") for i in range(50)]
    vectors = lambda ids: np.eye(128, dtype=np.float32)[: len(ids)]  # noqa: E731
    pool = ChunkPool.build(chunks, vectors, seed=0)
    first = Counter(c.document for c in pool.chunks[:30])
    assert first["long.md"] > 2 * first["short.md"]


def test_language_choice_keeps_chunks_in_that_language() -> None:
    zh = "绿茶不发酵，芽叶细嫩，怕烫。水烧开后放凉到八十五度再冲泡，否则茶汤发苦、颜色变黄。"
    chunks = [_chunk(1, PROSE), _chunk(2, zh, "zh.md")]
    pool = ChunkPool.build(
        chunks, lambda ids: np.eye(4, dtype=np.float32)[: len(ids)], language="zh"
    )
    assert [c.id for c in pool.chunks] == [2]
    assert pool.skipped == Counter({"other_language": 1})


def test_multi_groups_share_named_terms_with_their_vector_neighbours() -> None:
    texts = [
        "Kubernetes operators deploy the Milvus vector store across several worker nodes.",
        "The Milvus vector store keeps embeddings in segments that Kubernetes schedules.",
        "Sourdough bread needs a lively starter, flour, water and a long cold proof.",
        "Roses want full sun, rich soil and deep watering once a week in summer.",
        "Tomatoes ripen faster on a warm sunny windowsill than in a dark cupboard.",
        *(
            f"Filler paragraph number {i} talks about weather, clouds and seasons."
            for i in range(20)
        ),
    ]
    tail = " This note belongs to a long list of notes kept for the team."
    chunks = [_chunk(i, t + tail) for i, t in enumerate(texts)]
    rng = np.random.default_rng(0)
    base = rng.normal(size=(len(texts), 16)).astype(np.float32)
    base[1] = base[0] + 0.01  # the two Milvus chunks are near each other
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    by_id = {c.id: base[i] for i, c in enumerate(chunks)}
    pool = ChunkPool.build(chunks, lambda ids: np.stack([by_id[i] for i in ids]))
    groups = {tuple(sorted(int(i) for i in g.key)) for g in list(pool.multis())}
    assert (0, 1) in groups
    assert all(len(g) <= 3 for g in groups)
    # BM25 must also find the partner: a lexical search that finds nothing leaves no group
    assert list(pool.multis(lambda query, k: [])) == []


# -- options and mix -----------------------------------------------------------------------


def test_type_quotas_add_up_to_the_size() -> None:
    assert type_quotas({"single": 0.6, "multi": 0.3, "abstract": 0.1}, 10) == {
        "single": 6,
        "multi": 3,
        "abstract": 1,
    }
    assert sum(type_quotas({"single": 0.5, "multi": 0.5}, 7).values()) == 7


@pytest.mark.parametrize(
    ("build", "option"),
    [
        (lambda: parse_types("single=0.5,cloze=0.5"), "--types"),
        (lambda: parse_types("single=lots"), "--types"),
        (lambda: parse_styles("shouting"), "--styles"),
        (lambda: TestsetConfig.build(size=0), "--size"),
        (lambda: TestsetConfig.build(size=3, max_requests=0), "--max-requests"),
        (lambda: TestsetConfig.build(size=3, types={"single": 0.0}), "--types"),
    ],
)
def test_bad_options_name_the_option(build: object, option: str) -> None:
    with pytest.raises(ConfigError, match=option):
        build()  # type: ignore[operator]


# -- gates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "According to the passage, what do microbes need?",
        "What does the context say about compost?",
        "In the text above, which material supplies carbon?",
        "文中提到绿茶用多少度的水？",
        "根据上文，红茶怎么泡？",
    ],
)
def test_questions_that_point_at_their_source_are_rejected(question: str) -> None:
    assert standalone_problem(question) is not None


@pytest.mark.parametrize(
    "question",
    ["What do compost microbes need besides carbon?", "绿茶应该用多少度的水冲泡？"],
)
def test_standalone_questions_pass(question: str) -> None:
    assert standalone_problem(question) is None


def test_a_question_holding_its_answer_is_rejected() -> None:
    answer = "Mix two parts brown with one part green."
    assert self_answer_problem(f"Is it true that {answer.lower()}", answer) is not None
    assert self_answer_problem("Why mix two parts brown with one part green?", answer) is not None
    assert self_answer_problem("How much brown material goes into a compost heap?", answer) is None
    assert (
        self_answer_problem("绿茶用八十度的水冲泡吗？绿茶用八十度的水冲泡", "绿茶用八十度的水冲泡")
        is not None
    )


def test_a_multi_answer_must_use_every_chunk() -> None:
    tea = '"Tea-Green": Green tea is brewed with water at eighty degrees for two minutes.'
    assert unused_source_problem("Microbes need nitrogen and carbon.", [PROSE, tea]) == (
        "the answer uses nothing of source chunk 2 of 2"
    )
    both = "Microbes need nitrogen and carbon. Green tea is brewed at eighty degrees."
    assert unused_source_problem(both, [PROSE, tea]) is None


def test_language_must_match() -> None:
    assert language_problem("What is green tea?", "A tea.", "en") is None
    assert language_problem("绿茶是什么？", "一种茶。", "en") is not None
    assert language_problem("What is green tea?", "绿茶是不发酵的茶。", "en") is not None
    assert language_problem("绿茶是什么？", "一种不发酵的茶。", "zh") is None


def test_duplicates_exact_and_near() -> None:
    keep = DuplicateFilter(threshold=0.95)
    v1 = np.array([1.0, 0.0, 0.0], np.float32)
    keep.keep("What do microbes need?", v1)
    assert keep.problem("what do MICROBES need", None) == (
        "duplicate",
        "the same question (normalised) was kept before",
    )
    near = np.array([0.99, 0.14, 0.0], np.float32)
    near /= np.linalg.norm(near)
    assert keep.problem("Which things do microbes require?", near)[0] == "near_duplicate"  # type: ignore[index]
    far = np.array([0.0, 1.0, 0.0], np.float32)
    assert keep.problem("How hot should green tea water be?", far) is None
    assert normalise("Ｗhat,  is IT?") == "whatisit"


def test_groundedness_uses_the_faithfulness_tasks() -> None:
    contexts = [PROSE]

    async def check(answer: str) -> tuple[str | None, Usage]:
        usage = Usage()
        judge = judge_from_config("scripted", base_url=server.url, cache=False)
        try:
            problem = await grounded(judge, "What do microbes need?", answer, contexts, "en", usage)
        finally:
            await judge.aclose()
        return problem, usage

    with ScriptedJudgeServer() as server:
        ok, usage = asyncio.run(check("Microbes need both nitrogen and carbon."))
        bad, _ = asyncio.run(
            check("Microbes need both nitrogen and carbon. Worms eat plastic bottles quickly.")
        )
    assert ok is None
    assert usage.requests == 2  # statements, then verdicts
    assert bad is not None and "plastic" in bad


# -- the scripted judge's generation answers -----------------------------------------------


@pytest.mark.parametrize("language", ["en", "zh"])
def test_scripted_generation_answers_from_the_chunk(language: str) -> None:
    passage = (
        PROSE
        if language == "en"
        else '"泡茶指南-绿茶": 绿茶不发酵，芽叶细嫩，怕烫。水烧开后放凉到 80 到 85 度再冲泡，否则茶汤发苦、颜色变黄。'
    )
    prompt = generation_prompt("single", [passage], language)  # type: ignore[arg-type]
    import json

    reply = scripted_testset_reply(json.loads(prompt.user))
    assert reply["answer"] in passage.replace("\n", " ")
    assert standalone_problem(reply["question"]) is None
    assert self_answer_problem(reply["question"], reply["answer"]) is None
    assert language_problem(reply["question"], reply["answer"], language) is None  # type: ignore[arg-type]


def test_a_type_without_groups_hands_its_share_to_single() -> None:
    from ragmeter.testsets.generate import TestsetReport, _hand_to_single, _take
    from ragmeter.testsets.selection import Candidate

    singles = [Candidate("single", (_chunk(i, PROSE),), "en") for i in range(5)]
    picked = _take({"multi": iter([]), "single": iter(singles)}, {"single": 2, "multi": 2})
    assert [c.kind for c in picked] == ["single"] * 4
    quotas, report = {"single": 1, "multi": 3}, TestsetReport()
    _hand_to_single("multi", quotas, 1, report)  # one multi still in flight
    assert quotas == {"single": 3, "multi": 1} and report.moved == {"multi": 2}


def test_a_persona_and_a_style_are_in_the_prompt() -> None:
    en = generation_prompt("single", [PROSE], "en", "keywords", persona="a new gardener")
    zh = generation_prompt("multi", [PROSE, PROSE], "zh", "typos", persona="新手")
    assert "keyword search query" in en.system and "a new gardener" in en.system
    assert "错别字" in zh.system and "新手" in zh.system
    with pytest.raises(ConfigError, match="--personas"):
        TestsetConfig.build(size=1, personas=("",))


def test_the_duplicate_filter_grows_past_its_first_block() -> None:
    keep = DuplicateFilter(threshold=0.95)
    basis = np.eye(64, dtype=np.float32)
    for i in range(40):
        keep.keep(f"question {i}", basis[i])
    assert keep.problem("another question", basis[39])[0] == "near_duplicate"  # type: ignore[index]
    assert keep.problem("another question", basis[0])[0] == "near_duplicate"  # type: ignore[index]
    assert keep.problem("another question", basis[50]) is None


def test_the_summary_shows_an_example_column_only_when_a_question_was_rejected() -> None:
    from ragmeter.cli.testset import _summary_table
    from ragmeter.testsets.generate import TestsetReport

    clean = TestsetReport(rows=[{"query": "q"}], candidates=1)
    assert [c.header for c in _summary_table(clean, 1).columns] == ["", "count"]
    rejected = TestsetReport(rows=[], candidates=1)
    rejected.reject("grounded", "the answer says more than the chunk")
    table = _summary_table(rejected, 1)
    assert [c.header for c in table.columns][-1] == "example of a rejected question"
    assert "the answer says more than the chunk" in list(table.columns[-1].cells)
