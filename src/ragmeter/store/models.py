"""Tables of the store (SQLAlchemy 2 declarative models, portable SQL)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from ragmeter.store.actor import current_actor

__all__ = [
    "AppRecord",
    "AppVersionRecord",
    "AuditRecord",
    "Base",
    "ChunkRecord",
    "DashboardSessionRecord",
    "DatasetRecord",
    "DatasetRowRecord",
    "DocumentRecord",
    "JudgeCacheEntry",
    "JudgeCardRecord",
    "LabelRecord",
    "ModelRequestRecord",
    "PromptRecord",
    "PromptVersionRecord",
    "ResultBatch",
    "ResultRow",
    "ReviewItemRecord",
    "ReviewQueueRecord",
    "RunRecord",
    "RunTag",
    "SpaceRecord",
    "UserRecord",
    "utc_now",
]


def utc_now() -> datetime:
    """Now in UTC without a zone, as SQL's CURRENT_TIMESTAMP gives it."""
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class JudgeCacheEntry(Base):
    """One judge reply that parsed and validated, keyed by everything that shaped the request."""

    __tablename__ = "judge_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String(200))
    base_url: Mapped[str] = mapped_column(String(500))
    content: Mapped[str] = mapped_column(Text)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    #: the reply of ragmeter's scripted judge (``judge-server``), not of a model
    scripted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())


class SpaceRecord(Base):
    """A knowledge space: its embedder and chunking are fixed when it is created.

    ``revision`` grows with every change to its documents; an index on disk built at an
    older revision is stale and is rebuilt from the chunks."""

    __tablename__ = "spaces"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    embedder: Mapped[str] = mapped_column(String(200))
    dimension: Mapped[int | None] = mapped_column(Integer, nullable=True)
    chunking: Mapped[dict[str, Any]] = mapped_column(JSON)
    revision: Mapped[int] = mapped_column(Integer, default=0)
    #: the user who made it (``store.actor``); NULL: made before users, or by the CLI
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), onupdate=func.now()
    )


class DocumentRecord(Base):
    """A document of a space; ``name`` is its path relative to the folder it was added from."""

    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("space_id", "name", name="uq_documents_space_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    space_id: Mapped[int] = mapped_column(ForeignKey("spaces.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(1000))
    source: Mapped[str] = mapped_column(String(2000), default="")
    kind: Mapped[str] = mapped_column(String(16))
    content_hash: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer, default=0)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), onupdate=func.now()
    )


class ChunkRecord(Base):
    """One chunk: its text, where it sits in its document, and its vector (float32 bytes)."""

    __tablename__ = "chunks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    space_id: Mapped[int] = mapped_column(ForeignKey("spaces.id", ondelete="CASCADE"), index=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)


class PromptRecord(Base):
    """A prompt template by code: a judge template or an app's answer template."""

    __tablename__ = "prompts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    code: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(32))
    language: Mapped[str | None] = mapped_column(String(8), nullable=True)
    template: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text, default="")
    #: the user who made it (``store.actor``); NULL: made before users, or by the CLI
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    #: the version this content is (``prompt_versions`` keeps every one)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), onupdate=func.now()
    )


class PromptVersionRecord(Base):
    """One version of a prompt, never changed: what a run that used ``code@version`` was
    given. Kept by code (not by the prompt's id) so a removed and re-added code goes on
    counting and a stored run's version never names other text."""

    __tablename__ = "prompt_versions"
    __table_args__ = (UniqueConstraint("code", "version", name="uq_prompt_versions_code_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    code: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))
    language: Mapped[str | None] = mapped_column(String(8), nullable=True)
    template: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())


class AppRecord(Base):
    """An application to evaluate: its kind (rag, http, callable) and settings (never keys)."""

    __tablename__ = "apps"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: the user who made it (``store.actor``); NULL: made before users, or by the CLI
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    #: the version these settings are (``app_versions`` keeps every one)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), onupdate=func.now()
    )


