"""One registry keyed by (kind, name), and metric specs such as ``ndcg@10`` or
``retrieval_similarity(reduce=first)@5`` that round-trip through their string."""

from __future__ import annotations

import difflib
import inspect
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, TypeVar

from ragmeter._specs import split_outside_brackets
from ragmeter.errors import ConfigError, LimitError, MetricError, NotFoundError
from ragmeter.metrics.base import EvaluationMetric

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_SPEC_CHARS",
    "OBJECT_PARAMETERS",
    "MetricSpec",
    "Registry",
    "RegistryEntry",
    "UnknownMetricError",
    "create_metric",
    "entry_of",
    "first_sentence",
    "metric_entries",
    "parse_metric_spec",
    "register_metric",
    "registry",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ragmeter.metrics"
ParamValue = str | int | float | bool
#: a spec's ``@`` value: a rank cut-off, or (``iprec@0.1``) a recall level or multiple
Cut = int | float


class UnknownMetricError(MetricError, NotFoundError):
    """No metric is registered under the requested name."""


@dataclass(frozen=True)
class RegistryEntry:
    """A registered factory; ``aliases`` include the class name when it is a class."""

    kind: str
    name: str
    factory: Callable[..., Any]
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def class_name(self) -> str | None:
        return self.factory.__name__ if inspect.isclass(self.factory) else None

    @property
    def takes_k(self) -> bool:
        """Whether ``@k`` is a rank cut-off (the factory's ``top_k``)."""
        return self.takes("top_k")

    @property
    def takes_at(self) -> bool:
        """Whether ``@x`` is a number of another kind (the factory's ``at``: a recall level,
        a multiple of R)."""
        return self.takes("at")

    def takes(self, parameter: str) -> bool:
        try:
            return parameter in inspect.signature(self.factory).parameters
        except (TypeError, ValueError):
            return False


@dataclass
class Registry:
    """Factories keyed by (kind, lower-cased name or alias)."""

    _entries: dict[tuple[str, str], RegistryEntry] = field(default_factory=dict)
    _names: dict[tuple[str, str], str] = field(default_factory=dict)
    _loaded_groups: set[str] = field(default_factory=set)

    def add(self, entry: RegistryEntry) -> None:
        keys = {entry.name.lower(), *(a.lower() for a in entry.aliases)}
        for key in keys:
            owner = self._names.get((entry.kind, key))
            if owner is not None and owner != entry.name.lower():
                raise MetricError(f"{entry.kind} name '{key}' is already registered by '{owner}'")
        self._entries[(entry.kind, entry.name.lower())] = entry
        for key in keys:
            self._names[(entry.kind, key)] = entry.name.lower()

    def remove(self, kind: str, name: str) -> None:
        canonical = self._names.get((kind, name.lower()))
        if canonical is None:
            return
        self._entries.pop((kind, canonical), None)
        for key in [k for k, v in self._names.items() if k[0] == kind and v == canonical]:
            del self._names[key]

    def find(self, kind: str, name: str) -> RegistryEntry | None:
        """The entry registered as ``name`` (any case), or None."""
        self._load_entry_points(kind)
        canonical = self._names.get((kind, name.lower()))
        return None if canonical is None else self._entries[(kind, canonical)]

    def get(self, kind: str, name: str) -> RegistryEntry:
        self._load_entry_points(kind)
        canonical = self._names.get((kind, name.lower()))
        if canonical is None:
            known = sorted(e.name for (k, _), e in self._entries.items() if k == kind)
            close = difflib.get_close_matches(
                name.lower(), [n for k, n in self._names if k == kind]
            )
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise UnknownMetricError(f"unknown {kind} '{name}'.{hint} Known: {', '.join(known)}")
        return self._entries[(kind, canonical)]

    def entries(self, kind: str) -> list[RegistryEntry]:
        self._load_entry_points(kind)
        return sorted((e for (k, _), e in self._entries.items() if k == kind), key=lambda e: e.name)

    def _load_entry_points(self, kind: str) -> None:
        if kind != "metric" or ENTRY_POINT_GROUP in self._loaded_groups:
            return
        self._loaded_groups.add(ENTRY_POINT_GROUP)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                target = ep.load()
            except Exception as exc:  # a broken plugin must not break every other metric
                log.warning("cannot load metric entry point %s = %s: %s", ep.name, ep.value, exc)
                continue
            if (kind, ep.name.lower()) in self._names:
                continue  # registered on import by its own decorator
            self.add(_entry_for("metric", ep.name, target, (), None))


registry = Registry()

T = TypeVar("T")


