"""An approximate token count (words, numbers, single Han characters and punctuation), used
where a server reports no usage and by the scripted judge server."""

from __future__ import annotations

import re

__all__ = ["count_tokens"]

_TOKEN = re.compile(r"[A-Za-z]+|\d{1,3}|[\u4e00-\u9fff]|[^\sA-Za-z\d\u4e00-\u9fff]")


def count_tokens(text: str) -> int:
    """About what a BPE tokenizer gives for English and Chinese text (within ~20%)."""
    return len(_TOKEN.findall(text))
