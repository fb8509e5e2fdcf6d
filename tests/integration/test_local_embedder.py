"""The default local embedder: MiniLM from the installed package, offline, loaded once, run in
numpy; its vectors are sentence-transformers' own."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ragmeter.embeddings import Embedder, LocalEmbedder, default_model_path
from ragmeter.embeddings.local import load_model

pytestmark = pytest.mark.slow

#: short and long (beyond the 256-token cut), English and Chinese, with stray whitespace
TEXTS = [
    "How do I turn a compost heap?",
    "  Turning the compost pile adds oxygen.\n",
    "Stock prices fell.",
    "如何翻动堆肥？翻堆可以增加氧气。",
    "知识库把文档切成块，然后计算向量并建立索引。" * 30,
    " ".join(
        f"Paragraph {i} explains how retrieval-augmented generation works." for i in range(60)
    ),
    "a",
    "",
]


async def test_local_embeddings_are_unit_and_meaningful() -> None:
    embedder = LocalEmbedder()
    assert isinstance(embedder, Embedder)
    vectors = await embedder.embed(
        [
            "How do I turn a compost heap?",
            "Turning the compost pile adds oxygen.",
            "Stock prices fell.",
        ]
    )
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    assert (await embedder.embed([])).shape == (0, 384)


def test_vectors_equal_sentence_transformers() -> None:
    sentence_transformers = pytest.importorskip("sentence_transformers")
    path = default_model_path()
    encoder = load_model(path)
    lengths = [len(ids) for ids in encoder.tokenize(TEXTS)]
    assert max(lengths) == 256 and min(lengths) == 2  # cut at 256; [CLS] [SEP] for ""
    reference = sentence_transformers.SentenceTransformer(
        str(path), device="cpu", local_files_only=True
    ).encode(TEXTS, batch_size=4, convert_to_numpy=True, normalize_embeddings=True)
    # several batches over two workers, and one text at a time: the same vectors
    ours = LocalEmbedder(batch_size=3, workers=2).embed_sync(TEXTS)
    one_by_one = np.concatenate([LocalEmbedder().embed_sync([text]) for text in TEXTS])
    assert ours.shape == reference.shape == (len(TEXTS), 384)
    assert np.allclose(ours, reference, atol=1e-5), np.abs(ours - reference).max()
    assert np.allclose(one_by_one, reference, atol=1e-5), np.abs(one_by_one - reference).max()


def test_model_is_loaded_once_per_process() -> None:
    path = default_model_path()
    assert load_model(path) is load_model(path)
    assert path.name == "model"
    assert (path / "model.safetensors").is_file()


def test_embedding_loads_no_torch() -> None:
    """The query path runs without torch, sentence-transformers or transformers: by default
    and with ``[knowledge] device = "cpu"`` said."""
    code = (
        "import sys; from ragmeter.embeddings import LocalEmbedder, embedder_by_name; "
        "from ragmeter.config import Settings, KnowledgeConfig; "
        "v = LocalEmbedder().embed_sync(['how do I brew green tea']); "
        "said = Settings(knowledge=KnowledgeConfig(device='cpu')); "
        "e = embedder_by_name('local', settings=said); "
        "w = e.embed_sync(['how do I brew green tea']); "
        "heavy = ('torch', 'sentence_transformers', 'transformers'); "
        "print(v.shape, e.device, w.shape, [m for m in heavy if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1, 384) cpu (1, 384) []"
