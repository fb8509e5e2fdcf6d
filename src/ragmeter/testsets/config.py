"""What a test set generation asks for: size, question types and their mix, language,
documents, seed, budget."""

from __future__ import annotations

import math
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragmeter.errors import ConfigError

__all__ = [
    "QUESTION_TYPES",
    "STYLES",
    "LanguageChoice",
    "QuestionType",
    "Style",
    "TestsetConfig",
    "parse_styles",
    "parse_types",
    "type_quotas",
]

#: ``single``: one chunk; ``multi``: two or three chunks that must all be used; ``abstract``:
#: a theme across a document's chunks
QuestionType = Literal["single", "multi", "abstract"]
QUESTION_TYPES: tuple[str, ...] = get_args(QuestionType)
#: how a question is worded; ``plain`` unless asked
Style = Literal["plain", "concise", "conversational", "keywords", "typos"]
STYLES: tuple[str, ...] = get_args(Style)
LanguageChoice = Literal["auto", "en", "zh"]

DEFAULT_TYPES: dict[str, float] = {"single": 0.6, "multi": 0.3, "abstract": 0.1}


class TestsetConfig(BaseModel):
    """One generation. ``types`` maps each question type to its share (shares sum to 1);
    ``duplicate_threshold`` is the cosine of two questions' embeddings over which the later
    one is a near-duplicate."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(frozen=True, extra="forbid")

    size: int = Field(ge=1, le=100_000)
    types: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_TYPES))
    language: LanguageChoice = "auto"
    docs: tuple[str, ...] = ()
    styles: tuple[Style, ...] = ("plain",)
    #: who asks (e.g. "a new user", "an operator on call"), spread over the candidates like
    #: the styles; none by default
    personas: tuple[str, ...] = Field(default=(), max_length=20)
    seed: int = Field(default=0, ge=-(2**63), lt=2**63)
    max_requests: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    duplicate_threshold: float = Field(default=0.95, gt=0, le=1)
    concurrency: int = Field(default=8, ge=1, le=256)
    #: also grade each row's relevance (``reference_relevance``): 2 for the chunks the question
    #: was written from, 1 for the other usable chunks of their documents
    graded: bool = False

    @field_validator("types")
    @classmethod
    def _shares(cls, value: dict[str, float]) -> dict[str, float]:
        for name, share in value.items():
            if name not in QUESTION_TYPES:
                raise ValueError(
                    f"unknown question type '{name}'; choose from {', '.join(QUESTION_TYPES)}"
                )
            if not math.isfinite(share) or share < 0:
                raise ValueError(f"the share of '{name}' must be a number of 0 or more")
        total = sum(value.values())
        if total <= 0:
            raise ValueError("the question type shares must add up to more than 0")
        return {name: share / total for name, share in value.items() if share > 0}

    @field_validator("personas")
    @classmethod
    def _personas(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for persona in value:
            if not persona.strip() or len(persona) > 200:
                raise ValueError("a persona is a description of 1 to 200 characters")
        return tuple(p.strip() for p in value)

    @classmethod
    def build(cls, **values: object) -> TestsetConfig:
        """The config, or ConfigError naming the option at fault."""
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"][:1])
            message = str(first["msg"]).removeprefix("Value error, ")
            raise ConfigError(f"--{field.replace('_', '-')}: {message}") from None


def parse_types(text: str) -> dict[str, float]:
    """``"single=0.6,multi=0.3,abstract=0.1"`` -> shares; a bare name counts 1."""
    shares: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        if name not in QUESTION_TYPES:
            raise ConfigError(
                f"--types: unknown question type '{name}'; choose from {', '.join(QUESTION_TYPES)}"
            )
        try:
            shares[name] = float(value) if sep else 1.0
        except ValueError:
            raise ConfigError(f"--types: '{name}' needs a share like 0.3, got {value!r}") from None
    if not shares:
        raise ConfigError(f"--types: name at least one of {', '.join(QUESTION_TYPES)}")
    return shares


def parse_styles(text: str) -> tuple[Style, ...]:
    """``"concise,typos"`` -> the styles questions are worded in."""
    names = [p.strip() for p in text.split(",") if p.strip()]
    for name in names:
        if name not in STYLES:
            raise ConfigError(f"--styles: unknown style '{name}'; choose from {', '.join(STYLES)}")
    if not names:
        raise ConfigError(f"--styles: name at least one of {', '.join(STYLES)}")
    return tuple(names)  # type: ignore[arg-type]


def type_quotas(types: dict[str, float], size: int) -> dict[str, int]:
    """How many questions of each type make ``size``: shares rounded by largest remainder
    (ties go to the type listed first)."""
    raw = {name: share * size for name, share in types.items()}
    quotas = {name: int(value) for name, value in raw.items()}
    left = size - sum(quotas.values())
    order = sorted(raw, key=lambda n: -(raw[n] - quotas[n]))
    for name in order[:left]:
        quotas[name] += 1
    return quotas
