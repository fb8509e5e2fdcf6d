"""What an evaluation is: ``EvaluationConfig``, the one description every entry point parses into.

The Python API (``evaluate``), the command line (``ragmeter eval``), the service's DB-GPT request
(``POST .../evaluation`` and ``.../runs``) and a stored run (which keeps the config it ran with,
so a resume does exactly the same) all hold one of these. An option is added here, once.

Parts the Python API may give as objects instead of names (metric instances, a judge or
embedder object, an ``App`` or a function) are named in ``objects``: a stored run that used
them is resumed by calling ``evaluate`` again with the same run name and the same objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, field_validator

from ragmeter._grades import MAX_GRADE
from ragmeter.errors import ConfigError

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_RECALL_TOP_K",
    "ROWS_PER_REQUEST",
    "AppTargetConfig",
    "EmbedderConfig",
    "EvaluationConfig",
    "JudgeConfig",
    "NoTarget",
    "ObjectPart",
    "SpaceTargetConfig",
    "TargetConfig",
    "parse_config",
    "parse_part",
]

#: retrieval depth of the recall scene when no top_k is given (DB-GPT's context.top_k)
DEFAULT_RECALL_TOP_K = 5
#: rows in flight at once when none is given
DEFAULT_CONCURRENCY = 16
#: rows in flight per judge request slot, for the command line and the Python API: a row asks
#: its judge in stages, with local work between them, so a few rows per slot keep the judge busy
ROWS_PER_REQUEST = 4

Retriever = Literal["vector", "bm25", "hybrid"]
#: trec_eval's names of measure sets (``-m official``), read by ``metrics.retrieval.trec``
_NICKNAMES = frozenset({"official", "all_trec", "set"})
#: parts of an evaluation the Python API may pass as objects rather than names
ObjectPart = Literal["metrics", "judge", "embedder", "app", "target"]


#: a whole number given as one (True, 2.0 and "3" are not): each interface reads its own text
#: (the command line's options, the service's strings) into numbers first
Whole = Annotated[int, Strict()]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JudgeConfig(_Frozen):
    """The judge model: a ``[models.NAME]`` of ``ragmeter.toml``, or, with ``base_url``, the
    model id at that OpenAI-compatible endpoint (command line and Python only: the service
    takes names of its own config, never URLs)."""

    model: str = Field(min_length=1)
    base_url: str | None = None
    #: environment variable holding the key (its name, never the key)
    api_key_env: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    #: False: ask the judge even when a reply is cached
    cache: bool = True
    #: requests in flight to the judge (None: the model's own limit, else 16); the command
    #: line's and the Python API's ``max_concurrency``
    max_concurrency: Whole | None = Field(default=None, ge=1)


class EmbedderConfig(_Frozen):
    """The embedder of similarity metrics: ``model`` None is the local all-MiniLM-L6-v2; a
    ``[models.NAME]``, or the model id at ``base_url``."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None


class NoTarget(_Frozen):
    """Rows carry their own predictions (scene ``dataset``)."""

    kind: Literal["none"] = "none"


class SpaceTargetConfig(_Frozen):
    """Scene ``recall``: each query searched in a knowledge space (id or name) first."""

    kind: Literal["space"] = "space"
    space: str = Field(min_length=1)
    retriever: Retriever = "vector"
    top_k: Whole = Field(default=DEFAULT_RECALL_TOP_K, ge=1)
    score_threshold: float | None = None


class AppTargetConfig(_Frozen):
    """Scene ``app``: each query answered by a stored app (id or name) first; ``space``
    resolves the rows' ``doc_name`` (default: a RAG app's own space)."""

    kind: Literal["app"] = "app"
    app: str = Field(min_length=1)
    space: str | None = None


TargetConfig = Annotated[
    NoTarget | SpaceTargetConfig | AppTargetConfig, Field(discriminator="kind")
]


