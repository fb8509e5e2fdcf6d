from collections.abc import Callable
from typing import Any

def setup(
    message: type,
    tool_call: type,
    scan_once: Callable[[str, int], Any],
    message_level: int,
    field_level: int,
    max_int_digits: int,
    /,
) -> None: ...
def openai_messages(items: list[Any], max_depth: int, /) -> tuple[Any, ...] | None: ...
def plain_calls(items: list[Any], max_depth: int, /) -> tuple[Any, ...] | None: ...
