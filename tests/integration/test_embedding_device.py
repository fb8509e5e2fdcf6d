"""The local embedder's ``device``: ``cpu`` is the numpy path (no torch), ``cuda`` runs the same
model with torch on a GPU, ``auto`` picks. CI has no GPU, so the torch code runs here on torch's
CPU device and must give the numpy path's vectors; ``cuda`` without a GPU fails naming why."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ragmeter.config import KnowledgeConfig, Settings, load_settings
from ragmeter.embeddings import LocalEmbedder, default_model_path, embedder_by_name
from ragmeter.embeddings.local import load_torch_model
from ragmeter.errors import ConfigError, EmbeddingError
from tests.integration.helpers import dbgpt_docs, run

pytestmark = pytest.mark.slow


def _paragraphs(count: int) -> list[str]:
    """``count`` paragraphs of DB-GPT's English docs, short and long (some past 256 tokens)."""
    docs = dbgpt_docs()
    assert docs is not None, "DB-GPT's docs corpus (shared/corpora/dbgpt-docs) is missing"
    found: list[str] = []
    for page in sorted((docs / "en").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        found += [p for p in re.split(r"\n\s*\n", text) if len(p.strip()) > 40]
        if len(found) >= count:
            break
    found = found[: count - 1]
    return [*found, " ".join(found)]  # the last far past the 256-token cut


def _gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def test_the_torch_code_on_torch_cpu_gives_the_numpy_vectors() -> None:
    texts = _paragraphs(40)
    numpy_path = LocalEmbedder().embed_sync(texts)
    torch_path = load_torch_model(default_model_path(), "cpu").encode(texts, 16)
    assert torch_path.shape == numpy_path.shape == (len(texts), 384)
    assert torch_path.dtype == np.float32
    assert np.abs(torch_path - numpy_path).max() < 1e-4
    cosines = np.sum(torch_path * numpy_path, axis=1)
    assert cosines.min() > 0.9999
    assert load_torch_model(default_model_path(), "cpu").encode([], 16).shape == (0, 384)


def test_cuda_without_a_gpu_fails_naming_the_device_and_why() -> None:
    import torch

    embedder = LocalEmbedder(device="cuda")  # decided when embedding: a driver needs no GPU
    if _gpu():  # a machine with a GPU runs the path instead
        vectors = embedder.embed_sync(["how do I add documents", "install DB-GPT"])
        reference = LocalEmbedder().embed_sync(["how do I add documents", "install DB-GPT"])
        assert np.abs(vectors - reference).max() < 1e-3
        return
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed_sync(["how do I add documents"])
    assert str(caught.value) == (
        f'device \'cuda\': torch {torch.__version__} sees no CUDA GPU; use device = "cpu" or "auto"'
    )


def test_auto_is_the_numpy_path_without_a_gpu() -> None:
    texts = _paragraphs(6)
    auto = LocalEmbedder(device="auto")
    expected = "cuda" if _gpu() else "cpu"
    assert auto.resolved_device() == expected
    if expected == "cpu":  # the numpy path itself: the very same bits
        assert np.array_equal(auto.embed_sync(texts), LocalEmbedder().embed_sync(texts))


def test_an_unknown_device_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown embedding device 'gpu': use cpu, cuda or auto"):
        LocalEmbedder(device="gpu")
    config = tmp_path / "ragmeter.toml"
    config.write_text('[knowledge]\ndevice = "gpu"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"knowledge\.device: .*'cpu', 'cuda' or 'auto'"):
        load_settings(config)
    config.write_text('[knowledge]\ndevice = "auto"\n', encoding="utf-8")
    assert load_settings(config).knowledge.device == "auto"
    assert Settings().knowledge.device == "cpu"


def test_the_setting_builds_the_local_embedder_on_its_device() -> None:
    settings = Settings(knowledge=KnowledgeConfig(device="cuda"))
    local = embedder_by_name("local", settings=settings)
    assert isinstance(local, LocalEmbedder) and local.device == "cuda"
    default = embedder_by_name(None)
    assert isinstance(default, LocalEmbedder) and default.device == "cpu"


def test_space_add_takes_the_device(home: Path, tmp_path: Path) -> None:
    """``--device`` and ``[knowledge] device`` reach a local add; a bad one is bad input."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Install\n\nRun pip install dbgpt.\n", encoding="utf-8")
    made = run("space", "create", "docs", home=home)
    assert made.returncode == 0, made.stderr
    bad = run("space", "add", "docs", str(folder), "--device", "gpu", home=home)
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "unknown embedding device 'gpu'" in bad.stderr
    if not _gpu():
        cuda = run("space", "add", "docs", str(folder), "--device", "cuda", home=home)
        assert cuda.returncode != 0, cuda.stdout
        assert "device 'cuda'" in cuda.stderr and "sees no CUDA GPU" in cuda.stderr
        (home / "ragmeter.toml").write_text('[knowledge]\ndevice = "cuda"\n', encoding="utf-8")
        from_config = run("space", "add", "docs", str(folder), home=home)
        assert from_config.returncode != 0, from_config.stdout
        assert "device 'cuda'" in from_config.stderr
    added = run("space", "add", "docs", str(folder), "--device", "cpu", home=home)
    assert added.returncode == 0, added.stderr
    assert "added 1" in added.stdout, added.stdout
