"""Chunkers: DB-GPT's markdown-header format on hand-written documents, and invariants of
the size splitter (bounds, coverage, contiguity) under Hypothesis."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.knowledge._markdown import markdown_sections
from ragmeter.knowledge._split import split_by_size
from ragmeter.knowledge.chunking import ChunkingConfig, chunk_text

DOC = """---
title: AWEL
sidebar_position: 2
---

Intro line before any header.

# What is AWEL?

AWEL is a workflow language
for LLM applications.

It has layers.

## AWEL Design

AWEL is divided into three levels.

```python
# not a header: inside a code fence
x = 1

y = 2
```

### Operators ###

Operators are basic atoms.

## Examples
Built-in examples exist.

# Second top
Text under the second top header.
"""


def test_markdown_sections_follow_the_header_path() -> None:
    sections = markdown_sections(DOC)
    assert [s.path for s in sections] == [
        (),
        ("What is AWEL?",),
        ("What is AWEL?", "AWEL Design"),
        ("What is AWEL?", "AWEL Design", "Operators"),
        ("What is AWEL?", "Examples"),
        ("Second top",),
    ]
    # the front matter is gone; lines of a paragraph stay together, paragraphs are apart
    assert sections[0].text == "Intro line before any header."
    assert (
        sections[1].text == "AWEL is a workflow language\nfor LLM applications.\n\nIt has layers."
    )
    # a fenced block keeps its '#' line, its indentation-free code and its blank line
    design = sections[2].text
    assert "# not a header: inside a code fence" in design
    assert "x = 1\n\ny = 2" in design


def test_markdown_chunks_are_in_dbgpt_format() -> None:
    chunks = chunk_text(DOC, ChunkingConfig(strategy="markdown"))
    contents = [c.content for c in chunks]
    assert contents[0] == '"": Intro line before any header.'
    assert contents[1].startswith('"What is AWEL?": AWEL is a workflow language')
    assert contents[2].startswith('"What is AWEL?-AWEL Design": AWEL is divided into three levels.')
    assert contents[3] == '"What is AWEL?-AWEL Design-Operators": Operators are basic atoms.'
    assert contents[4] == '"What is AWEL?-Examples": Built-in examples exist.'
    assert contents[5] == '"Second top": Text under the second top header.'
    assert chunks[3].meta == {"headers": ["What is AWEL?", "AWEL Design", "Operators"]}


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("# a #", "a"),
        ("# a#", "a#"),
        ("# ###", "###"),
        ("#  a  ##  ", "a"),
        ("#\tx\t#", "x"),
        ("# a # b #", "a # b"),
        ("## b \\#", "b \\#"),
        ("#", ""),
    ],
)
def test_header_titles_lose_their_closing_hashes(line: str, title: str) -> None:
    (section,) = markdown_sections(line + "\nbody")
    assert section.path == (title,)


@pytest.mark.parametrize("line", ["####### x", "#x", "    # indented code"])
def test_lines_that_are_not_headers_stay_text(line: str) -> None:
    (section,) = markdown_sections(line + "\nbody")
    assert section.path == () and section.text.startswith(line.strip())


@pytest.mark.parametrize("run", [" ", "\t", " #", "\t #"])
def test_a_header_line_of_a_million_blanks_is_read_in_bounded_time(run: str) -> None:
    """Patterns that backtracked over runs of blanks took 22 s for 40,000 of them (quadratic:
    hours for a million); the generous deadline is missed by orders of magnitude if they return."""
    started = time.monotonic()
    sections = markdown_sections("# x" + run * (1_000_000 // len(run)) + "y\nbody\n")
    assert time.monotonic() - started < 5
    assert sections[0].path[0].startswith("x") and sections[0].path[0].endswith("y")
    assert sections[0].text == "body"


def test_header_only_sections_make_no_chunk() -> None:
    assert chunk_text("# Title\n\n## Sub\n", ChunkingConfig()) == []


def test_an_over_long_section_is_resplit_by_size_with_its_prefix() -> None:
    body = " ".join(f"Sentence number {i} talks about compost." for i in range(60))
    config = ChunkingConfig(strategy="markdown", chunk_size=200, chunk_overlap=30)
    chunks = chunk_text(f"# Guide\n\n## Heaps\n\n{body}\n", config)
    assert len(chunks) > 5
    for part, chunk in enumerate(chunks):
        assert chunk.content.startswith('"Guide-Heaps": ')
        assert len(chunk.content) <= 200
        assert chunk.meta == {"headers": ["Guide", "Heaps"], "part": part}
    # consecutive pieces share text (the overlap)
    first = chunks[0].content.removeprefix('"Guide-Heaps": ')
    second = chunks[1].content.removeprefix('"Guide-Heaps": ')
    assert first[-20:].split()[-1] in second[:60]


def test_long_header_titles_are_stored_shortened_in_each_chunk() -> None:
    """Every chunk of a section carries its header titles: a title of 33,000 characters over
    400 small sections would be stored 400 times; each is kept to 200 characters."""
    titles = ["#" * level + " " + f"H{level}" * 16_500 for level in range(1, 6)]
    sections = [f"###### s{i}\nbody {i}\n" for i in range(400)]
    chunks = chunk_text("\n".join(titles + sections), ChunkingConfig(strategy="markdown"))
    assert len(chunks) == 400
    stored = sum(len(title) for chunk in chunks for title in chunk.meta["headers"])
    assert stored <= 400 * 6 * 200, stored
    assert chunks[0].meta["headers"][0] == "H1" * 99 + "H…"
    assert chunks[7].meta["headers"][-1] == "s7"


def test_paragraph_and_separator_strategies() -> None:
    text = "First para.\n\nSecond para\nstill second.\n\n\n\nThird."
    paragraphs = chunk_text(text, ChunkingConfig(strategy="paragraph"))
    assert [c.content for c in paragraphs] == [
        "First para.",
        "Second para\nstill second.",
        "Third.",
    ]
    pieces = chunk_text("a|b||c", ChunkingConfig(strategy="separator", separator="|"))
    assert [c.content for c in pieces] == ["a", "b", "c"]


def test_chinese_text_splits_at_sentence_ends() -> None:
    text = "".join(f"第{i}句话讲的是茶叶的冲泡方法。" for i in range(40))
    chunks = chunk_text(text, ChunkingConfig(strategy="size", chunk_size=60, chunk_overlap=0))
    assert all(len(c.content) <= 60 for c in chunks)
    assert all(c.content.endswith("。") for c in chunks)
    assert "".join(c.content for c in chunks) == text


def test_bad_chunking_configs_are_refused() -> None:
    with pytest.raises(ValueError, match="chunk_overlap"):
        ChunkingConfig(chunk_size=100, chunk_overlap=100)
    with pytest.raises(ValueError, match="separator"):
        ChunkingConfig(strategy="separator", separator="")


words = st.sampled_from(["compost", "tea", "soil", "茶叶", "浇水", "a", "layer", "x" * 30])
texts = st.lists(
    st.tuples(words, st.sampled_from([" ", " ", "\n", "\n\n", ". ", "。", ""])), max_size=120
).map(lambda pairs: "".join(w + s for w, s in pairs))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@given(texts, st.integers(min_value=8, max_value=120), st.integers(min_value=0, max_value=40))
@settings(max_examples=300, deadline=None)
def test_size_chunks_are_bounded_contiguous_and_cover_the_text(
    text: str, size: int, overlap: int
) -> None:
    chunks = split_by_size(text, size, overlap)
    for chunk in chunks:
        assert 0 < len(chunk) <= size
        assert chunk == chunk.strip()
        assert chunk in text  # a chunk is a contiguous piece of the text
    if overlap == 0:
        assert _squash("".join(chunks)) == _squash(text)
    else:  # with overlap, the chunks taken in order still cover the text without a gap
        whole, covered = _squash(text), 0
        for chunk in map(_squash, chunks):
            starts = [i for i in range(covered + 1) if whole.startswith(chunk, i)]
            assert starts, f"gap before {chunk!r}"
            covered = max(covered, max(starts) + len(chunk))
        assert covered == len(whole)
