"""trec_eval's measure names: its ``-m`` syntax (``P.5,10``, ``ndcg.1=3,2=9``, ``official``,
``all_trec``) read into ragmeter specs, and each measure's printed name, print order and how
its ``all`` line combines the queries, so a TREC evaluation prints what ``trec_eval -q`` does.

The table follows trec_eval's own (measures.c, in its order); each family names the ragmeter
metric that computes it. Measures of other formats (preferences, multiple judges) are not here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ragmeter.errors import LimitError, MetricError
from ragmeter.metrics.registry import MAX_SPEC_CHARS, create_metric
from ragmeter.metrics.retrieval.ranking import Aggregate, RankingMetric

__all__ = [
    "NICKNAMES",
    "TrecMeasure",
    "expand_measures",
    "expand_specs",
    "is_trec_syntax",
]

Kind = Literal["single", "cut", "level", "doubles", "pairs", "special"]


@dataclass(frozen=True)
class _Family:
    """One of trec_eval's measures: its name, how its parameters read, its defaults, and
    the ragmeter metric (``spec``: a format with ``{}`` for a cut-off or level)."""

    name: str
    kind: Kind
    spec: str | None
    defaults: str = ""
    aggregate: Aggregate = "mean"
    per_query: bool = True
    integer: bool = False


_CUTS = "5,10,15,20,30,100,200,500,1000"
_FAMILIES: tuple[_Family, ...] = (
    _Family("runid", "special", None, per_query=False),
    _Family("num_q", "single", "num_q", aggregate="sum", per_query=False, integer=True),
    _Family("num_ret", "single", "num_ret", aggregate="sum", integer=True),
    _Family("num_rel", "single", "num_rel", aggregate="sum", integer=True),
    _Family("num_rel_ret", "single", "num_rel_ret", aggregate="sum", integer=True),
    _Family("map", "single", "map"),
    _Family("gm_map", "single", "gm_map", aggregate="gmean", per_query=False),
    _Family("Rprec", "single", "r_precision"),
    _Family("bpref", "single", "bpref"),
    _Family("recip_rank", "single", "mrr"),
    _Family("iprec_at_recall", "level", "iprec@{}", "0,.1,.2,.3,.4,.5,.6,.7,.8,.9,1"),
    _Family("P", "cut", "precision@{}", _CUTS),
    _Family("relstring", "special", None, "10"),
    _Family("recall", "cut", "recall@{}", _CUTS),
    _Family("infAP", "single", "infap"),
    _Family("gm_bpref", "single", "gm_bpref", aggregate="gmean", per_query=False),
    _Family("Rprec_mult", "level", "r_precision_mult@{}", "0.2,0.4,0.6,0.8,1,1.2,1.4,1.6,1.8,2"),
    _Family("utility", "doubles", "utility", "1,-1,0,0"),
    _Family("11pt_avg", "doubles", "iprec_avg", "0,.1,.2,.3,.4,.5,.6,.7,.8,.9,1"),
    _Family("binG", "single", "binary_gain"),
    _Family("G", "pairs", "normalized_gain"),
    _Family("dcg", "pairs", "dcg"),
    _Family("ndcg", "pairs", "ndcg"),
    _Family("ndcg_rel", "pairs", "ndcg_rel"),
    _Family("Rndcg", "pairs", "r_ndcg"),
    _Family("ndcg_cut", "cut", "ndcg@{}", _CUTS),
    _Family("map_cut", "cut", "map@{}", _CUTS),
    _Family("relative_P", "cut", "relative_precision@{}", _CUTS),
    _Family("success", "cut", "hit_rate@{}", "1,5,10"),
    _Family("set_P", "single", "set_precision"),
    _Family("set_relative_P", "single", "set_relative_precision"),
    _Family("set_recall", "single", "recall"),
    _Family("set_map", "single", "set_map"),
    _Family("set_F", "doubles", "set_f", "1.0"),
    _Family("num_nonrel_judged_ret", "single", "num_nonrel_judged_ret", "", "sum", True, True),
    _Family("rbp", "pairs", "rbp"),
    _Family("rbp_resid", "pairs", "rbp_resid"),
    _Family("unj", "cut", "unjudged@{}", "5,10,20"),
)
_BY_NAME = {f.name: f for f in _FAMILIES}

#: trec_eval's named sets of measures (-m official, -m all_trec, -m set)
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
                 "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
                 "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P", "relstring",
                 "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility",
                 "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall",
                 "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
            "set_recall", "set_relative_P", "set_map", "set_F"),
}  # fmt: skip


@dataclass(frozen=True)
class TrecMeasure:
    """One measure as trec_eval prints it. ``spec`` is the ragmeter metric giving its value
    per query; None for the two texts: ``runid`` (the run file's tag, on the ``all`` line
    only) and ``relstring`` (each query's first ``length`` grades, no ``all`` line)."""

    #: trec_eval's printed name: P_5, ndcg_cut_10, iprec_at_recall_0.10, ndcg_1=3,2=9
    name: str
    spec: str | None
    #: how the ``all`` line combines the queries: mean, sum, geometric mean (floor 1e-5)
    aggregate: Aggregate = "mean"
    #: printed per query by ``trec_eval -q`` (not gm_map, gm_bpref, num_q, runid)
    per_query: bool = True
    #: printed as a whole number (the counts)
    integer: bool = False
    #: relstring's length
    length: int | None = None


def is_trec_syntax(text: str) -> bool:
    """Whether ``text`` is trec_eval's ``-m`` form: a nickname, or a trec_eval measure with
    parameters after a dot (``P.5,10``)."""
    name = text.strip().partition(".")[0]
    return text.strip() in NICKNAMES or ("." in text and name in _BY_NAME)


def _numbers(text: str, what: str) -> list[float]:
    try:
        values = [float(p) for p in text.split(",")]
    except ValueError:
        raise MetricError(
            f"trec_eval measure '{what}': '{text}' is not a list of numbers"
        ) from None
    if not all(math.isfinite(v) for v in values):
        raise MetricError(f"trec_eval measure '{what}': '{text}' holds a number that is not finite")
    return values


def _format(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _measures_of(family: _Family, params: str | None) -> list[TrecMeasure]:
    """The measures a family gives with trec_eval's parameter text (None: its defaults)."""
    text = family.defaults if params is None else params
    aggregate, per_query = family.aggregate, family.per_query
    what = f"{family.name}.{text}"
    if family.kind == "single":
        if params is not None:
            raise MetricError(f"trec_eval measure '{family.name}' takes no parameters")
        return [TrecMeasure(family.name, family.spec, aggregate, per_query, family.integer)]
    if family.kind in ("cut", "level"):
        values = sorted(set(_numbers(text, what)))
        if family.kind == "cut":
            cuts = sorted({int(v) for v in values})  # trec_eval reads them with atol
            if not cuts or cuts[0] <= 0:
                raise MetricError(f"trec_eval measure '{what}': cut-offs must be positive")
            return [
                TrecMeasure(f"{family.name}_{c}", str(family.spec).format(c), aggregate)
                for c in cuts
            ]
        return [
            TrecMeasure(f"{family.name}_{v:3.2f}", str(family.spec).format(float(v)), aggregate)
            for v in values
        ]
    name = family.name if params is None else f"{family.name}_{params}"
    if family.kind == "special":
        length = int(_numbers(text, what)[0]) if family.name == "relstring" else None
        return [TrecMeasure(name, None, aggregate, per_query, length=length)]
    return [TrecMeasure(name, _with_params(family, params, what), aggregate, per_query)]


def _with_params(family: _Family, params: str | None, what: str) -> str:
    """A doubles or pairs family's spec with trec_eval's parameters as the metric's."""
    spec = str(family.spec)
    if params is None:
        return spec
    if family.kind == "doubles":
        values = _numbers(params, what)
        if family.name == "utility":
            if len(values) != 4:
                raise MetricError(f"trec_eval measure '{what}': utility takes 4 coefficients")
            a, b, c, d = (_format(v) for v in values)
            return f"{spec}(a={a},b={b},c={c},d={d})"
        if family.name == "set_F":
            return f"{spec}(beta={_format(values[0])})"
        return f"{spec}(levels=[{','.join(_format(v) for v in values)}])"
    gains, persistence = [], None
    for pair in params.split(","):
        key, sep, value = pair.partition("=")
        if not sep:
            raise MetricError(f"trec_eval measure '{what}': '{pair}' is not name=value")
        if key == "p" and family.name in ("rbp", "rbp_resid"):
            persistence = value
        else:
            gains.append(f"{key}:{value}")
    parts = [f"gains={{{','.join(gains)}}}"] if gains else []
    if persistence is not None:
        parts.append(f"p={persistence}")
    return f"{spec}({','.join(parts)})"


def _split(texts: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """The families asked for, in order, and the parameters given to any of them."""
    asked: list[str] = []
    params: dict[str, str] = {}
    for text in texts:
        text = text.strip()
        if len(text) > MAX_SPEC_CHARS:  # checked before its list is read
            raise LimitError(
                f"trec_eval measure '{text[:40]}...' is {len(text):,} characters long",
                setting=f"a metric spec holds at most {MAX_SPEC_CHARS} characters",
            )
        if text in NICKNAMES:
            asked.extend(NICKNAMES[text])
            continue
        name, dot, rest = text.partition(".")
        if name not in _BY_NAME:
            raise MetricError(f"'{text}' is not a trec_eval measure")
        asked.append(name)
        if dot:
            params[name] = rest
    return asked, params


def expand_measures(texts: Sequence[str]) -> list[TrecMeasure]:
    """trec_eval ``-m`` values (``official``, ``all_trec``, ``P.5,10``, ``ndcg_cut.10``,
    ``ndcg.1=3,2=9``, ``relstring.20``) or ragmeter specs (``ndcg@10``, ``P@5``, ``bpref``),
    in trec_eval's print order: its measures in its table's order, then ragmeter's in the
    order given. Parameters given to a measure apply wherever it is asked for (as
    ``-m all_trec -m relstring.20``); a measure asked for twice is printed once."""
    trec = [t for t in texts if is_trec_syntax(t) or t.strip() in _BY_NAME]
    asked, params = _split(trec)
    measures: list[TrecMeasure] = []
    for family in _FAMILIES:
        if family.name in asked:
            measures.extend(_measures_of(family, params.get(family.name)))
    seen = {m.name for m in measures} | {m.spec for m in measures if m.spec}
    for text in texts:
        if text in trec:
            continue
        measure = _own(text)
        if measure.name not in seen and measure.spec not in seen:
            measures.append(measure)
            seen |= {measure.name, str(measure.spec)}
    return measures


def _own(text: str) -> TrecMeasure:
    """A ragmeter spec as a measure: by trec_eval's name where it is one of its measures at
    default settings (``P@5`` -> ``P_5``), else by the name results carry."""
    metric = create_metric(text)
    if not isinstance(metric, RankingMetric):
        raise MetricError(f"'{text}' is not a ranking metric: a TREC evaluation scores rankings")
    name = metric.metric_name
    for family in _FAMILIES:
        if family.kind in ("single", "pairs") and family.spec == name:
            return _measures_of(family, None)[0]
        if family.kind in ("cut", "level") and family.spec is not None:
            head = family.spec.removesuffix("{}")
            if name.startswith(head) and "(" not in name:
                return _measures_of(family, name.removeprefix(head))[0]
    counts = metric.aggregate == "sum"
    return TrecMeasure(name, name, aggregate=metric.aggregate, integer=counts)


def expand_specs(items: Iterable[str]) -> list[str]:
    """Metric specs with trec_eval's ``-m`` forms read into ragmeter's: ``P.5,10`` ->
    ``precision@5``, ``precision@10``; ``official`` -> its measures (those with a value per
    query); other specs unchanged."""
    out: list[str] = []
    for item in items:
        if is_trec_syntax(item):
            out.extend(m.spec for m in expand_measures([item]) if m.spec is not None)
        else:
            out.append(item)
    return list(dict.fromkeys(out))
