"""Settings from ``$RAGMETER_HOME/ragmeter.toml``: models by name and the store.

::

    [models.zhipu_proxyllm]
    base_url = "https://open.bigmodel.cn/api/paas/v4"
    model = "glm-4-flash"
    api_key_env = "ZHIPU_API_KEY"

    [store]
    url = "sqlite:////path/to/ragmeter.db"   # default: ragmeter.db in the home folder;
                                             # RAGMETER_STORE_URL overrides it

    [knowledge]
    hnsw_threshold = 200000   # spaces with more chunks get an approximate HNSW index
    device = "cpu"            # the local embedding model's: cpu, cuda or auto

    [server]
    api_keys = ["a-long-random-key"]   # or RAGMETER_API_KEYS="k1,k2"; none: loopback only
    workers = 2                        # runs evaluated at once
    app_secrets = { MY_RAG_KEY = ["rag.internal"] }  # variables apps may send, and where
    allow_app_hosts = ["10.0.0.0/8"]   # private hosts HttpApps may reach (names, IPs, networks)
    # every size, count, depth and time a request controls is capped; see docs/security.md

    [online]   # production traces (POST /v1/traces) and the rules that score them
    keep_days = 30

    [gate]   # ragmeter gate and ragmeter eval --rule: used when no --rule is given
    rules = ["faithfulness.mean >= 0.8", "null_rate <= 0.02", "faithfulness: delta >= -0.02"]
    baseline = "baseline.jsonl"   # a stored run's id or name, or a results file (optional)

Requests refused by a ``[server]`` limit answer a 4xx that names the limit.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragmeter.errors import ConfigError

__all__ = [
    "EMBEDDING_DEVICES",
    "EmbeddingDevice",
    "ExecutorConfig",
    "GateConfig",
    "KnowledgeConfig",
    "ModelConfig",
    "OnlineConfig",
    "OnlineRule",
    "ServerConfig",
    "Settings",
    "StoreConfig",
    "TraceFilter",
    "config_path",
    "key_from_env",
    "load_settings",
    "ragmeter_home",
]

HOME_ENV = "RAGMETER_HOME"
API_KEYS_ENV = "RAGMETER_API_KEYS"
#: the store's URL, before ``[store] url``: every process started with it uses that store
STORE_URL_ENV = "RAGMETER_STORE_URL"

#: where the local embedding model runs: ``cpu`` (numpy), ``cuda`` (torch on a GPU), ``auto``
EmbeddingDevice = Literal["cpu", "cuda", "auto"]
EMBEDDING_DEVICES: tuple[EmbeddingDevice, ...] = ("cpu", "cuda", "auto")


def ragmeter_home() -> Path:
    """The data folder: ``$RAGMETER_HOME`` or ``~/.ragmeter``."""
    value = os.environ.get(HOME_ENV)
    return Path(value).expanduser() if value else Path.home() / ".ragmeter"


def config_path() -> Path:
    return ragmeter_home() / "ragmeter.toml"


class ModelConfig(BaseModel):
    """One named model: an OpenAI-compatible endpoint, the model id and where its key is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the model's name (the table's: ``[models.NAME]``)
    name: str = ""
    #: the OpenAI-compatible endpoint (``POST {base_url}/chat/completions``)
    base_url: str
    #: the model id the endpoint serves
    model: str
    #: the environment variable holding the API key, never stored (none: a local server)
    api_key_env: str | None = None
    #: seconds one request may take
    timeout: float = Field(default=60.0, gt=0)
    #: requests in flight to this endpoint per process (none: 16)
    max_concurrency: int | None = Field(default=None, ge=1)
    #: requests this model takes in any minute, counted in the store across every process
    #: sharing it (a team's servers); None: no such limit
    requests_per_minute: int | None = Field(default=None, ge=1)

    def api_key(self) -> str:
        """The key from ``api_key_env``; a clear error when that variable is unset."""
        if self.api_key_env is None:
            return "EMPTY"  # local servers (vLLM, Ollama) accept any key
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(
                f"model '{self.name}' reads its API key from ${self.api_key_env}, which is not set"
            )
        return key


class StoreConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the store's database URL (none: ``ragmeter.db`` in the home; ``$RAGMETER_STORE_URL`` first)
    url: str | None = None


