"""A BERT sentence encoder in numpy: the forward pass of all-MiniLM-L6-v2 without torch.

Loading torch and sentence-transformers takes seconds; this loads the same weights from
``model.safetensors`` and the same tokenizer from ``tokenizer.json`` in a fraction of that, and
gives the same vectors (mean pooling over the attention mask, then L2 normalisation)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["BertEncoder", "erf"]


#: Numerical Recipes' ``erfcc`` coefficients, highest power first
_ERFC = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
)
#: elements per block of the elementwise kernels: small enough to stay in the CPU's cache
_BLOCK = 1 << 15


def _erf_into(x: np.ndarray, out: np.ndarray, t: np.ndarray) -> None:
    """``out = erf(x)`` for 1-d blocks, with ``t`` as scratch; no allocation."""
    np.abs(x, out=out)
    np.minimum(out, 4.0, out=out)  # erf is +-1 beyond 4; also keeps exp() out of subnormals
    np.multiply(out, 0.5, out=t)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = np.full_like(t, _ERFC[0])
    for c in _ERFC[1:]:
        poly *= t
        poly += c
    np.square(out, out=out)
    np.subtract(poly, out, out=out)
    np.exp(out, out=out)
    out *= t  # erfc(|x|)
    np.subtract(1.0, out, out=out)
    np.copysign(out, x, out=out)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise, to float32 precision (relative error of erfc < 1.2e-7,
    Numerical Recipes' ``erfcc``); numpy has none and scipy costs a third of a second to load."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    t = np.empty_like(flat[:_BLOCK])
    for i in range(0, flat.size, _BLOCK):
        _erf_into(flat[i : i + _BLOCK], out[i : i + _BLOCK], t[: flat[i : i + _BLOCK].size])
    return out.reshape(np.shape(x))


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, ``x * (1 + erf(x / sqrt 2)) / 2``, in place on a contiguous array,
    block by block so that every pass stays in the cache."""
    flat = x.reshape(-1)
    size = min(_BLOCK, flat.size)
    scaled, phi, t = (np.empty(size, dtype=x.dtype) for _ in range(3))
    for i in range(0, flat.size, _BLOCK):
        block = flat[i : i + _BLOCK]
        n = block.size
        np.multiply(block, 1.0 / math.sqrt(2.0), out=scaled[:n])
        _erf_into(scaled[:n], phi[:n], t[:n])
        phi[:n] += 1.0
        phi[:n] *= 0.5
        block *= phi[:n]
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis (a new array)."""
    centered: np.ndarray = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(centered), axis=-1, keepdims=True)
    centered /= np.sqrt(variance + eps)
    centered *= weight
    centered += bias
    return centered


def _softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place. Exponents are floored at -80 (e^-80 ~ 1e-35, nothing
    beside the row's largest weight, 1): below that exp() makes subnormals, many times slower."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.maximum(scores, -80.0, out=scores)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


@dataclass(frozen=True)
class _Layer:
    qkv_weight: np.ndarray  # (hidden, 3 * hidden): x @ qkv_weight is query, key and value
    qkv_bias: np.ndarray
    out_weight: np.ndarray
    out_bias: np.ndarray
    attn_norm: tuple[np.ndarray, np.ndarray]
    up_weight: np.ndarray
    up_bias: np.ndarray
    down_weight: np.ndarray
    down_bias: np.ndarray
    ffn_norm: tuple[np.ndarray, np.ndarray]


def _layers(weights: dict[str, np.ndarray], count: int) -> list[_Layer]:
    def w(name: str) -> np.ndarray:
        return weights[name].T  # a view: BLAS multiplies by a transposed matrix as fast

    layers = []
    for i in range(count):
        p = f"encoder.layer.{i}.attention."
        qkv = [f"{p}self.{n}" for n in ("query", "key", "value")]
        o = f"encoder.layer.{i}."
        layers.append(
            _Layer(
                qkv_weight=np.concatenate([weights[f"{n}.weight"] for n in qkv]).T,
                qkv_bias=np.concatenate([weights[f"{n}.bias"] for n in qkv]),
                out_weight=w(f"{p}output.dense.weight"),
                out_bias=weights[f"{p}output.dense.bias"],
                attn_norm=(
                    weights[f"{p}output.LayerNorm.weight"],
                    weights[f"{p}output.LayerNorm.bias"],
                ),
                up_weight=w(f"{o}intermediate.dense.weight"),
                up_bias=weights[f"{o}intermediate.dense.bias"],
                down_weight=w(f"{o}output.dense.weight"),
                down_bias=weights[f"{o}output.dense.bias"],
                ffn_norm=(
                    weights[f"{o}output.LayerNorm.weight"],
                    weights[f"{o}output.LayerNorm.bias"],
                ),
            )
        )
    return layers


class BertEncoder:
    """Tokenise, run the encoder, mean-pool and normalise: sentence-transformers' pipeline for
    a BERT model folder (``config.json``, ``model.safetensors``, ``tokenizer.json``)."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        st_config_file = folder / "sentence_bert_config.json"
        st_config = (
            json.loads(st_config_file.read_text(encoding="utf-8"))
            if st_config_file.is_file()
            else {}
        )
        self.max_length = min(
            int(st_config.get("max_seq_length", config["max_position_embeddings"])),
            int(config["max_position_embeddings"]),
        )
        self.lowercase = bool(st_config.get("do_lower_case", False))
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config["layer_norm_eps"])
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=self.max_length)
        tokenizer.no_padding()  # the file pads to a fixed 128; texts are packed, never padded
        self._tokenizer = tokenizer
        weights = load_file(str(folder / "model.safetensors"))
        weights = {
            k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in weights.items()
        }
        self._word = weights["embeddings.word_embeddings.weight"]
        self._position = weights["embeddings.position_embeddings.weight"]
        self._token_type = weights["embeddings.token_type_embeddings.weight"]
        self._embed_norm = (
            weights["embeddings.LayerNorm.weight"],
            weights["embeddings.LayerNorm.bias"],
        )
        self._layers = _layers(weights, int(config["num_hidden_layers"]))

    @property
    def dimension(self) -> int:
        return self.hidden

    def tokenize(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's token ids (``[CLS] ... [SEP]``, at most ``max_length``); texts are
        stripped as sentence-transformers does."""
        cleaned = [t.strip().lower() if self.lowercase else t.strip() for t in texts]
        return [np.asarray(e.ids, dtype=np.int64) for e in self._tokenizer.encode_batch(cleaned)]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors ``(len(texts), hidden)``, the mean of each text's last hidden states.

        The texts' tokens are packed into one ``(tokens, hidden)`` matrix with no padding: the
        dense layers see every token once, attention runs text by text. A padded batch gives
        the same numbers (a masked key's weight is exactly 0), after more work."""
        if not texts:
            return np.zeros((0, self.hidden), dtype=np.float32)
        ids = self.tokenize(texts)
        lengths = [len(i) for i in ids]
        spans = np.cumsum([0, *lengths])
        x = self._embed(np.concatenate(ids), lengths)
        for layer in self._layers:
            x = self._layer(x, spans, layer)
        pooled = np.add.reduceat(x, spans[:-1], axis=0) / np.asarray(lengths, np.float32)[:, None]
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        out: np.ndarray = (pooled / norms).astype(np.float32, copy=False)
        return out

    def _embed(self, ids: np.ndarray, lengths: list[int]) -> np.ndarray:
        """Word + position + token type (0 for a single sentence), normalised."""
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self._word[ids] + self._position[positions] + self._token_type[0]
        return _layer_norm(x, *self._embed_norm, self.eps)

    def _attention(self, qkv: np.ndarray) -> np.ndarray:
        """Self-attention of one text: ``qkv`` is ``(length, 3 * hidden)``, the result
        ``(length, hidden)``."""
        length = qkv.shape[0]
        heads, size = self.heads, self.hidden // self.heads
        # (3, heads, length, size), contiguous: numpy's batched matmul uses BLAS only then
        parts = np.ascontiguousarray(qkv.reshape(length, 3, heads, size).transpose(1, 2, 0, 3))
        query, key, value = parts[0], parts[1], parts[2]
        query *= 1.0 / math.sqrt(size)
        scores = query @ key.transpose(0, 2, 1)
        context: np.ndarray = _softmax(scores) @ value
        return context.transpose(1, 0, 2).reshape(length, self.hidden)

    def _layer(self, x: np.ndarray, spans: np.ndarray, layer: _Layer) -> np.ndarray:
        """One encoder layer on the packed tokens ``x``, ``(tokens, hidden)``."""
        qkv = x @ layer.qkv_weight
        qkv += layer.qkv_bias
        context = np.empty_like(x)
        for start, end in itertools.pairwise(spans):
            context[start:end] = self._attention(qkv[start:end])
        attended = context @ layer.out_weight
        attended += layer.out_bias
        attended += x
        x = _layer_norm(attended, *layer.attn_norm, self.eps)
        up = x @ layer.up_weight
        up += layer.up_bias
        down = _gelu(up) @ layer.down_weight
        down += layer.down_bias
        down += x
        return _layer_norm(down, *layer.ffn_norm, self.eps)