def _entry_for(
    kind: str,
    name: str,
    factory: Callable[..., Any],
    aliases: Iterable[str],
    description: str | None,
) -> RegistryEntry:
    names = list(aliases)
    if inspect.isclass(factory) and factory.__name__.lower() != name.lower():
        names.append(factory.__name__)
    if description is None:
        own = getattr(factory, "description", None)
        description = own if isinstance(own, str) and own else inspect.getdoc(factory) or ""
    return RegistryEntry(kind, name, factory, tuple(names), first_sentence(description))


_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z0-9`\"'(]|$)|[。！？]")


def first_sentence(text: str) -> str:
    """The first sentence of a description's first paragraph, its lines joined: what a
    one-line listing shows without cutting a wrapped sentence in the middle."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    end = _SENTENCE_END.search(paragraph)
    return (paragraph[: end.end()] if end else paragraph).replace("``", "")


def register_metric(
    name: str | Callable[..., Any] | None = None,
    *,
    aliases: Iterable[str] = (),
    description: str | None = None,
) -> Any:
    """Register a metric class or factory: ``@register_metric`` or ``@register_metric("name")``."""

    def decorate(factory: Callable[..., T]) -> Callable[..., T]:
        key = name if isinstance(name, str) else _snake_case(factory.__name__)
        registry.add(_entry_for("metric", key, factory, aliases, description))
        return factory

    if callable(name):
        return decorate(name)
    return decorate


def metric_entries() -> list[RegistryEntry]:
    """Every registered metric, built-in, decorated and from entry points, by name."""
    return registry.entries("metric")


def _snake_case(text: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower()


# -- specs -------------------------------------------------------------------------------

#: the longest spec accepted: the length of a stored result's ``metric_name``, which is the spec
MAX_SPEC_CHARS = 200
#: the largest ``@k``: far beyond any retrieval depth (the service caps it lower still)
MAX_K = 2**31 - 1
#: parameters that must be objects, which a spec (text) cannot give -> what is used instead
OBJECT_PARAMETERS: dict[str, str] = {
    "judge": "the evaluation's judge is used (context.model, --judge-model)",
    "embedder": "the evaluation's embedder is used (context.embedding_model, --embedding-model)",
}

_NAME = re.compile(r"[A-Za-z0-9_][\w.\-]*\Z")
_KEY = re.compile(r"[A-Za-z_]\w*\Z")
_FORM = "expected name, name@k or name(key=value,...)@k"


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: ``name(key=value, ...)@k``."""

    name: str
    params: tuple[tuple[str, ParamValue], ...] = ()
    k: Cut | None = None

    def __str__(self) -> str:
        text = self.name
        if self.params:
            text += "(" + ",".join(f"{k}={_format_value(v)}" for k, v in self.params) + ")"
        if self.k is not None:
            text += f"@{self.k}"
        return text


def _parse_value(text: str) -> ParamValue:
    if text[:1] in "{[":  # a map or a list (gains={1:3,2:9}, levels=[0.2,0.5]): its text
        return "".join(text.split())
    lowered = text.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text.strip("'\"")


def _format_value(value: ParamValue) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _split_spec(text: str) -> tuple[str, str | None, str | None]:
    """``(name, parameters or None, k or None)`` of a spec, cut at ``(``, ``)`` and ``@`` and
    stripped in Python: no pattern that could backtrack over a long run of spaces."""
    at = text.rfind("@")
    has_k = at > text.rfind(")")  # an '@' inside the parameters is part of a value
    head, k = (text[:at], text[at + 1 :]) if has_k else (text, "")
    head = head.strip()
    params = None
    if "(" in head or ")" in head:
        name, _, rest = head.partition("(")
        if not rest.endswith(")") or "(" in rest or ")" in rest[:-1]:
            raise MetricError(f"cannot parse metric '{text}'; {_FORM}")
        head, params = name.strip(), rest[:-1]
    if not _NAME.match(head):
        raise MetricError(f"cannot parse metric '{text}'; {_FORM}")
    return head, params, (k.strip() if has_k else None)


def _parse_params(params: str, text: str) -> tuple[tuple[str, ParamValue], ...]:
    parsed: list[tuple[str, ParamValue]] = []
    if not params.strip():
        return ()
    for part in split_outside_brackets(params):
        key, equals, value = part.partition("=")
        key = key.strip()
        if not equals or not _KEY.match(key):
            raise MetricError(f"cannot parse parameter '{part.strip()}' in metric '{text}'")
        parsed.append((key, _parse_value(value.strip())))
    return tuple(parsed)


_DECIMAL = re.compile(r"[0-9]{0,12}\.[0-9]{1,12}\Z")


def _parse_k(k: str, text: str) -> Cut:
    """A rank cut-off (a whole number from 1) or, as in ``iprec@0.1``, a decimal number."""
    if k.isascii() and _DECIMAL.match(k):
        return float(k)
    if not (k.isascii() and k.isdigit()) or len(k) > len(str(MAX_K)) or not 1 <= int(k) <= MAX_K:
        raise MetricError(
            f"metric '{text}': @k must be a whole number from 1 to {MAX_K} (or a decimal "
            "number, for a recall level)"
        )
    return int(k)


#: trec_eval's names of a measure at a cut-off: P_5, ndcg_cut_10, iprec_at_recall_0.10
_TREC_SUFFIX = re.compile(r"(.+?)_([0-9]+(?:\.[0-9]+)?)\Z")


def _resolve(parsed: MetricSpec) -> tuple[RegistryEntry, MetricSpec]:
    """The registered entry of a spec and the spec in its terms: a trec_eval name with its
    cut-off as a suffix (``P_5``) is the family's name with ``@5``."""
    entry = registry.find("metric", parsed.name)
    if entry is not None:
        return entry, parsed
    suffix = _TREC_SUFFIX.match(parsed.name)
    if suffix is not None and parsed.k is None:
        family = registry.find("metric", suffix[1])
        if family is not None and (family.takes_k or family.takes_at):
            k = _parse_k(suffix[2], str(parsed))
            return family, MetricSpec(suffix[1], parsed.params, k)
    return registry.get("metric", parsed.name), parsed  # raises: unknown, with suggestions


def parse_metric_spec(text: str) -> MetricSpec:
    """Parse ``ndcg@10``, ``RetrieverMRRMetric`` or ``mrr(match=overlap)@5``; never eval'd.
    A spec is at most ``MAX_SPEC_CHARS`` long (the length of a stored metric name)."""
    if len(text) > MAX_SPEC_CHARS:
        raise LimitError(
            f"metric '{text[:40]}...' is {len(text):,} characters long",
            setting=f"a metric spec holds at most {MAX_SPEC_CHARS} characters",
        )
    name, params, k = _split_spec(text)
    return MetricSpec(
        name,
        _parse_params(params, text) if params is not None else (),
        _parse_k(k, text) if k is not None else None,
    )


def entry_of(metric_name: str) -> RegistryEntry | None:
    """The entry a result's metric name (a spec, a class name, a trec_eval name) resolves
    to, or None when it names no registered metric."""
    try:
        return _resolve(parse_metric_spec(metric_name))[0]
    except (MetricError, ConfigError, ValueError):
        return None


def create_metric(spec: str | MetricSpec, *, top_k: int | None = None) -> Any:
    """Build a metric from its spec; ``top_k`` is the default cut-off for metrics without ``@k``.

    One naming rule: a result carries the name as written, aliases canonicalised (``RR@10``
    -> ``mrr@10``) and DB-GPT class names kept; ``@k`` appears only when the spec has it. A
    default ``top_k`` changes the cut, never the name, so ``report.scores("mrr")`` finds the
    metric asked for as ``mrr`` whatever the cut-off.
    """
    parsed = parse_metric_spec(spec) if isinstance(spec, str) else spec
    entry, parsed = _resolve(parsed)
    objects = [key for key, _ in parsed.params if key in OBJECT_PARAMETERS]
    if objects:
        raise MetricError(
            f"metric '{parsed.name}': parameter '{objects[0]}' takes an object, which a metric "
            f"name cannot give; {OBJECT_PARAMETERS[objects[0]]}"
        )
    kwargs: dict[str, Any] = dict(parsed.params)
    k = parsed.k
    if k is not None and entry.takes_at:
        kwargs["at"] = k
    elif k is not None:
        if not entry.takes_k:
            raise MetricError(f"metric '{entry.name}' takes no @k cut-off")
        if not isinstance(k, int):
            raise MetricError(f"metric '{parsed}': @k must be a whole number from 1, got {k}")
        kwargs["top_k"] = k
    elif "top_k" not in kwargs and top_k is not None and entry.takes_k:
        kwargs["top_k"] = top_k
    try:
        metric = entry.factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise MetricError(f"metric '{parsed}': {exc}") from exc
    if not isinstance(metric, EvaluationMetric):
        raise MetricError(
            f"metric '{entry.name}' built a {type(metric).__name__}, not an EvaluationMetric"
        )
    by_class_name = entry.class_name is not None and parsed.name.lower() == entry.class_name.lower()
    base = entry.class_name if by_class_name and entry.class_name else entry.name
    name = str(MetricSpec(base, parsed.params, parsed.k))
    if len(name) > MAX_SPEC_CHARS:  # written out canonically (1e9 -> 1000000000.0), it grew
        raise LimitError(
            f"metric '{name[:40]}...' is {len(name):,} characters long as stored",
            setting=f"a metric spec holds at most {MAX_SPEC_CHARS} characters",
        )
    metric.metric_name = name
    return metric
