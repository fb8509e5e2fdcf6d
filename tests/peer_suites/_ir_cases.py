"""The IR peers' own cases (``shared/peer_suites/vectors``: ir_measures, ranx, pytrec_eval), each
as the rows ragmeter is given, one per query the peer evaluates (``query`` the query id,
``retrieved_ids`` in rank order, ``reference_relevance`` the query's judgements, id -> grade),
the measure as the peer writes it, what a query with no relevant document scores there, and
the values the peer's test asserts: one check per query and one for the aggregate.

Conversions, as each peer's test feeds its library:
- ir_measures: qrels and run are TREC text. A run is ranked as trec_eval ranks it, by score
  descending and ties by docid descending (byte order); the rank column is ignored. Every query
  of the qrels is evaluated, one absent from the run with nothing retrieved (ir_measures gives it
  0, as its ``test_empty`` asserts); a query of the run absent from the qrels is not.
- pytrec_eval: runs are doc -> score maps, ranked the same way; the queries evaluated are those
  of the run that the qrels judge (trec_eval's rule).
- ranx: relevance judgements and runs are given as ranx's tests give them, already ranked, with
  ranx's integer ids; a query is its position.

Each peer scores a query with no relevant document 0: trec_eval's convention, kept by
pytrec_eval and by ir_measures (whose providers in these tests are pytrec_eval and ranx), and
ranx's own (each of its kernels starts ``if len(qrels) == 0: return 0.0``). The cases therefore
run with ``no_relevant="zero"``, the documented option; ragmeter's default is a null score.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragmeter.datasets.trec_rows import rank
from ragmeter.errors import MetricError
from ragmeter.metrics import create_metric
from tests.peer_suites._cases import PeerCase, peer_suites
from tests.peer_suites._differences import Difference

#: the files of these cases, in ``vectors/``, and how many cases each holds
IR_FILES = {"ir_measures.json": 82, "ranx.json": 53, "pytrec_eval.json": 12}
#: what a query with no relevant document scores in every one of these peers
NO_RELEVANT: Literal["zero"] = "zero"
Rows = tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class IrCheck:
    """One value a case asserts: a query's (``query``) or the aggregate's (None), with its
    tolerance and the name a failure gives, as a ``PeerCase``."""

    query: str | None
    peer: PeerCase


@dataclass(frozen=True)
class IrCase:
    """One case: the peer's ``id`` (``key`` adds the measure where the file repeats an id),
    ``source`` file, the ``metric`` spec as the peer writes it, the ``rows``, how the peer
    aggregates the queries (``mean``, or ``sum`` for ir_measures' counts) and the ``checks``."""

    id: str
    key: str
    source: str
    metric: str
    rows: Rows
    aggregate: str
    checks: tuple[IrCheck, ...]

    def __post_init__(self) -> None:
        missing = {c.query for c in self.checks if c.query is not None} - set(self.queries)
        if missing:  # the conversion left out a query the peer evaluates
            raise ValueError(f"{self.key}: no row for the queries {sorted(missing)}")

    @property
    def queries(self) -> list[str]:
        return [row["query"] for row in self.rows]

    def check(
        self,
        scores: Sequence[float | None],
        aggregate: float | None,
        listed: Mapping[str, Difference],
        path: str,
    ) -> None:
        """AssertionError naming the case, the path and each query (or the aggregate) whose
        value is not the peer's, or where listed in docs/peer-differences.md not ragmeter's
        documented value."""
        assert len(scores) == len(self.rows), f"{self.key} ({path}): {len(scores)} scores"
        failures = []
        for check in self.checks:
            value = aggregate if check.query is None else scores[self.queries.index(check.query)]
            try:
                check.peer.check(value, listed.get(check.peer.id), path)
            except AssertionError as exc:
                failures.append(str(exc))
        assert not failures, "\n".join(failures)

    @property
    def check_ids(self) -> list[str]:
        return [check.peer.id for check in self.checks]


def combine(values: Sequence[float | None], how: str) -> float | None:
    """The aggregate of a case's scores (nulls left out, as ragmeter's means leave them)."""
    scored = [v for v in values if v is not None]
    if not scored:
        return None
    if how == "sum":
        return sum(scored)
    if how == "mean":
        return sum(scored) / len(scored)
    raise ValueError(f"no case aggregates by {how!r}")


def trec_qrels(text: str) -> dict[str, dict[str, int]]:
    """TREC qrels (``QID 0 DOCID REL``): query -> docid -> grade, queries in file order."""
    qrels: dict[str, dict[str, int]] = {}
    for line in filter(str.strip, text.splitlines()):
        query, _, doc, grade = line.split()
        qrels.setdefault(query, {})[doc] = int(grade)
    return qrels


def trec_run(text: str) -> dict[str, list[str]]:
    """A TREC run (``QID Q0 DOCID RANK SCORE RUNID``): query -> docids ranked."""
    scored: dict[str, dict[str, float]] = {}
    for line in filter(str.strip, text.splitlines()):
        query, _, doc, _, score, _ = line.split()
        scored.setdefault(query, {})[doc] = float(score)
    return {query: rank(scores) for query, scores in scored.items()}


def _row(query: str, ranked: list[Any], grades: Mapping[Any, int]) -> dict[str, Any]:
    return {"query": query, "retrieved_ids": ranked, "reference_relevance": dict(grades)}


def _checks(
    key: str,
    metric: str,
    per_query: Mapping[str, float],
    aggregate: tuple[str, float] | None,
    precision: dict[str, Any],
) -> tuple[IrCheck, ...]:
    """One check per query and the aggregate's; a check is named by the case's key, with
    ``, query Q`` or ``, mean`` (``, sum``) after it when the case asserts several values."""
    values: list[tuple[str | None, str, float]] = [
        (query, f"query {query}", value) for query, value in per_query.items()
    ]
    if aggregate is not None:
        values.append((None, aggregate[0], aggregate[1]))
    several = len(values) > 1
    return tuple(
        IrCheck(
            query,
            PeerCase(
                id=f"{key}, {label}" if several else key,
                metric=metric,
                expected=value,
                **precision,
            ),
        )
        for query, label, value in values
    )


def _aggregate_of(metric: str) -> str:
    """How ir_measures aggregates a measure: a sum for its counts, else the mean (also for a
    measure ragmeter refuses, whose case then fails on every path, naming the error)."""
    try:
        return str(create_metric(metric).aggregate)
    except MetricError:
        return "mean"


def _ir_measures(raw: dict[str, Any], key: str) -> IrCase:
    qrels, run = trec_qrels(raw["qrels"]), trec_run(raw["run"])
    rows = tuple(_row(query, run.get(query, []), grades) for query, grades in qrels.items())
    how = _aggregate_of(raw["measure"])
    total = None if raw["aggregate"] is None else (how, raw["aggregate"])
    places = raw["places"]
    precision: dict[str, Any] = {"tol": 0.0} if places is None else {"places": places}
    checks = _checks(key, raw["measure"], raw["expected"], total, precision)
    return IrCase(raw["id"], key, "ir_measures.json", raw["measure"], rows, how, checks)


def _ranx(raw: dict[str, Any], key: str) -> IrCase:
    rows = tuple(
        _row(str(i), list(ranked), dict(judged))
        for i, (ranked, judged) in enumerate(zip(raw["ranked"], raw["qrels"], strict=True))
    )
    per_query = {str(i): value for i, value in enumerate(raw.get("expected", []))}
    mean = ("mean", raw["expected_mean"]) if "expected_mean" in raw else None
    checks = _checks(key, raw["metric"], per_query, mean, {"tol": raw["tol"]})
    return IrCase(raw["id"], key, "ranx.json", raw["metric"], rows, "mean", checks)


def _pytrec_eval(raw: dict[str, Any], key: str, data: dict[str, Any]) -> IrCase:
    run, qrels = data["runs"][raw["run"]], data["qrels"]
    rows = tuple(
        _row(query, rank(scores), qrels[query]) for query, scores in run.items() if query in qrels
    )
    per_query = {raw["query"]: raw["expected"]}
    checks = _checks(key, raw["measure"], per_query, None, {"places": raw["places"]})
    return IrCase(raw["id"], key, "pytrec_eval.json", raw["measure"], rows, "mean", checks)


def _read(name: str, data: dict[str, Any]) -> list[IrCase]:
    raws = data["cases"]
    ids = [raw["id"] for raw in raws]
    cases = []
    for raw in raws:
        metric = raw.get("measure", raw.get("metric"))
        key = raw["id"] if ids.count(raw["id"]) == 1 else f"{raw['id']} [{metric}]"
        if name == "ir_measures.json":
            cases.append(_ir_measures(raw, key))
        elif name == "ranx.json":
            cases.append(_ranx(raw, key))
        else:
            cases.append(_pytrec_eval(raw, key, data))
    return cases


def ir_cases(folder: Path | None = None) -> list[IrCase]:
    """Every case of the three IR files, in file order; [] without the folder."""
    folder = folder or peer_suites()
    if folder is None:
        return []
    cases: list[IrCase] = []
    for name in IR_FILES:
        data = json.loads((folder / "vectors" / name).read_text(encoding="utf-8"))
        cases += _read(name, data)
    return cases


@dataclass(frozen=True)
class CliBatch:
    """Every case of one file as one dataset and one metric list, for one ``ragmeter eval``:
    the rows of each distinct ranking once (``first``: a case's first row), each spec once by
    its result name (``names``: spec -> name), a spec ragmeter refuses kept off the command
    (``refused``: spec -> the error)."""

    rows: list[dict[str, Any]]
    specs: list[str]
    first: dict[str, int]
    names: dict[str, str]
    refused: dict[str, str]


def cli_batch(cases: Sequence[IrCase]) -> CliBatch:
    batch = CliBatch([], [], {}, {}, {})
    groups: dict[str, int] = {}
    for case in cases:
        group = json.dumps(case.rows)
        if group not in groups:
            groups[group] = len(batch.rows)
            batch.rows.extend(case.rows)
        batch.first[case.key] = groups[group]
        if case.metric in batch.names or case.metric in batch.refused:
            continue
        try:
            name = create_metric(case.metric).metric_name
        except MetricError as exc:
            batch.refused[case.metric] = str(exc)
            continue
        if name not in batch.names.values():  # one spec per result name
            batch.specs.append(case.metric)
        batch.names[case.metric] = name
    return batch


def as_scores(values: np.ndarray) -> list[float | None]:
    """A batch API array as scores: NaN (no score) as None."""
    return [None if math.isnan(v) else v for v in values.tolist()]
