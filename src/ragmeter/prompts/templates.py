"""Prompt kinds and the variables their templates must (and may) use.

Templates use ``str.format`` fields: ``{query}``, ``{context}``, ``{answer}``; a literal brace
is written twice (``{{`` and ``}}``).
"""

from __future__ import annotations

import string
from typing import Literal, get_args

from ragmeter.errors import ConfigError

__all__ = ["PROMPT_KINDS", "REQUIRED_VARIABLES", "PromptKind", "check_template", "template_fields"]

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


def template_fields(template: str) -> list[str]:
    """The ``{field}`` names a template uses, in order; ConfigError if it does not parse."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(
            f"the template does not parse ({exc}); write a literal brace twice: {{{{ or }}}}"
        ) from None
    return [name for _, name, _, _ in parsed if name is not None]


def check_template(template: str, kind: str) -> None:
    """ConfigError unless ``template`` uses exactly the variables its kind needs."""
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
            f"{', '.join('{' + v + '}' for v in required)}; it uses {shown} "
            "(write a literal brace twice: {{ or }})"
        )
    missing = [v for v in required if v not in fields]
    if missing:
        raise ConfigError(
            f"a {kind} template for {_USE[kind]} must use "
            f"{', '.join('{' + v + '}' for v in required)}; it lacks "
            f"{', '.join('{' + v + '}' for v in missing)}"
        )
