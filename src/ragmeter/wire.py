"""Every model that crosses HTTP between the service and the client, in one place. It imports
only pydantic, the standard library and ``ragmeter.errors``, so the client loads neither the
server (FastAPI, SQLAlchemy) nor the engine (numpy, faiss, openai) to read an answer."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragmeter.errors import public_url

__all__ = [
    "LOCAL_ORIGIN",
    "UPLOAD_ORIGIN",
    "AddOut",
    "AppOut",
    "ArgumentDiff",
    "ChunkInfo",
    "ChunkingConfig",
    "ChunkingStrategy",
    "DatasetOut",
    "DbgptContentUpload",
    "DbgptDataset",
    "DbgptEvaluation",
    "DbgptMembersUpdate",
    "DbgptPage",
    "DbgptStartRequest",
    "DocumentInfo",
    "EvaluateServeRequest",
    "HitOut",
    "MetricComparison",
    "MetricDistribution",
    "MetricInfo",
    "ModelOut",
    "NullReason",
    "Page",
    "PageMetricInfo",
    "PromptOut",
    "ResultItem",
    "RowContext",
    "RowDetail",
    "RowPair",
    "RowPairPage",
    "RowResult",
    "RowScore",
    "RowView",
    "RunCreated",
    "RunInfo",
    "RunState",
    "Scatter",
    "ScatterPoint",
    "SceneInfo",
    "SpaceInfo",
    "TestsetCreate",
    "TestsetJob",
    "TestsetState",
    "Trajectory",
    "TrajectoryCall",
    "TrajectoryPair",
    "TrajectoryStep",
]

T = TypeVar("T")


# -- evaluation and runs ---------------------------------------------------------------------


class EvaluateServeRequest(BaseModel):
    """The request body of ``POST .../evaluation`` and ``POST .../runs``: every field is
    optional, as DB-GPT's client sends all 18 and leaves most of them null."""

    model_config = ConfigDict(extra="forbid")

    evaluate_code: str | None = Field(None, description="id for the run (default: generated)")
    scene_key: str | None = Field(None, description="recall, app or dataset")
    scene_value: str | None = Field(None, description="space (recall) or app (app): id or name")
    datasets_name: str | None = Field(None, description="a stored dataset's name or id")
    datasets: list[dict[str, Any]] | None = Field(None, description="rows, inline")
    evaluate_metrics: list[str] | None = Field(None, description="metric names or specs")
    context: dict[str, Any] | None = Field(None, description="top_k, prompt, model, ...")
    user_name: str | None = None
    user_id: str | None = None
    sys_code: str | None = None
    parallel_num: int | None = Field(None, description="rows evaluated at once (1-64)")
    state: str | None = None
    result: str | None = None
    storage_type: str | None = None
    average_score: str | None = None
    log_info: str | None = None
    gmt_create: str | None = None
    gmt_modified: str | None = None


RunState = Literal["pending", "running", "done", "failed", "cancelled"]


class RunInfo(BaseModel):
    """A run as the API shows it."""

    run_id: str
    state: RunState
    scene_key: str
    scene_value: str | None
    metrics: list[str]
    progress: dict[str, int]
    resumable: bool
    error: str | None
    #: input (fix the request), upstream (judge, embedder or app), internal, interrupted
    error_kind: str | None = None
    summary: dict[str, dict[str, float | int | None]] | None = None
    cost: dict[str, float]
    dataset_id: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class RunCreated(BaseModel):
    run_id: str
    state: str


class ResultItem(BaseModel):
    """One row x one metric: the shape of DB-GPT's ``/evaluation`` answer (``prediction`` to
    ``feedback``), with the row it belongs to, why ``score`` is null and what judging cost."""

    prediction: Any = None
    contexts: Any = None
    score: float | None = None
    passing: bool | None = None
    metric_name: str
    prediction_cost: int = 0
    query: str
    raw_dataset: dict[str, Any] = Field(default_factory=dict)
    feedback: str | None = None
    #: the reason when ``score`` is null
    error: str | None = None
    row_index: int
    cost: dict[str, Any] | None = None
    #: why ``score`` is null: upstream (judge, embedder or app failed; ``resume`` with
    #: ``retry_failed`` redoes it), input (the row's data decides it) or metric (a bug)
    error_kind: str | None = None
    #: the judge's reasoning: ``{"groups": [{"kind", "items": [{"text", "verdict", "reason",
    #: "value"}]}], "values": {...}}``; null when not recorded (an older run, or a metric
    #: with no reasoning to show)
    details: dict[str, Any] | None = None


