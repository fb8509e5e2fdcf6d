"""The result of an evaluation: per metric, columns of results (records made when asked for),
with scores, summary and export. A report read back from a store or a server is built from
its records instead; both answer alike."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ragmeter.errors import NotFoundError
from ragmeter.reports.calibrated import CalibratedMean
from ragmeter.reports.columns import ResultColumns
from ragmeter.reports.human import HumanLabels, calibrate, summary_fields
from ragmeter.reports.record import ResultRecord, json_default
from ragmeter.reports.stats import mean_summary

if TYPE_CHECKING:
    import pandas as pd

    from ragmeter.reports.html_text import Language
    from ragmeter.wire.compare import MetricComparison, RowPair

__all__ = ["EvaluationReport", "MetricSummary", "ResultRecord", "RowSource", "json_default"]

#: mean, count, null, ci95_low, ci95_high, ci_note, small_sample, scale (and with human
#: labels: calibrated_mean, calibrated_low, calibrated_high, labelled, calibrated_note)
MetricSummary = dict[str, float | int | str | None]


class RowSource(Protocol):
    """The rows a report's results are about (a ``Dataset``): queries and raw rows."""

    def __len__(self) -> int: ...
    def column(self, name: str) -> Sequence[Any]: ...
    def raw(self, index: int) -> dict[str, Any]: ...