class KnowledgeConfig(BaseModel):
    """``[knowledge]``: how space indexes are built and where the local model embeds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: spaces with more chunks than this get an HNSW index (approximate); fewer, an exact one
    hnsw_threshold: int = Field(default=200_000, ge=1)
    #: where the local embedding model (all-MiniLM-L6-v2) runs, in this process and in Ray
    #: workers adding documents: ``cpu`` (numpy, no torch), ``cuda`` (torch on the GPU; an
    #: error where torch sees none) or ``auto`` (cuda where torch sees a GPU, else cpu).
    #: cuda is untested on GPUs in CI
    device: EmbeddingDevice = "cpu"


class ServerConfig(BaseModel):
    """``[server]``: who may call ``ragmeter serve`` and how much work it takes on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: API keys the service accepts (also ``$RAGMETER_API_KEYS``, comma-separated)
    api_keys: list[str] = Field(default_factory=list)
    #: runs evaluated at once
    workers: int = Field(default=2, ge=1, le=64)
    #: environment variables an app of the service may send as its key: a list (to any host
    #: apps may reach) or a table binding each to the hosts it may go to
    #: (``{MY_RAG_KEY = ["rag.internal", "10.0.0.0/8"]}``)
    app_secrets: list[str] | dict[str, list[str]] = Field(default_factory=list)
    #: hosts, addresses or networks (``10.0.0.0/8``) an HttpApp made over the API may reach
    #: although they are loopback, private or link-local
    allow_app_hosts: list[str] = Field(default_factory=list)
    #: addresses or networks of reverse proxies whose ``X-Forwarded-For`` and
    #: ``X-Forwarded-Proto`` name the client; from any other peer they are ignored
    trusted_proxies: list[str] = Field(default_factory=list)
    # -- request sizes and counts ---------------------------------------------------------
    #: one request body
    max_request_mb: float = Field(default=100.0, gt=0)
    #: one uploaded file
    max_upload_mb: float = Field(default=20.0, gt=0)
    #: files in one upload (the multipart parser takes at most 1000)
    max_upload_files: int = Field(default=1000, ge=1, le=1000)
    #: nesting of JSON in a request body or a dataset row
    max_json_depth: int = Field(default=32, ge=2, le=512)
    #: rows of one run or one uploaded dataset
    max_rows: int = Field(default=20_000, ge=1)
    #: items of one list in a row (retrieved ids or contexts, judged ids, references), and
    #: results or judgements of one query in TREC files
    max_row_items: int = Field(default=10_000, ge=1)
    #: tool calls of one row on each side (made in its messages, expected); aligning the two
    #: costs their product
    max_tool_calls: int = Field(default=256, ge=1, le=100_000)
    #: fields (columns) of one dataset, counted over all its rows (an xlsx sheet holds at
    #: most 16,384 columns)
    max_dataset_fields: int = Field(default=1_000, ge=1, le=16_384)
    #: results pages read at once (more wait, then 429); each holds its page in memory
    max_reads: int = Field(default=2, ge=1, le=64)
    #: xlsx downloads built at once, each in a process of a pool of their own (more: 429)
    max_exports: int = Field(default=2, ge=1, le=16)
    #: metric names of one request
    max_metrics: int = Field(default=50, ge=1)
    #: retrieval depth (``context.top_k``, ``@k``, ``/retrieve``)
    max_top_k: int = Field(default=1000, ge=1)
    #: rows of one run evaluated at once (``parallel_num``)
    max_parallel: int = Field(default=64, ge=1)
    #: test set generations running at once in one server
    max_testset_jobs: int = Field(default=4, ge=1)
    #: judge requests and tokens a test set generation may spend per question of its size:
    #: its budget when the request names none, and the most it may name
    testset_requests_per_question: int = Field(default=10, ge=1)
    testset_tokens_per_question: int = Field(default=20_000, ge=1)
    #: labels of one import (``POST .../labels``) and megabytes of its body
    max_labels: int = Field(default=20_000, ge=1)
    max_labels_mb: float = Field(default=20.0, gt=0)
    # -- documents ---------------------------------------------------------------------------
    #: characters extracted from one document
    max_document_chars: int = Field(default=2_000_000, ge=1)
    #: chunks cut from one document
    max_document_chunks: int = Field(default=5_000, ge=1)
    #: chunks added by one upload
    max_upload_chunks: int = Field(default=20_000, ge=1)
    #: memory and CPU seconds of the subprocess that reads one PDF or HTML page (an upload
    #: shares 5 times pdf_seconds across its PDF and HTML files)
    pdf_memory_mb: int = Field(default=1024, ge=64)
    pdf_seconds: float = Field(default=60.0, gt=0)
    # -- apps --------------------------------------------------------------------------------
    #: bytes of one HttpApp reply (read as a stream, stopped at the cap)
    max_app_reply_mb: float = Field(default=1.0, gt=0)
    #: an HttpApp's per-request timeout, in seconds
    max_app_timeout: float = Field(default=300.0, gt=0)
    # -- runs --------------------------------------------------------------------------------
    #: hours one run may take; past them it stops, keeping its rows, and can be resumed
    max_run_hours: float = Field(default=12.0, gt=0)
    #: megabytes of results (predictions, contexts, rows) one run may store; past them it
    #: stops the same way
    max_run_mb: float = Field(default=200.0, gt=0)
    #: seconds a server holds a run it executes without renewing it (it renews it every third
    #: of that); once passed, another server sharing the store takes the run over
    run_lease_seconds: float = Field(default=30.0, ge=1)
    # -- row search ----------------------------------------------------------------------------
    #: seconds one row search (``GET .../runs/{id}/rows?q=``) may take; past them it answers 400
    search_seconds: float = Field(default=5.0, gt=0)
    #: row searches running at once in one server; past them a search answers 429
    max_searches: int = Field(default=4, ge=1)
    # -- dashboard ---------------------------------------------------------------------------
    #: hours a dashboard session (the cookie its key form sets) lasts
    session_hours: float = Field(default=12.0, gt=0)
    #: wrong API keys (or unknown session cookies) one client address may present in a minute;
    #: past it the address gets 429 until the minute has passed
    max_auth_failures: int = Field(default=30, ge=1)
    # -- shutdown ----------------------------------------------------------------------------
    #: seconds a stopping server waits for requests under way before it cancels them
    shutdown_timeout: float = Field(default=10.0, ge=0)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"trusted_proxies: {entry!r} is not an IP address or network"
                ) from None
        return value

    def keys(self) -> list[str]:
        """The configured keys, plus those in ``$RAGMETER_API_KEYS`` (comma-separated)."""
        extra = os.environ.get(API_KEYS_ENV, "")
        keys = [*self.api_keys, *(k.strip() for k in extra.split(","))]
        return [k for k in dict.fromkeys(keys) if k]