class MetricComparison(BaseModel):
    """One metric of two runs: means over each run's scored rows, and over the ``paired``
    rows both scored, ``delta`` = other - base with its 95% CI; ``better``/``worse``/``same``
    count paired rows. ``p_value`` is the paired sign-flip test of delta = 0, ``p_holm`` the
    same corrected across the compared metrics (Holm), and ``verdict`` says better/worse at
    the alpha asked (default 0.05) on ``p_holm``, same otherwise. ``note`` says why
    ``delta`` is null (no pair) or why the CI is not BCa."""

    metric_name: str
    base_mean: float | None
    other_mean: float | None
    paired: int
    delta: float | None
    ci95_low: float | None
    ci95_high: float | None
    better: int
    worse: int
    same: int
    note: str | None = None
    #: bca, percentile (BCa undefined: few pairs or no spread; ``note`` says which) or abc
    #: (BCa's analytic form, used from 1,000 pairs on)
    ci_method: Literal["bca", "percentile", "abc"] | None = None
    p_value: float | None = None
    #: exact (all sign patterns), randomisation (Monte-Carlo) or normal (many pairs)
    p_method: Literal["exact", "randomisation", "normal"] | None = None
    p_holm: float | None = None
    verdict: Literal["better", "worse", "same"] | None = None
    #: rows scored in one run whose query (or id) has no score in the other run
    base_unpaired: int = 0
    other_unpaired: int = 0
    #: what rows pair by: their ``id`` when every row of both runs has one, else query text
    paired_by: Literal["query", "id"] = "query"


class Page(BaseModel, Generic[T]):
    """One page of a list, and how many items the whole list has."""

    items: list[T]
    total: int
    offset: int = 0
    limit: int = 0


class SceneInfo(BaseModel):
    scene_key: str
    description: str


class MetricInfo(BaseModel):
    name: str
    aliases: list[str] = Field(default_factory=list)
    description: str
    needs_judge: bool = False


# -- knowledge spaces ------------------------------------------------------------------------

ChunkingStrategy = Literal["markdown", "size", "paragraph", "separator"]
#: how a document's ``source`` starts when it came from an upload (``upload:NAME``)
UPLOAD_ORIGIN = "upload"
#: how the service shows a document added from a file on the server's disk
LOCAL_ORIGIN = "local"


class ChunkingConfig(BaseModel):
    """How a space cuts documents into chunks; fixed when the space is created."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: ChunkingStrategy = "markdown"
    chunk_size: int = Field(default=512, ge=16, le=100_000)
    chunk_overlap: int = Field(default=50, ge=0)
    separator: str = "\n\n"

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_size ({self.chunk_size})"
            )
        if self.strategy == "separator" and not self.separator:
            raise ValueError("the separator strategy needs a non-empty separator")
        return self

    def describe(self) -> str:
        """A short label such as ``markdown 512/50``."""
        label = f"{self.strategy} {self.chunk_size}/{self.chunk_overlap}"
        if self.strategy == "separator":
            label += f" sep={self.separator!r}"
        return label


class SpaceInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    description: str = ""
    embedder: str
    dimension: int | None = None
    chunking: ChunkingConfig
    revision: int = 0
    documents: int = 0
    chunks: int = 0
    created_at: datetime | None = None


class DocumentInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    space_id: int
    name: str
    kind: str
    size: int
    chunk_count: int
    content_hash: str
    #: where it came from: ``upload:NAME`` for an upload, the file's path for a local add
    source: str = ""
    updated_at: datetime | None = None

    def public(self) -> DocumentInfo:
        """This document as the service shows it: an upload as it is, a file added from the
        server's disk as ``local:NAME`` (its path would tell where the server keeps files)."""
        if self.source.startswith(f"{UPLOAD_ORIGIN}:"):
            return self
        return self.model_copy(update={"source": f"{LOCAL_ORIGIN}:{self.name}"})


class ChunkInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    document: str
    position: int
    content: str
    meta: dict[str, Any] = {}


class HitOut(BaseModel):
    chunk_id: int
    score: float
    document: str
    content: str
    meta: dict[str, Any] = Field(default_factory=dict)


class AddOut(BaseModel):
    added: list[str]
    updated: list[str]
    unchanged: list[str]
    failed: list[tuple[str, str]]
    empty: list[str]
    chunks: int
    seconds: float


# -- prompts, apps, datasets, models ---------------------------------------------------------


class PromptOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    code: str
    kind: str
    language: str | None
    template: str
    description: str
    updated_at: datetime | None = None


