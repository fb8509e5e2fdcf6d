"""Test sets generated from a knowledge space: the request, and the generation as the API
shows it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat

TestsetState = Literal["running", "done", "failed", "cancelled"]
#: the range of a seed (a signed 64-bit number)
SEED_RANGE = 2**63


class TestsetCreate(BaseModel):
    """``POST /knowledge/spaces/{space}/testsets``: what ``ragmeter testset generate`` asks,
    with the judge a model the server declares (``[models.NAME]``), never a URL."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    size: int = Field(ge=1, description="at most [server] max_rows")
    judge_model: str = Field(min_length=1, max_length=200)
    types: dict[str, FiniteFloat] | None = Field(
        default=None, description="shares of single, multi, abstract (default 0.6/0.3/0.1)"
    )
    language: Literal["auto", "en", "zh"] = "auto"
    docs: list[str] = Field(default_factory=list, max_length=1000)
    styles: list[str] = Field(default_factory=lambda: ["plain"], max_length=5)
    personas: list[str] = Field(default_factory=list, max_length=20)
    seed: int = Field(default=0, ge=-SEED_RANGE, lt=SEED_RANGE)
    graded: bool = Field(
        default=False,
        description="also grade each row's relevance (reference_relevance): 2 for the source "
        "chunks, 1 for the other chunks of their documents",
    )
    max_requests: int | None = Field(
        default=None,
        ge=1,
        description="judge requests it may send (default and most: size x [server] "
        "testset_requests_per_question)",
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="judge tokens it may spend (default and most: size x [server] "
        "testset_tokens_per_question)",
    )
    name: str | None = Field(
        default=None, max_length=200, description="the dataset the rows are kept as"
    )


class TestsetJob(BaseModel):
    """A generation as the API shows it, like a run: its state (``cancelled`` by POST
    ``.../testsets/{id}/cancel``) and progress. Its rows are
    kept in the dataset ``dataset_id`` (``dataset_name``) as they pass, so a stopped server
    loses none; a generation that kept nothing leaves no dataset."""

    __test__ = False

    id: str
    space: str
    state: TestsetState
    size: int
    accepted: int = 0
    candidates: int = 0
    rejected: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, int] = Field(default_factory=dict)
    cost: dict[str, float] = Field(default_factory=dict)
    stopped: str | None = None
    error: str | None = None
    #: its budget: judge requests and tokens it may spend
    max_requests: int | None = None
    max_tokens: int | None = None
    dataset_id: int | None = None
    dataset_name: str | None = None
    #: the user who started it (None: no user); only they or an admin may cancel it
    created_by: str | None = None