class AppVersionRecord(Base):
    """One version of an app's settings, never changed (see ``PromptVersionRecord``)."""

    __tablename__ = "app_versions"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_app_versions_name_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())


class DatasetRecord(Base):
    """One version of a dataset: rows to evaluate (their count here, the rows in
    ``dataset_rows``). A named dataset has versions 1, 2, ... under one name, each with the
    hash of its rows (``datasets.digest``), so the same rows are stored once; the rows a
    request carries inline are kept unnamed, for the runs that use them."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_datasets_name_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    #: ``datasets.digest.content_hash`` of the rows; NULL: not computed yet (rows stored
    #: before versions, or a test set still growing), computed when first needed
    content_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    #: ``FileOrigin.key`` of the file the rows were read from (its bytes' hash with the
    #: reader's version): the same file run again finds this version without hashing rows
    file_key: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    #: where the rows came from, as shown to others: a file's name (never its folder), a
    #: request, a test set
    source: Mapped[str] = mapped_column(String(1000), default="")
    #: the user who made it (``store.actor``); NULL: made before users, or by the CLI
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    row_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())


class DatasetRowRecord(Base):
    """One row of a dataset as canonical JSON text, at its 0-based ``position``: a page of
    rows is a range of the primary key, and nothing else reads a dataset's rows."""

    __tablename__ = "dataset_rows"

    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[str] = mapped_column(Text)


