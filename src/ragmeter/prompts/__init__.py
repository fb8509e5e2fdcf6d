"""Prompt templates: judge templates (AnswerRelevancyMetric) and app answer templates.

Names load on first use: rendering a template does not import the store (SQLAlchemy)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names

if TYPE_CHECKING:
    from ragmeter.prompts.store import PromptStore
    from ragmeter.prompts.templates import (
        PROMPT_KINDS,
        REQUIRED_VARIABLES,
        PromptKind,
        check_template,
        render_template,
        template_fields,
    )

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.prompts.store": ("PromptStore",),
        "ragmeter.prompts.templates": (
            "PROMPT_KINDS",
            "REQUIRED_VARIABLES",
            "PromptKind",
            "check_template",
            "render_template",
            "template_fields",
        ),
    },
)

__all__ = [
    "PROMPT_KINDS",
    "REQUIRED_VARIABLES",
    "PromptKind",
    "PromptStore",
    "check_template",
    "render_template",
    "template_fields",
]