class EvaluationReport:
    """Results of ``evaluate``: ``scores``, ``summary``, ``to_pandas``, ``to_jsonl``.

    Iteration, ``results`` and the exports go row by row (every metric of row 0, then row 1).
    """

    def __init__(
        self,
        records: list[ResultRecord],
        metric_names: list[str],
        rows: int,
        seconds: float,
        usage: dict[str, float] | None = None,
        target: str | None = None,
    ) -> None:
        self._set(metric_names, rows, seconds, usage, target)
        self._records: list[ResultRecord] | None = records
        self._table: RowSource | None = None
        self._columns: dict[str, ResultColumns] = {}
        self._by_metric: dict[str, list[ResultRecord]] = {name: [] for name in metric_names}
        for record in records:
            self._by_metric[record.metric_name].append(record)

    @classmethod
    def from_columns(
        cls,
        rows: RowSource,
        columns: Sequence[ResultColumns],
        seconds: float,
        usage: dict[str, float] | None = None,
        target: str | None = None,
    ) -> EvaluationReport:
        """A report over ``rows`` from each metric's result columns (in metric order)."""
        report = cls.__new__(cls)
        report._set([c.metric_name for c in columns], len(rows), seconds, usage, target)
        report._records = None
        report._table = rows
        report._columns = {c.metric_name: c for c in columns}
        report._by_metric = {}
        return report

    def _set(
        self,
        metric_names: list[str],
        rows: int,
        seconds: float,
        usage: dict[str, float] | None,
        target: str | None,
    ) -> None:
        #: what produced the predictions (a retriever, an app), if not the rows themselves
        self.target = target
        #: what the run cost the judge and the embedder (None when no judge was used)
        self.usage = usage
        self.metric_names = list(metric_names)
        self.rows = rows
        self.seconds = seconds
        #: the stored run these results belong to (None: kept in memory only)
        self.run_id: str | None = None
        #: each metric's scale as shown beside its name (``0-1``), where known
        self.scales: dict[str, str] = {}
        #: people's values of some rows, by metric (a stored run's labels): the summary
        #: corrects those metrics' means by them (``calibrated``)
        self.human_labels: dict[str, HumanLabels] = {}

    # -- records, made from the columns when asked for -------------------------------------

    def _record(self, columns: ResultColumns, index: int, raw: dict[str, Any]) -> ResultRecord:
        assert self._table is not None  # only called on a report made from columns
        return columns.record(index, index, self._table.column("query")[index], raw)

    def __iter__(self) -> Iterator[ResultRecord]:
        if self._records is not None:
            return iter(self._records)
        return self._iter_columns()

    def _iter_columns(self) -> Iterator[ResultRecord]:
        assert self._table is not None
        columns = list(self._columns.values())
        for index in range(self.rows):
            raw = self._table.raw(index)  # one dict per row, shared by its results
            for metric in columns:
                yield self._record(metric, index, raw)

    def __len__(self) -> int:
        if self._records is not None:
            return len(self._records)
        return self.rows * len(self._columns)

    def __repr__(self) -> str:
        return f"EvaluationReport({self.rows} rows x {len(self.metric_names)} metrics)"

    def results(self, metric_name: str | None = None) -> list[ResultRecord]:
        """Records of one metric in row order, or all records (row by row)."""
        if metric_name is None:
            return list(self)
        if self._records is not None:
            return list(self._metric_records(metric_name))
        columns = self._metric_columns(metric_name)
        assert self._table is not None
        return [self._record(columns, i, self._table.raw(i)) for i in range(self.rows)]

    def _unknown(self, metric_name: str) -> NotFoundError:
        return NotFoundError(
            f"no metric '{metric_name}' in this report; it has: {', '.join(self.metric_names)}"
        )

    def _metric_records(self, metric_name: str) -> list[ResultRecord]:
        try:
            return self._by_metric[metric_name]
        except KeyError:
            raise self._unknown(metric_name) from None

    def _metric_columns(self, metric_name: str) -> ResultColumns:
        try:
            return self._columns[metric_name]
        except KeyError:
            raise self._unknown(metric_name) from None

    def scores(self, metric_name: str) -> list[float | None]:
        """One score per row, in row order; None where the metric gave no score."""
        if self._records is not None:
            return [r.score for r in self._metric_records(metric_name)]
        return self._metric_columns(metric_name).score_list()

    def row_indices(self, metric_name: str) -> np.ndarray:
        """The row index of each of ``scores(metric_name)``."""
        if self._records is not None:
            records = self._metric_records(metric_name)
            return np.array([r.row_index for r in records], dtype=np.int64)
        self._metric_columns(metric_name)
        return np.arange(self.rows, dtype=np.int64)

    def calibrated(self, metric_name: str, *, confidence: float = 0.95) -> CalibratedMean | None:
        """The metric's mean corrected by its human labels (``reports.calibrated``: PPI++
        with its interval), or None when it has none."""
        human = self.human_labels.get(metric_name)
        if human is None:
            return None
        scores = self._score_array(metric_name)
        return calibrate(self.row_indices(metric_name), scores, human, confidence)

    def _score_array(self, metric_name: str) -> np.ndarray:
        """Scores as float64, NaN where there is none."""
        if self._records is not None:
            scores = self.scores(metric_name)
            return np.array([np.nan if s is None else s for s in scores], dtype=np.float64)
        return self._metric_columns(metric_name).scores

    def errors(self, metric_name: str | None = None) -> list[ResultRecord]:
        """Records with a null score (each carries its reason in ``error``)."""
        if self._records is not None:
            return [r for r in self.results(metric_name) if r.score is None]
        assert self._table is not None
        names = self.metric_names if metric_name is None else [metric_name]
        found = sorted(
            (int(i), position)
            for position, name in enumerate(names)
            for i in self._metric_columns(name).null_rows()
        )
        return [
            self._record(self._columns[names[position]], i, self._table.raw(i))
            for i, position in found
        ]

    def worst(self, metric_name: str, count: int) -> list[ResultRecord]:
        """The ``count`` worst records of a metric: lowest scores first, then nulls, ties in
        row order; only these records are made."""
        scores = self._score_array(metric_name)
        missing = np.isnan(scores)
        order = np.lexsort((np.where(missing, 0.0, scores), missing))[: max(count, 0)]
        if self._records is not None:
            records = self._metric_records(metric_name)
            return [records[int(i)] for i in order]
        columns = self._metric_columns(metric_name)
        assert self._table is not None
        return [self._record(columns, int(i), self._table.raw(int(i))) for i in order]

    def null_reasons(self, metric_name: str, limit: int) -> list[tuple[str | None, str, int]]:
        """Why a metric's scores are null: (error kind, reason, count), the most frequent
        ``limit`` first."""
        counted = Counter((r.error_kind, r.error or "") for r in self.errors(metric_name))
        return [(kind, reason, n) for (kind, reason), n in counted.most_common(limit)]

    def summary(
        self, *, confidence: float = 0.95, resamples: int = 1000
    ) -> dict[str, MetricSummary]:
        """Per metric: mean, count of scores, count of nulls, a bootstrap CI of the mean with
        ``ci_note`` saying when it is not informative (``stats.mean_summary``), and the
        metric's ``scale`` where known (``0-1``, ``0-5``). A metric with human labels
        (``human_labels``) also has ``calibrated_mean`` and its interval
        (``calibrated_low``, ``calibrated_high``), ``labelled`` and ``calibrated_note``.

        Null scores are excluded from the mean and counted in ``null``.
        """
        out: dict[str, MetricSummary] = {}
        for name in self.metric_names:
            found = mean_summary(
                self._score_array(name), confidence=confidence, resamples=resamples
            )
            out[name] = {**found, "scale": self.scales.get(name)}
            corrected = self.calibrated(name, confidence=confidence)
            if corrected is not None:
                out[name].update(summary_fields(corrected))
        return out

    def to_pandas(self) -> pd.DataFrame:
        """One DataFrame row per row x metric (row by row), with the record fields as
        columns."""
        import pandas as pd

        fields = list(ResultRecord.__dataclass_fields__)
        if self._records is not None:
            return pd.DataFrame([r.to_dict() for r in self._records], columns=fields)
        return pd.DataFrame(self._column_lists(), columns=fields)

    def _column_lists(self) -> dict[str, list[Any]]:
        """Each record field as one list in record order, read straight from the columns."""
        assert self._table is not None
        metrics = list(self._columns.values())
        width, rows = len(metrics), range(self.rows)
        queries = self._table.column("query")

        def interleave(per_metric: list[list[Any]]) -> list[Any]:
            return [value for values in zip(*per_metric, strict=True) for value in values]

        reasons = [[_reason_of(m, i) for i in rows] for m in metrics]
        return {
            "row_index": [i for i in rows for _ in range(width)],
            "metric_name": [m.metric_name for m in metrics] * self.rows,
            "score": interleave([m.score_list() for m in metrics]),
            "passing": interleave([[m.passing.get(i) for i in rows] for m in metrics]),
            "feedback": interleave([[m.feedback.get(i) for i in rows] for m in metrics]),
            "error": interleave([[r[0] for r in found] for found in reasons]),
            "prediction": interleave([[m.prediction_of(i) for i in rows] for m in metrics]),
            "contexts": interleave([[m.contexts_of(i) for i in rows] for m in metrics]),
            "prediction_cost": interleave([[m.cost.get(i, 0) for i in rows] for m in metrics]),
            "query": [queries[i] for i in rows for _ in range(width)],
            "raw_dataset": [raw for raw in self._table_raws() for _ in range(width)],
            "cost": interleave([[m.usage.get(i) for i in rows] for m in metrics]),
            "error_kind": interleave([[r[1] for r in found] for found in reasons]),
            "details": interleave([_sparse(m.details, self.rows) for m in metrics]),
        }

    def _table_raws(self) -> Iterator[dict[str, Any]]:
        assert self._table is not None
        return map(self._table.raw, range(self.rows))

    def to_jsonl(
        self,
        path: str | Path,
        *,
        extra: Mapping[str, Any] | None = None,
        append: bool = False,
    ) -> Path:
        """Write one JSON line per row x metric (row by row) and return the path. ``extra``
        fields (e.g. ``{"retriever": "bm25"}``) go into every line."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a" if append else "w", encoding="utf-8") as handle:
            for record in self:
                line = {**extra, **record.to_dict()} if extra else record.to_dict()
                handle.write(json.dumps(line, ensure_ascii=False, default=json_default))
                handle.write("\n")
        return target

    def to_html(
        self,
        path: str | Path,
        *,
        title: str | None = None,
        worst: int = 20,
        language: Language = "en",
        facts: Sequence[tuple[str, str]] = (),
        comparison: Sequence[MetricComparison] = (),
        regressions: Mapping[str, Sequence[RowPair]] | None = None,
    ) -> Path:
        """Write the report as one self-contained HTML file (summary, histograms, the
        ``worst`` rows per metric with the judge's reasoning; given a ``comparison``, each
        metric's paired difference and the ``regressions`` rows) and return the path. The
        file fetches nothing when opened. ``language``: en or zh. ``facts`` (label, value)
        head the summary; by default the run id and target, where known. A stored run's
        report, compared with a baseline run: ``ragmeter.load_run(run_id).to_html(...)``."""
        from ragmeter.reports.html import render_html, write_page
        from ragmeter.reports.html_text import LANGUAGES, TEXT

        text = TEXT[language] if language in LANGUAGES else TEXT["en"]
        if not facts:
            known = [(text["run"], self.run_id), (text["target"], self.target)]
            facts = [(label, value) for label, value in known if value]
        page = render_html(
            self,
            title=title or text["report"],
            facts=facts,
            comparison=comparison,
            regressions=regressions,
            worst=worst,
            language=language,
        )
        return write_page(page, path)


def _sparse(values: Mapping[int, Any], rows: int) -> list[Any]:
    """A sparse per-row column as a list (no per-row lookups when it is empty)."""
    if not values:
        return [None] * rows
    return [values.get(i) for i in range(rows)]


def _reason_of(columns: ResultColumns, index: int) -> tuple[str | None, str | None]:
    """(error, error_kind) of a record: why it has no score, or (None, None)."""
    return columns.reason(index) if columns.score(index) is None else (None, None)
