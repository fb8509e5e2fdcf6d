"""Test sets from a knowledge space: questions and reference answers written by the judge
from the space's chunks, gated (grounded, standalone, not answering themselves, deduplicated,
language-locked), with the source chunk ids as ``reference_ids``."""

from __future__ import annotations

from ragmeter.testsets.config import (
    QUESTION_TYPES,
    STYLES,
    TestsetConfig,
    parse_styles,
    parse_types,
    type_quotas,
)
from ragmeter.testsets.gates import GATES
from ragmeter.testsets.generate import Estimate, TestsetGenerator, TestsetReport
from ragmeter.testsets.selection import SKIP_REASONS, skip_reason

__all__ = [
    "GATES",
    "QUESTION_TYPES",
    "SKIP_REASONS",
    "STYLES",
    "Estimate",
    "TestsetConfig",
    "TestsetGenerator",
    "TestsetReport",
    "parse_styles",
    "parse_types",
    "skip_reason",
    "type_quotas",
]
