"""Tokens for lexical retrieval: stemmed English words without stop words, and jieba words
for Chinese text (loaded only when Chinese text appears)."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from functools import cache
from typing import Any

__all__ = ["has_cjk", "tokenize", "tokenize_many"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[a-z0-9]+")
_SPLIT = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)")

_EN_STOP_WORDS = """a about above after again all am an and any are as at be been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers him his how i if in into is it its itself just me more most my no
nor not now of off on once only or other our ours out over own same she should so some such than
that the their theirs them then there these they this those through to too under until up very was
we were what when where which while who whom why will with would you your yours"""
_ZH_STOP_WORDS = """的 了 是 在 和 与 及 或 也 就 都 而 且 把 被 让 对 从 向 为 以 于
之 其 这 那 这个 那个 一个 我 你 他 她 它 我们 你们 他们 吗 呢 吧 啊 么 什么 怎么
如何 哪些 哪个 可以 能 会 要 有 没有 不 个 中 上 下 等"""
_EN_STOP = frozenset(re.split(r"\s+", _EN_STOP_WORDS))
_ZH_STOP = frozenset(re.split(r"\s+", _ZH_STOP_WORDS))

_jieba_lock = threading.Lock()


@cache
def _jieba() -> Any:
    with _jieba_lock:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        return jieba


@cache
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def tokenize(text: str) -> list[str]:
    """Lower-cased, stemmed English words and jieba's search-mode Chinese words, stop words
    dropped, in text order."""
    lowered = text.lower()
    if not has_cjk(lowered):
        words = [w for w in _WORD.findall(lowered) if w not in _EN_STOP]
        return list(_stemmer().stemWords(words)) if words else []
    tokens: list[str] = []
    for part in _SPLIT.split(lowered):
        if not part:
            continue
        if _CJK.fullmatch(part):
            tokens.extend(w for w in _jieba().lcut_for_search(part) if w not in _ZH_STOP)
        else:
            words = [w for w in _WORD.findall(part) if w not in _EN_STOP]
            if words:
                tokens.extend(_stemmer().stemWords(words))
    return tokens


def tokenize_many(texts: Sequence[str]) -> list[list[str]]:
    return [tokenize(text) for text in texts]
