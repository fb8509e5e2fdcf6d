"""Prompt templates: judge templates (AnswerRelevancyMetric) and app answer templates."""

from ragmeter.prompts.store import PromptStore
from ragmeter.prompts.templates import (
    PROMPT_KINDS,
    REQUIRED_VARIABLES,
    PromptKind,
    check_template,
    render_template,
    template_fields,
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