class RunRecord(Base):
    """One evaluation: what was asked (``spec``), how far it got and what it cost."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: what the user calls it (``--name``); not unique: runs of one experiment may share it
    name: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)
    note: Mapped[str] = mapped_column(Text, default="", server_default="")
    #: hidden from lists unless asked for; kept with its results
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: what made the run (``runs.planning.lineage``): dataset version, target, metrics, judge and
    #: prompt, embedder, ragmeter version, code commit
    lineage: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")
    state: Mapped[str] = mapped_column(String(16), index=True)
    scene_key: Mapped[str] = mapped_column(String(16))
    scene_value: Mapped[str | None] = mapped_column(String(200), nullable=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    total_rows: Mapped[int] = mapped_column(Integer, default=0)
    done_rows: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: what kind of failure ``error`` is: input, upstream, internal or interrupted
    error_kind: Mapped[str | None] = mapped_column(String(16), nullable=True)
    resumable: Mapped[bool] = mapped_column(Boolean, default=False)
    #: ``host:pid@start`` of the process executing the run (to tell a dead one at start-up;
    #: ``start`` is the process start time where the system tells it)
    owner: Mapped[str | None] = mapped_column(String(300), nullable=True)
    #: the user who made it (``store.actor``); NULL: made before users, or by the CLI
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    #: until when ``owner`` holds the run: a server renews it while it works, and another
    #: server sharing the store takes the run over once it has passed (None: a command's run)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    usage: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    #: to the microsecond (SQLite's own clock has seconds), so "newest first" is an order
    created_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now
    )
    started_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class RunTag(Base):
    """A tag of a run (``--tag``), one row per tag, so runs filter by tag in any database."""

    __tablename__ = "run_tags"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(String(100), primary_key=True, index=True)


class ResultRow(Base):
    """One row x one metric of a run; written with the rest of its row, never twice. The row
    itself is read from the run's dataset unless the target changed it (``raw_dataset``)."""

    __tablename__ = "results"
    __table_args__ = (
        UniqueConstraint("run_id", "row_index", "metric_name", name="uq_results_run_row_metric"),
        # a page of rows sorted or filtered by one metric's score (the dashboard's row table)
        Index("ix_results_run_metric_score", "run_id", "metric_name", "score"),
        # one run's results of one metric with their pairing keys, in row order (compare):
        # written in the order a run writes its rows, so it costs little to keep up
        Index(
            "ix_results_run_metric_row",
            "run_id",
            "metric_name",
            "row_index",
            "score",
            "id_key",
            "query_key",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    #: (no index of its own: the unique constraint's index leads with it)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    row_index: Mapped[int] = mapped_column(Integer)
    metric_name: Mapped[str] = mapped_column(String(200))
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    passing: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    feedback: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: why ``score`` is null: upstream (judge, embedder or app failed), input (the row's
    #: data decides it) or metric (a bug); NULL for a score, or for results stored before
    error_kind: Mapped[str | None] = mapped_column(String(16), nullable=True)
    prediction: Mapped[Any] = mapped_column(JSON, nullable=True)
    contexts: Mapped[Any] = mapped_column(JSON, nullable=True)
    prediction_cost: Mapped[int] = mapped_column(Integer, default=0)
    query: Mapped[str] = mapped_column(Text)
    #: the row as the target filled it (an app's answer, a space's contexts); NULL: the row
    #: is the run's dataset row at ``row_index`` (``dataset_rows``), stored once, not here
    raw_dataset: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    cost: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    #: the judge's reasoning (``ragmeter.reports.details``); NULL: not recorded
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    #: what pairs this result with the same row of another run (``store.pairing``): a hash
    #: of the row's ``id`` (None without one) and of its query text
    id_key: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    query_key: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class ResultBatch(Base):
    """A batch of one metric's plain results of a run (a score and nothing else, on the
    run's own dataset rows), stored as columns: ``rows`` (int32), ``scores`` (float64) and
    the rows' pairing keys (int64; 0: the row has no ``id``), little-endian, one entry per
    row in ascending row order. What the metric was given is a field of each row
    (``prediction_field``, ``contexts_field``; NULL: nothing). Results holding more (a
    null's reason, a verdict, feedback, an input not a field of the row, cost, reasoning, a
    row the target filled) are rows of ``results``; a run's results of a metric are the
    union of both, each row in one of them only."""

    __tablename__ = "result_batches"
    __table_args__ = (Index("ix_result_batches_run_metric", "run_id", "metric_name", "first_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    metric_name: Mapped[str] = mapped_column(String(200))
    first_row: Mapped[int] = mapped_column(Integer)
    last_row: Mapped[int] = mapped_column(Integer)
    size: Mapped[int] = mapped_column(Integer)
    #: rows of ``size`` lacking an ``id`` (their ``id_keys`` are 0)
    without_id: Mapped[int] = mapped_column(Integer)
    prediction_field: Mapped[str | None] = mapped_column(String(40), nullable=True)
    contexts_field: Mapped[str | None] = mapped_column(String(40), nullable=True)
    rows: Mapped[bytes] = mapped_column(LargeBinary)
    scores: Mapped[bytes] = mapped_column(LargeBinary)
    id_keys: Mapped[bytes] = mapped_column(LargeBinary)
    query_keys: Mapped[bytes] = mapped_column(LargeBinary)


class LabelRecord(Base):
    """A person's judgement of one dataset row on one metric: its value on the metric's
    scale (1/0 for pass/fail) and a comment. It belongs to the row of a dataset version
    (``position``), so every run of that version finds it; ``run_id`` names the run the
    reviewer was reading (kept for the record; a deleted run leaves the label)."""

    __tablename__ = "labels"
    __table_args__ = (
        UniqueConstraint(
            "dataset_id", "position", "metric", "reviewer", name="uq_labels_row_metric_reviewer"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(String(200))
    reviewer: Mapped[str] = mapped_column(String(200))
    value: Mapped[float] = mapped_column(Float)
    comment: Mapped[str] = mapped_column(Text, default="", server_default="")
    run_id: Mapped[str | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now
    )
    updated_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now, onupdate=utc_now
    )


class ReviewQueueRecord(Base):
    """Rows of a run picked for people to label on one metric by a sampling rule
    (``runs.review.sampling``): the rule's options (``options``: per_reviewer, reviewers, k,
    seed, threshold, strata) and how many rows the rule could pick (``eligible``)."""

    __tablename__ = "review_queues"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    metric: Mapped[str] = mapped_column(String(200))
    rule: Mapped[str] = mapped_column(String(32))
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    eligible: Mapped[int] = mapped_column(Integer)
    created_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now
    )


class ReviewItemRecord(Base):
    """One row of a queue given to one reviewer, at ``position`` in their list, with the
    chance the rule had of picking it (``probability``) and its score stratum."""

    __tablename__ = "review_items"
    __table_args__ = (
        UniqueConstraint("queue_id", "reviewer", "row_index", name="uq_review_items_row"),
        Index("ix_review_items_reviewer", "queue_id", "reviewer", "position"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    queue_id: Mapped[int] = mapped_column(ForeignKey("review_queues.id", ondelete="CASCADE"))
    row_index: Mapped[int] = mapped_column(Integer)
    reviewer: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer)
    probability: Mapped[float] = mapped_column(Float)
    stratum: Mapped[int | None] = mapped_column(Integer, nullable=True)


class TestsetJobRecord(Base):
    """A test set generation of the service (``service._testsets``) as every server sharing
    the store shows it: its API view (``data``, without state, error and creator, kept in their own
    columns), the process generating it and until when (a lease it renews, like a run's), and
    whether a cancel was asked for on any server."""

    __tablename__ = "testset_jobs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[str] = mapped_column(String(16), index=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: the dataset its rows go to (no foreign key: a generation outlives a deleted dataset)
    dataset_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    dataset_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    owner: Mapped[str | None] = mapped_column(String(300), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    cancel_asked: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now
    )


class UserRecord(Base):
    """A person (or program) holding a key: its role and the SHA-256 of its key. A key is
    256 random bits, so a fast hash is as safe as a slow one (no guess finds it) and costs
    microseconds a request; ``key_prefix`` (the key's first characters) finds the row."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    key_prefix: Mapped[str] = mapped_column(String(16), index=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now
    )


class AuditRecord(Base):
    """One change: who made it, when, what (``action``: the route's method and path, or a
    command), on which object, and the ids before and after (small JSON, capped)."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now, index=True
    )
    user_name: Mapped[str] = mapped_column(String(200), index=True)
    action: Mapped[str] = mapped_column(String(300))
    object_kind: Mapped[str] = mapped_column(String(32))
    object_id: Mapped[str | None] = mapped_column(String(300), nullable=True)
    before: Mapped[Any] = mapped_column(JSON, nullable=True)
    after: Mapped[Any] = mapped_column(JSON, nullable=True)


class ModelRequestRecord(Base):
    """A request sent to a model with a request rate (``requests_per_minute``), by any
    process sharing the store: what the last minute's count is read from."""

    __tablename__ = "model_requests"
    __table_args__ = (Index("ix_model_requests_model_at", "model_key", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    #: ``base_url model`` of the endpoint
    model_key: Mapped[str] = mapped_column(String(700))
    #: when it was let through, in seconds since the epoch
    at: Mapped[float] = mapped_column(Float)


class DashboardSessionRecord(Base):
    """A signed-in browser of the dashboard, kept in the store so that every server sharing
    it (replicas) knows it: the SHA-256 of its id (the cookie; the id itself is never
    stored), its CSRF token, when it ends, and the user it acts as."""

    __tablename__ = "dashboard_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    csrf: Mapped[str] = mapped_column(String(64))
    #: seconds since the epoch
    expires_at: Mapped[float] = mapped_column(Float, index=True)
    user_name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    key_prefix: Mapped[str | None] = mapped_column(String(16), nullable=True)


class JudgeCardRecord(Base):
    """A judge card: a judge model's agreement with people on a human-labelled suite for one
    metric (its prompt's code and hash, the suite's name and content hash), as JSON."""

    __tablename__ = "judge_cards"
    __table_args__ = (Index("ix_judge_cards_model_metric", "judge_model", "metric", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    judge_model: Mapped[str] = mapped_column(String(300))
    metric: Mapped[str] = mapped_column(String(200))
    prompt_code: Mapped[str | None] = mapped_column(String(300), nullable=True)
    prompt_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    suite: Mapped[str] = mapped_column(String(300))
    suite_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now
    )
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    card: Mapped[dict[str, Any]] = mapped_column(JSON)
