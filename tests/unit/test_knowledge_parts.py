"""Readers, tokens, fusion and the two indexes, each against a hand-worked or brute-force
reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragmeter.knowledge.lexical_index import LexicalIndex
from ragmeter.knowledge.readers import DocumentReadError, read_document
from ragmeter.knowledge.search import fuse_rrf
from ragmeter.knowledge.tokenize import tokenize
from ragmeter.knowledge.vector_index import VectorIndex
from tests.pdf_files import pdf, shown_text


def test_pdf_text_is_read(tmp_path: Path) -> None:
    path = tmp_path / "guide.pdf"
    path.write_bytes(pdf(shown_text("Turn the compost heap every week.")))
    assert "Turn the compost heap every week." in read_document(path)


def test_broken_pdf_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4 this is not a pdf")
    with pytest.raises(DocumentReadError, match=r"broken\.pdf"):
        read_document(path)


def test_html_becomes_markdown_with_headers(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>t</title><script>var x = 1;</script></head><body>"
        "<h1>Tea</h1><p>Green tea likes <b>80 °C</b>\n water.</p>"
        "<h2>Storage</h2><ul><li>dry</li><li>dark</li></ul>"
        "<pre>keep   cool\n  and sealed</pre></body></html>",
        encoding="utf-8",
    )
    assert read_document(path) == (
        "# Tea\n\nGreen tea likes 80 °C water.\n\n## Storage\n\n- dry\n- dark\n\n"
        "```\nkeep   cool\n  and sealed\n```"
    )


def test_text_encodings(tmp_path: Path) -> None:
    utf8 = tmp_path / "a.txt"
    utf8.write_bytes("\ufeff绿茶".encode())
    assert read_document(utf8) == "绿茶"
    gbk = tmp_path / "b.md"
    gbk.write_bytes("乌龙茶".encode("gb18030"))
    assert read_document(gbk) == "乌龙茶"
    with pytest.raises(DocumentReadError, match="unsupported file type"):
        read_document(tmp_path / "c.docx")


def test_tokens_are_stemmed_english_and_jieba_chinese() -> None:
    assert tokenize("The Operators of the workflows") == ["oper", "workflow"]
    tokens = tokenize("绿茶的水温是多少度 green tea")
    assert "绿茶" in tokens and "水温" in tokens and "green" in tokens
    assert "的" not in tokens and "是" not in tokens


def test_reciprocal_rank_fusion_by_hand() -> None:
    vector = [(1, 0.9), (2, 0.8), (3, 0.7)]
    lexical = [(3, 12.0), (4, 9.0), (1, 3.0)]
    fused = dict(fuse_rrf([vector, lexical], top_k=4, k=60))
    assert fused[1] == pytest.approx(1 / 61 + 1 / 63)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[4] == pytest.approx(1 / 62)
    assert [c for c, _ in fuse_rrf([vector, lexical], top_k=2, k=60)] == [1, 3]


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    matrix = rng.standard_normal((n, d)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_flat_index_matches_brute_force(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors, queries = _unit(rng, 500, 32), _unit(rng, 40, 32)
    ids = np.arange(1000, 1500)
    index = VectorIndex.build(vectors, ids)
    scores, found = index.search(queries, 5)
    brute = queries @ vectors.T
    expected = np.argsort(-brute, axis=1)[:, :5]
    assert (found == ids[expected]).all()
    assert np.allclose(scores, np.take_along_axis(brute, expected, axis=1), atol=1e-5)
    index.save(tmp_path)
    again = VectorIndex.load(tmp_path)
    assert (again.search(queries, 5)[1] == found).all()
    assert np.allclose(again.vectors_of(ids[[3, 10]]), vectors[[3, 10]])


def test_hnsw_above_the_threshold_finds_the_true_neighbours() -> None:
    rng = np.random.default_rng(3)
    vectors, queries = _unit(rng, 2000, 32), _unit(rng, 50, 32)
    index = VectorIndex.build(vectors, np.arange(2000), hnsw_threshold=1000)
    assert index.kind == "hnsw"
    _, found = index.search(queries, 10)
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    recall = np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)])
    assert recall > 0.95


def test_search_returns_at_most_what_the_index_holds() -> None:
    index = VectorIndex.build(np.eye(3, dtype=np.float32), np.array([5, 6, 7]))
    scores, ids = index.search(np.eye(3, dtype=np.float32)[:1], 5)
    assert ids.shape == scores.shape == (1, 3)
    assert ids[0, 0] == 5 and set(ids[0].tolist()) == {5, 6, 7}
    huge = index.search(np.eye(3, dtype=np.float32), 10**9)  # allocates 3 columns, not 10**9
    assert huge[1].shape == (3, 3)
    empty = VectorIndex.build(np.zeros((0, 3), np.float32), np.array([], dtype=np.int64))
    assert empty.search(np.ones((2, 3), np.float32), 4)[1].shape == (2, 0)


def test_bm25_ranks_by_term_matches_and_skips_non_matches(tmp_path: Path) -> None:
    texts = [
        "compost heaps need turning every week",
        "green tea likes water at eighty degrees",
        "turning compost compost adds air",
        "绿茶的水温是八十度",
    ]
    index = LexicalIndex.build(texts, np.array([10, 11, 12, 13]))
    results = index.search(["compost turning", "绿茶 水温", "nothing matches here"], 3)
    assert [c for c, _ in results[0]] == [12, 10]  # more matches of 'compost' ranks first
    assert [c for c, _ in results[1]] == [13]
    assert results[2] == []
    index.save(tmp_path)
    assert LexicalIndex.load(tmp_path).search(["compost turning"], 3) == results[:1]


def test_bm25_over_stop_words_only_has_no_hits_and_replaces_an_older_index(
    tmp_path: Path,
) -> None:
    LexicalIndex.build(["compost heaps need turning"], np.array([1])).save(tmp_path)
    index = LexicalIndex.build(["the a an. of to!", "我们 的"], np.array([2, 3]))
    assert len(index) == 2 and index.search(["the compost", "的"], 5) == [[], []]
    index.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    assert len(loaded) == 2 and loaded.search(["compost heaps"], 5) == [[]]