class EvaluationConfig(_Frozen):
    """Everything an evaluation is, apart from its rows."""

    #: metric specs as written ("faithfulness", "ndcg@10", "RetrieverMRRMetric")
    metrics: tuple[str, ...] = Field(min_length=1)
    target: TargetConfig = NoTarget()
    judge: JudgeConfig | None = None
    #: code of a stored judge prompt: AnswerRelevancyMetric's template
    judge_prompt: str | None = None
    embedder: EmbedderConfig = EmbedderConfig()
    #: cut-off of metrics without their own @k (their names stay as written)
    top_k: Whole | None = Field(default=None, ge=1)
    plan: Literal["fused", "separate"] = "fused"
    language: Literal["auto", "en", "zh"] = "auto"
    #: the grade from which an item is relevant, for ranking metrics without their own
    #: ``rel`` (trec_eval's -l)
    relevance_level: Whole = Field(default=1, ge=1, le=MAX_GRADE)
    #: what a ranking metric scores on a row without a relevant item: null (with the reason)
    #: or 0, as trec_eval does
    no_relevant: Literal["null", "zero"] = "null"
    #: rows evaluated at once (the service's ``parallel_num``; locally ``ROWS_PER_REQUEST``
    #: times the judge's ``max_concurrency``)
    concurrency: Whole = Field(default=DEFAULT_CONCURRENCY, ge=1)
    #: parts given as Python objects (see the module's docstring)
    objects: frozenset[ObjectPart] = frozenset()

    @field_validator("metrics")
    @classmethod
    def _specs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Specs stripped, trec_eval's ``-m`` forms (``P.5,10``, ``official``) read into
        ragmeter's (``precision@5``, ``precision@10``)."""
        specs = tuple(m.strip() for m in value if m and m.strip())
        if not specs:
            raise ValueError("name at least one metric")
        if any("." in spec or spec in _NICKNAMES for spec in specs):
            # read only when a spec may be one: the config stays light to import
            from ragmeter.metrics.retrieval.trec import expand_specs

            specs = tuple(expand_specs(specs))
        return specs

    @property
    def app_concurrency(self) -> int:
        """Requests in flight to an app: the judge's ``max_concurrency`` where it is given
        (the command line's ``--max-concurrency``), else the rows in flight."""
        limit = self.judge.max_concurrency if self.judge is not None else None
        return limit or self.concurrency

    @property
    def scene(self) -> Literal["recall", "app", "dataset"]:
        """DB-GPT's name of the target: recall, app or dataset."""
        kind = self.target.kind
        return "recall" if kind == "space" else "app" if kind == "app" else "dataset"

    @property
    def scene_value(self) -> str | None:
        """The space or app the target names (DB-GPT's ``scene_value``)."""
        target = self.target
        if isinstance(target, SpaceTargetConfig):
            return target.space
        return target.app if isinstance(target, AppTargetConfig) else None

    def stored(self) -> dict[str, Any]:
        """The config as a run keeps it (JSON)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> EvaluationConfig:
        """A stored config; runs stored before this model existed kept a flat spec (scene,
        scene_value, top_k, judge_model, ...), read here into the same config."""
        data = {k: v for k, v in data.items() if k != "metric_names"}
        if "scene" not in data:
            return cls.model_validate(data)
        return cls.model_validate(_from_flat_spec(data))


def _from_flat_spec(spec: dict[str, Any]) -> dict[str, Any]:
    scene, value, top_k = spec.get("scene"), spec.get("scene_value"), spec.get("top_k")
    target: dict[str, Any] = {"kind": "none"}
    if scene == "recall":
        target = {
            "kind": "space",
            "space": value,
            "retriever": spec.get("retriever") or "vector",
            "top_k": top_k or DEFAULT_RECALL_TOP_K,
            "score_threshold": spec.get("score_threshold"),
        }
    elif scene == "app":
        target = {"kind": "app", "app": value}
    judge = spec.get("judge_model")
    embedder = spec.get("embedding_model")
    return {
        "metrics": spec.get("metrics") or [],
        "target": target,
        "judge": None if judge is None else {"model": judge},
        "judge_prompt": spec.get("judge_prompt"),
        "embedder": {"model": embedder},
        "top_k": top_k,
        "plan": spec.get("plan") or "fused",
        "language": spec.get("language") or "auto",
        "concurrency": spec.get("parallel_num") or DEFAULT_CONCURRENCY,
    }


_Part = TypeVar("_Part", bound=BaseModel)


def _where(location: tuple[Any, ...]) -> str:
    """A field's dotted path, without the target's kind (``target.top_k``)."""
    parts = [str(p) for p in location]
    if len(parts) > 2 and parts[0] == "target":
        del parts[1]
    return ".".join(parts)


def _refusal(error: Any, names: Mapping[str, str]) -> str:
    where = _where(tuple(error["loc"]))
    name = names.get(where) or names.get(where.rsplit(".", 1)[-1]) or where
    got = repr(error.get("input"))[:60]
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind == "literal_error":
        return (
            f"{name} must be one of {str(ctx.get('expected', '')).replace(chr(39), '')}, got {got}"
        )
    if kind == "greater_than_equal":
        return f"{name} must be at least {ctx.get('ge')}, got {got}"
    if kind == "less_than_equal":
        return f"{name} must be at most {ctx.get('le')}, got {got}"
    if kind.startswith("int"):
        return f"{name} must be a whole number, got {got}"
    return f"{name}: {error['msg']}"


def parse_config(
    values: Mapping[str, Any], names: Mapping[str, str] | None = None
) -> EvaluationConfig:
    """The config of ``values``, checked once for every entry point: a ConfigError names
    the first field at fault as the caller's users know it (``names``: ``plan`` is the
    command line's ``--plan``, the service's ``context.plan``; a field not named keeps its
    own name, as the Python API's keywords)."""
    return parse_part(EvaluationConfig, values, names)


def parse_part(
    model: type[_Part], values: Mapping[str, Any], names: Mapping[str, str] | None = None
) -> _Part:
    """One part of the config (a target, a judge) checked as ``parse_config`` checks the
    whole: a recall target's keys given to another scene are still checked."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigError(_refusal(exc.errors()[0], names or {})) from None
