"""Prompt kinds, the variables their templates must (and may) use, and the one renderer.

Templates hold plain fields: ``{query}``, ``{context}``, ``{answer}``; a literal brace is written
twice (``{{`` and ``}}``). Format specs (``{query:>100000000}``), conversions (``{query!r}``) and
attribute or index access (``{query.__class__}``, ``{query[0]}``) are refused wherever a template
enters, and ``render_template`` substitutes plain fields only, so a template can never pad, convert
or reach into a value. A new template names each field at most once, so a prompt is never
longer than the template plus the row's texts (``{context}`` written 10,000 times would copy them
10,000 times); a stored template from before that rule still renders, but never into a prompt
over the judge's ``MAX_PROMPT_CHARS``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import Literal, get_args

from ragmeter.errors import ConfigError, LimitError

__all__ = [
    "PROMPT_KINDS",
    "REQUIRED_VARIABLES",
    "PromptKind",
    "check_template",
    "render_template",
    "template_fields",
]

PromptKind = Literal["judge", "answer"]
PROMPT_KINDS: tuple[str, ...] = get_args(PromptKind)

#: kind -> variables a template of that kind must use (and the only ones it may use)
REQUIRED_VARIABLES: dict[str, tuple[str, ...]] = {
    # the judge template of AnswerRelevancyMetric (DB-GPT's evaluation prompt)
    "judge": ("query", "context", "answer"),
    # how a RagApp asks its model to answer from the retrieved chunks
    "answer": ("query", "context"),
}

_USE = {
    "judge": "AnswerRelevancyMetric (--judge-prompt, context.prompt)",
    "answer": "a RagApp's answer prompt (ragmeter app add --prompt)",
}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_BRACES = "write a literal brace twice: {{ or }}"
_SHOWN = 60  # characters of a refused field quoted in a message


def _refusal(name: str, spec: str, conversion: str | None) -> str | None:
    """Why a parsed field is not a plain ``{name}``, or None if it is one."""
    if conversion:
        return f"conversions ('!{conversion}') are not allowed"
    if spec:
        return "format specs (after ':') are not allowed"
    if not name:
        return "a field needs a name, such as {query}"
    if _NAME.match(name):
        return None
    if "." in name or "[" in name:
        return "attribute and index access are not allowed"
    return "a field name is a word of letters, digits and '_' that starts with a letter"


@lru_cache(maxsize=256)
def _parse(template: str) -> tuple[tuple[str, str | None], ...]:
    """``(literal text, field name or None)`` pairs; ConfigError naming the first field that
    is not plain, or saying why the template does not parse."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(f"the template does not parse ({exc}); {_BRACES}") from None
    pieces: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in parsed:
        if name is not None:
            why = _refusal(name, spec or "", conversion)
            if why is not None:
                shown = "{" + name + (f"!{conversion}" if conversion else "")
                shown += (f":{spec}" if spec else "") + "}"
                if len(shown) > _SHOWN:
                    shown = shown[: _SHOWN - 4] + "...}"
                raise ConfigError(
                    f"template field {shown}: {why}; a template holds plain fields such as "
                    f"{{query}} ({_BRACES})"
                )
        pieces.append((literal, name))
    return tuple(pieces)


def template_fields(template: str, allowed: Collection[str] | None = None) -> list[str]:
    """The plain ``{field}`` names a template uses, in order. ConfigError for a field that
    is not plain, or (when ``allowed`` is given) one whose name is not allowed."""
    fields = [name for _, name in _parse(template) if name is not None]
    counts = Counter(fields)
    repeated = next((name for name in fields if counts[name] > 1), None)
    if repeated is not None:
        shown = repeated if len(repeated) <= _SHOWN else repeated[: _SHOWN - 3] + "..."
        raise ConfigError(
            f"template field {{{shown}}} appears more than once; each field may appear once "
            "(a repeated field copies the row's text into the prompt again)"
        )
    if allowed is not None:
        odd = sorted({f for f in fields if f not in allowed})
        if odd:
            raise ConfigError(
                f"the template uses {', '.join('{' + f + '}' for f in odd)}; it may only use "
                f"{', '.join('{' + a + '}' for a in allowed)} ({_BRACES})"
            )
    return fields


def render_template(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each plain ``{name}`` replaced by ``values[name]``. Never calls
    ``str.format``; ConfigError names a field that is not plain or has no value, LimitError a
    prompt that would be over ``MAX_PROMPT_CHARS`` (measured before it is built)."""
    from ragmeter.judge.engine import MAX_PROMPT_CHARS  # the engine (openai, cache) on first use

    out: list[str] = []
    size = 0
    for literal, name in _parse(template):
        out.append(literal)
        size += len(literal)
        if name is None:
            continue
        value = values.get(name)
        if value is None:
            known = ", ".join("{" + k + "}" for k in values)
            raise ConfigError(f"template field {{{name}}} has no value; the fields are {known}")
        out.append(value)
        size += len(value)
    if size > MAX_PROMPT_CHARS:
        raise LimitError(
            f"the prompt would hold {size:,} characters, too many to send: the row's texts are "
            "too long for it",
            setting=f"at most {MAX_PROMPT_CHARS:,} characters per judge prompt",
        )
    return "".join(out)


def check_template(template: str, kind: str) -> None:
    """ConfigError unless ``template`` uses exactly the variables its kind needs, as plain
    fields."""
    if kind not in REQUIRED_VARIABLES:
        raise ConfigError(f"unknown prompt kind '{kind}'; choose from {', '.join(PROMPT_KINDS)}")
    if not template.strip():
        raise ConfigError("the template is empty")
    required = REQUIRED_VARIABLES[kind]
    fields = template_fields(template)
    odd = sorted({f for f in fields if f not in required})
    if odd:
        shown = ", ".join("{" + f + "}" for f in odd)
        raise ConfigError(
            f"a {kind} template for {_USE[kind]} may only use "
            f"{', '.join('{' + v + '}' for v in required)}; it uses {shown} ({_BRACES})"
        )
    missing = [v for v in required if v not in fields]
    if missing:
        raise ConfigError(
            f"a {kind} template for {_USE[kind]} must use "
            f"{', '.join('{' + v + '}' for v in required)}; it lacks "
            f"{', '.join('{' + v + '}' for v in missing)}"
        )
