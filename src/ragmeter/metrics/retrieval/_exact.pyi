from collections.abc import Collection, Sequence
from typing import Any

def judge(
    retrieved: Sequence[Sequence[Any]], relevant: Sequence[Collection[Any]], width: int, /
) -> tuple[bytearray, bytearray]: ...