class GateConfig(BaseModel):
    """``[gate]``: the rules ``ragmeter gate`` (and ``ragmeter eval``) judge when no
    ``--rule`` is given, and the baseline when no ``--baseline`` is (``runs.gates.rules``
    has the rules' grammar)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[str] = Field(default_factory=list)
    baseline: str | None = None


#: what a trace filter compares (see ``TraceFilter``)
FilterOp = Literal["eq", "ne", "in", "contains", "exists", "gt", "ge", "lt", "le"]
FilterValue = str | int | float | bool | list[str | int | float | bool] | None


class TraceFilter(BaseModel):
    """One condition of an online rule on a trace: ``field op value``. ``field`` is a trace's
    own (``service``, ``name``, ``status``, ``model``, ``user_id``, ``session_id``,
    ``latency_ms``, ``input_tokens``, ``output_tokens``), a row field (``row.query``), a
    metadata key (``metadata.env``), or any span's attribute (``span.llm.model_name``) or
    resource attribute (``resource.deployment.environment``). ``exists`` takes no value;
    ``in`` a list; ``gt``/``ge``/``lt``/``le`` a number; ``contains`` a substring of a text or
    an item of a list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str = Field(min_length=1, max_length=200)
    op: FilterOp = "eq"
    value: FilterValue = None

    @model_validator(mode="after")
    def _value_fits(self) -> TraceFilter:
        op, value = self.op, self.value
        if op == "exists" and value is not None:
            raise ValueError("op 'exists' takes no value")
        if op == "in" and not isinstance(value, list):
            raise ValueError("op 'in' takes a list of values")
        if op in ("gt", "ge", "lt", "le") and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            raise ValueError(f"op '{op}' takes a number")
        if op in ("eq", "ne", "contains") and (value is None or isinstance(value, list)):
            raise ValueError(f"op '{op}' takes one value (text, number or true/false)")
        return self