class AppOut(BaseModel):
    """An app's settings as any key holder may read them: URLs without credentials or query."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    kind: str
    config: dict[str, Any]

    @field_validator("config")
    @classmethod
    def _public_urls(cls, config: dict[str, Any]) -> dict[str, Any]:
        return {
            k: public_url(v) if k in ("url", "base_url") and isinstance(v, str) else v
            for k, v in config.items()
        }


class DatasetOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str | None
    source: str
    row_count: int
    created_at: datetime | None = None


class ModelOut(BaseModel):
    name: str


# -- DB-GPT's evaluation page (web/types/evaluate.ts) ----------------------------------------


class PageMetricInfo(MetricInfo):
    """A metric as DB-GPT's page lists it: ``describe`` is its label in the form."""

    describe: str


class DbgptPage(BaseModel, Generic[T]):
    """A page of a list as DB-GPT's page reads it (``items``, ``total_count``)."""

    items: list[T]
    total_count: int
    total_pages: int
    page: int
    page_size: int


class DbgptDataset(BaseModel):
    """A stored dataset in the page's shape; ``code`` is its name."""

    code: str
    name: str
    file_type: str
    storage_type: str
    storage_position: str = ""
    datasets_count: int
    have_answer: bool
    members: str | None = None  # not kept: null, so the page draws no empty tag
    user_name: str | None = None
    user_id: str | None = None
    sys_code: str | None = None
    gmt_create: str | None = None
    gmt_modified: str | None = None


class DbgptEvaluation(BaseModel):
    """A run in the page's shape: ``average_score`` is a JSON object text, one mean per metric."""

    evaluate_code: str
    scene_key: str
    scene_value: str | None
    datasets: str
    datasets_name: str
    evaluate_metrics: str
    context: dict[str, Any] = Field(default_factory=dict)
    user_name: str | None = None
    user_id: str | None = None
    sys_code: str | None = None
    parallel_num: str
    state: str
    result: str | None = None
    average_score: str | None = None
    log_info: str | None = None
    gmt_create: str | None = None
    gmt_modified: str | None = None


class DbgptStartRequest(BaseModel):
    """``POST /api/v1/evaluate/start`` as the page sends it: single strings where the API takes
    lists (``datasets`` is one dataset's code, ``evaluate_metrics`` one name or several
    comma-separated, ``parallel_num`` a number as text)."""

    evaluate_code: str | None = Field(None, max_length=64)
    scene_key: str | None = Field(None, max_length=32)
    scene_value: str | None = Field(None, max_length=200)
    datasets: str = Field(min_length=1, max_length=200)
    evaluate_metrics: str | list[str] | None = None
    context: dict[str, Any] | str | None = None
    parallel_num: int | str | None = None
    user_name: str | None = Field(None, max_length=200)
    user_id: str | None = Field(None, max_length=200)
    sys_code: str | None = Field(None, max_length=200)


class DbgptContentUpload(BaseModel):
    """``POST /api/v1/evaluate/dataset/upload/content``: rows typed into the page."""

    dataset_name: str = Field(min_length=1, max_length=200)
    members: str | None = Field(None, max_length=10_000)
    content: str = Field(min_length=1)


class DbgptMembersUpdate(BaseModel):
    code: str = Field(min_length=1, max_length=200)
    members: str | None = Field(None, max_length=10_000)


# -- a run row by row (GET /runs/{id}/rows, /runs/{id}/distribution) ------------------------


class RowScore(BaseModel):
    score: float | None
    passing: bool | None
    error: str | None
    error_kind: str | None


class RowView(BaseModel):
    """One dataset row of a run: its query and response (cut to ``TEXT_CHARS``), and each
    metric's score or the reason it is null."""

    row_index: int
    query: str
    response: str
    scores: dict[str, RowScore]


class RowContext(BaseModel):
    """One retrieved context of a row, at ``rank`` (from 1): its text and id where the row
    has them; ``relevant`` as the exact retrieval metrics judge it, null when the row names
    no reference to judge it by."""

    rank: int
    text: str | None = None
    id: str | None = None
    relevant: bool | None = None


class RowResult(BaseModel):
    """One metric's result on a row, with the judge's reasoning (``details``: see
    ``ResultItem``; null when not recorded). ``judged``: a judge was asked (its usage is
    charged to the result), so null details mean "not recorded", not "nothing to show"."""

    metric_name: str
    judged: bool = False
    score: float | None
    passing: bool | None
    feedback: str | None
    error: str | None
    error_kind: str | None
    details: dict[str, Any] | None = None


class TrajectoryCall(BaseModel):
    """One tool call: its name and arguments (a JSON value); for a call the agent made, the
    result its tool gave (null when the conversation has none)."""

    name: str
    arguments: Any = None
    result: str | None = None


class ArgumentDiff(BaseModel):
    """One argument of a pair of calls: its value in the expected and in the actual call
    (null where absent), and whether they are equal as JSON values."""

    key: str
    expected: Any = None
    actual: Any = None
    equal: bool