class OnlineRule(BaseModel):
    """An online evaluation rule (``[[online.rules]]`` or ``/api/v2/serve/online/rules``):
    which complete traces (``service``, root span ``root_name``, a span of ``span_kind``,
    ``filters``, all of them), scored by which ``metrics`` (names as ``ragmeter eval -m``)
    ``delay_seconds`` after their last span arrived. Deterministic metrics score every
    matching trace; judged metrics (asking ``judge``, a ``[models.X]`` name) only the share
    ``sample_rate`` of them, chosen by a hash of the trace id (every replica and every re-run
    chooses the same traces), within a budget of judge requests and tokens per UTC day: once
    spent, judged metrics are skipped (a null score saying so) until the next day."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    enabled: bool = True
    service: str | None = Field(default=None, max_length=200)
    root_name: str | None = Field(default=None, max_length=200)
    span_kind: str | None = Field(default=None, max_length=64)
    filters: tuple[TraceFilter, ...] = ()
    metrics: tuple[str, ...] = Field(min_length=1)
    judge: str | None = Field(default=None, max_length=200)
    #: share of matching traces the judged metrics score (deterministic ones score all)
    sample_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    #: judge requests (retries and re-asks included; cached replies free) per UTC day
    max_requests_per_day: int = Field(default=1_000, ge=0, le=10_000_000)
    #: judge tokens (prompt + completion) per UTC day
    max_tokens_per_day: int = Field(default=2_000_000, ge=0, le=10_000_000_000)
    #: seconds after a trace's last span arrived before it is scored (late spans wait)
    delay_seconds: float = Field(default=30.0, ge=0.0, le=86_400.0)


class OnlineConfig(BaseModel):
    """``[online]``: production traces received at ``POST /v1/traces`` (OTLP/HTTP) and the
    rules that score them. Every size and count a trace exporter controls is capped; past a
    cap the receiver answers 4xx naming the setting, or accepts the rest and says how many
    spans it refused (OTLP's ``partial_success``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: days a trace (its spans and scores) is kept; older ones are deleted
    keep_days: float = Field(default=30.0, gt=0)
    # -- the receiver ------------------------------------------------------------------------
    #: megabytes of one export request, as sent and once decompressed (gzip)
    max_request_mb: float = Field(default=5.0, gt=0)
    #: spans of one export request; past it the request is refused (413)
    max_spans_per_request: int = Field(default=5_000, ge=1)
    #: attributes of one span (and of one event or resource); past it the span is refused
    max_attributes: int = Field(default=256, ge=1)
    #: kilobytes of one attribute's value; past it the span is refused
    max_attribute_kb: float = Field(default=64.0, gt=0)
    #: nesting of one attribute's value (lists and maps in lists and maps)
    max_depth: int = Field(default=8, ge=1, le=64)
    #: events of one span (the OpenTelemetry SDK keeps 128); past it the span is refused
    max_events: int = Field(default=128, ge=0)
    #: spans waiting to be stored; a request that would pass it is refused (503, retry)
    max_queued_spans: int = Field(default=100_000, ge=1)
    #: spans kept of one trace (each span added sums the trace up again from all of them);
    #: spans past it are left out, logged
    max_spans_per_trace: int = Field(default=10_000, ge=1)
    #: megabytes of the bodies (once inflated) of the spans waiting to be stored; past it 503
    max_queued_mb: float = Field(default=200.0, gt=0)
    # -- online rules ------------------------------------------------------------------------
    #: the rules of ragmeter.toml (``[[online.rules]]``); the API adds stored ones
    rules: tuple[OnlineRule, ...] = ()
    #: rules (ragmeter.toml's and stored ones together) a server keeps; past it POST is refused
    max_rules: int = Field(default=100, ge=1)
    #: filters of one rule
    max_rule_filters: int = Field(default=16, ge=1)
    #: seconds between two looks of the background scorer for traces to score
    score_every_seconds: float = Field(default=5.0, gt=0)
    #: traces one rule scores per batch (its judged ones go through the judge together)
    score_batch: int = Field(default=200, ge=1, le=10_000)
    # -- monitors and alerts -----------------------------------------------------------------
    #: hosts, addresses or networks (``10.0.0.0/8``) an alert's webhook may post to although
    #: they are loopback, private or link-local (public hosts need no entry)
    allow_webhook_hosts: list[str] = Field(default_factory=list)
    #: seconds between two evaluations of the alert rules
    alert_every_seconds: float = Field(default=60.0, ge=1, le=3600)
    #: scores of one metric a monitor or an alert rule reads at once; a range holding more is
    #: refused (413), to be asked again shorter
    max_monitor_scores: int = Field(default=1_000_000, ge=1)


class ExecutorConfig(BaseModel):
    """``[executor]``: where a run's rows are scored. ``local`` (the default): this process;
    ``ray``: tasks on a Ray cluster (``pip install 'ragmeter[ray]'``), ``address`` the
    cluster's (``auto``, ``ray://HOST:PORT``; none: a cluster of this machine started for the
    process). The store stays with the process that drives the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["local", "ray"] = "local"
    address: str | None = Field(default=None, max_length=500)
    #: batches sent to the cluster and not yet back (None: twice its CPUs)
    max_in_flight: int | None = Field(default=None, ge=1, le=100_000)
    #: rows of one batch (one Ray task; None: the run's concurrency where a judge or an app
    #: answers, else 10,000)
    batch_rows: int | None = Field(default=None, ge=1, le=1_000_000)
    #: GPUs a Ray task adding documents reserves when the local embedding model runs on
    #: ``cuda`` (``[knowledge] device``; below 1: tasks share a GPU); none on ``cpu``/``auto``
    gpus_per_task: float = Field(default=1.0, gt=0, le=8)


class Settings(BaseModel):
    """The parsed ``ragmeter.toml``; every section is optional."""

    model_config = ConfigDict(extra="allow", frozen=True)

    models: dict[str, ModelConfig] = Field(default_factory=dict)
    store: StoreConfig = Field(default_factory=StoreConfig)
    knowledge: KnowledgeConfig = Field(default_factory=KnowledgeConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    online: OnlineConfig = Field(default_factory=OnlineConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    source: str | None = None

    def model(
        self, name: str, hint: str = "or give --judge-base-url with the model id"
    ) -> ModelConfig:
        """The model declared as ``[models.NAME]``; ConfigError listing the known names if none."""
        found = self.models.get(name)
        if found is None:
            known = ", ".join(sorted(self.models)) or "none"
            where = self.source or str(config_path())
            raise ConfigError(
                f"unknown model '{name}': {where} declares {known}; add [models.{name}] {hint}"
            )
        return found

    def store_url(self) -> str:
        """``$RAGMETER_STORE_URL``, else ``[store] url``, else ``ragmeter.db`` in the home."""
        if url := os.environ.get(STORE_URL_ENV, "").strip():
            return url
        if self.store.url:
            return self.store.url
        return f"sqlite:///{ragmeter_home() / 'ragmeter.db'}"


def load_settings(path: Path | None = None) -> Settings:
    """Read the config file (``$RAGMETER_HOME/ragmeter.toml`` by default); absent means defaults."""
    path = path or config_path()
    if not path.exists():
        return Settings()
    try:
        raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    models = raw.get("models", {})
    if not isinstance(models, dict):
        raise ConfigError(f"{path}: [models] must be a table of named models")
    for name, body in models.items():
        if isinstance(body, dict):
            body.setdefault("name", name)
    try:
        return Settings.model_validate({**raw, "source": str(path)})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from exc


def key_from_env(variable: str | None, what: str) -> str:
    """The API key in ``$variable`` (``EMPTY`` when none is named); ConfigError if unset."""
    if variable is None:
        return "EMPTY"  # local OpenAI-compatible servers accept any key
    key = os.environ.get(variable)
    if not key:
        raise ConfigError(f"{what} reads its API key from ${variable}, which is not set")
    return key