class TrajectoryPair(BaseModel):
    """An expected call and the actual call aligned with it, side by side: ``match`` (same
    name and arguments), ``arguments`` (same name, other arguments), ``missing`` (expected,
    not made), ``extra`` (made, not expected)."""

    status: Literal["match", "arguments", "missing", "extra"]
    expected: TrajectoryCall | None = None
    actual: TrajectoryCall | None = None
    arguments: list[ArgumentDiff] = Field(default_factory=list)


class TrajectoryStep(BaseModel):
    """One message of the conversation: role, text and the tool calls it made (with their
    results)."""

    role: str
    content: str = ""
    calls: list[TrajectoryCall] = Field(default_factory=list)


class Trajectory(BaseModel):
    """An agent row's conversation step by step, and its expected calls aligned with the
    calls made (in order, by name; empty when the row has no expected calls)."""

    steps: list[TrajectoryStep]
    pairs: list[TrajectoryPair]


class RowDetail(BaseModel):
    """One row of a run in full: query, response, reference, the retrieved contexts in rank
    order with relevance marked (``match``: by ``id`` or ``exact`` text, as the retrieval
    metrics' ``auto`` rule; null when the row has no reference ids or contexts), every
    metric's result, and the stored rows before and after it (null at either end)."""

    row_index: int
    query: str
    response: str | None
    reference: str | None
    contexts: list[RowContext]
    match: Literal["id", "exact"] | None
    relevant_total: int | None
    results: list[RowResult]
    previous: int | None
    next: int | None
    #: an agent row's conversation and calls (null for a row without ``messages``)
    trajectory: Trajectory | None = None


class NullReason(BaseModel):
    error_kind: str | None
    reason: str | None
    count: int


class MetricDistribution(BaseModel):
    """Scores binned on ``edges`` (``len(counts) + 1`` of them; none when no score), and the
    null results grouped by kind and reason, ``other_nulls`` past the listed ones."""

    metric_name: str
    edges: list[float]
    counts: list[int]
    nulls: list[NullReason]
    other_nulls: int


# -- two runs row by row (GET /runs/{id}/compare/{base}/rows, .../scatter) ------------------


class RowPair(BaseModel):
    """One row of both runs for one metric: its pairing ``key`` (the row's ``id``, or its
    query text), each run's row index and score, and ``delta`` = candidate - baseline (null
    when either score is)."""

    key: str | int
    base_index: int
    other_index: int
    query: str
    base_score: float | None
    other_score: float | None
    delta: float | None


class RowPairPage(Page[RowPair]):
    """A page of pairs, largest regression first; ``paired_by`` as in ``MetricComparison``."""

    paired_by: Literal["query", "id"] = "query"


class ScatterPoint(BaseModel):
    """``count`` pairs at baseline score ``x`` and candidate score ``y`` (a cell's centre on
    a grid)."""

    x: float
    y: float
    count: int


class Scatter(BaseModel):
    """Pairs both runs scored, as points with their multiplicity; past ``MAX_POINTS``
    distinct points, counts on a ``grid`` x ``grid`` grid over [``low``, ``high``] on both
    axes (``mode`` says which), so the page never receives every pair."""

    metric_name: str
    mode: Literal["points", "grid"]
    points: list[ScatterPoint]
    paired: int
    low: float
    high: float
    grid: int | None = None
    paired_by: Literal["query", "id"] = "query"


# -- test sets ---------------------------------------------------------------------------------

TestsetState = Literal["running", "done", "failed"]


class TestsetCreate(BaseModel):
    """``POST /knowledge/spaces/{space}/testsets``: what ``ragmeter testset generate`` asks,
    with the judge a model the server declares (``[models.NAME]``), never a URL."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    size: int = Field(ge=1, description="at most [server] max_rows")
    judge_model: str = Field(min_length=1, max_length=200)
    types: dict[str, float] | None = Field(
        default=None, description="shares of single, multi, abstract (default 0.6/0.3/0.1)"
    )
    language: Literal["auto", "en", "zh"] = "auto"
    docs: list[str] = Field(default_factory=list, max_length=1000)
    styles: list[str] = Field(default_factory=lambda: ["plain"], max_length=5)
    personas: list[str] = Field(default_factory=list, max_length=20)
    seed: int = 0
    max_requests: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    name: str | None = Field(
        default=None, max_length=200, description="the dataset the rows are kept as"
    )


class TestsetJob(BaseModel):
    """A generation as the API shows it, like a run: its state and progress. Its rows are
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
    dataset_id: int | None = None
    dataset_name: str | None = None
