"""A stored run read for its report, in SQL: summary, scores, the worst results and the null
reasons, without loading every result (a 100,000-row run's report reads a few columns and a
few dozen rows), and written as one HTML file, optionally against a baseline run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragmeter.reports import EvaluationReport, MetricSummary, ResultRecord
from ragmeter.reports.html import DEFAULT_WORST, check_options, render_html, write_page
from ragmeter.reports.html_text import TEXT, Language
from ragmeter.runs.storage.cards import CardStore, headline, judge_model_of
from ragmeter.runs.storage.result_columns import score_column
from ragmeter.runs.storage.result_store import null_reasons, worst_records
from ragmeter.runs.storage.store import metric_names
from ragmeter.runs.views.agreement import run_agreement
from ragmeter.runs.views.browse import MAX_REASONS
from ragmeter.runs.views.pairs import choose, compare_runs, pair_page
from ragmeter.runs.views.run_view import dataset_text, run_info

if TYPE_CHECKING:
    from ragmeter.runs.storage.store import RunStore
    from ragmeter.store.models import RunRecord
    from ragmeter.wire.compare import MetricComparison, RowPair

__all__ = [
    "REGRESSED_ROWS",
    "StoredRun",
    "load_run",
]

#: rows listed per metric under "the rows that regressed most"
REGRESSED_ROWS = 20


def load_run(run_id: str, *, store: str | None = None) -> StoredRun:
    """A stored run of this store (``$RAGMETER_HOME``'s, or the one at the SQLAlchemy URL
    ``store``) by id or name, for its HTML report or its full ``report()``; NotFoundError
    naming it when there is none."""
    from ragmeter.runs.storage.store import RunStore
    from ragmeter.store.db import open_store

    return StoredRun(RunStore(open_store(store)), run_id)


class StoredRun:
    """One stored run as the HTML report reads it (``ragmeter.reports.html.ReportLike``)."""

    def __init__(self, runs: RunStore, run_id: str) -> None:
        self.runs = runs
        self.record: RunRecord = runs.get(run_id)
        self.run_id: str = self.record.id
        self.metric_names = metric_names(self.record)
        self.rows = self.record.done_rows
        started, finished = self.record.started_at, self.record.finished_at
        self.seconds = (finished - started).total_seconds() if started and finished else 0.0
        self.usage: dict[str, float] | None = dict(self.record.usage or {})

    def __repr__(self) -> str:
        return f"StoredRun({self.run_id!r}, {self.rows} rows, {', '.join(self.metric_names)})"

    def report(self) -> EvaluationReport:
        """Every stored result as an ``EvaluationReport`` (loads them all)."""
        report = self.runs.report(self.run_id)
        report.run_id = self.run_id
        report.target = self.record.scene_value
        return report

    def summary(self) -> dict[str, MetricSummary]:
        return self.runs.summary(self.record)

    def scores(self, metric_name: str) -> list[float | None]:
        """The metric's scores in row order (None where null)."""
        with self.runs.store.session() as session:
            column = score_column(session, self.run_id, metric_name)
        return [None if s != s else s for s in column.scores.tolist()]

    def worst(self, metric_name: str, count: int) -> list[ResultRecord]:
        """The ``count`` lowest scores of a metric, then its nulls, ties in row order: read
        on the run/metric/score index."""
        with self.runs.store.session() as session:
            return worst_records(session, self.run_id, self.record.dataset_id, metric_name, count)

    def null_reasons(self, metric_name: str, limit: int) -> list[tuple[str | None, str, int]]:
        """(error kind, reason, count) of the metric's null scores, the most frequent first."""
        with self.runs.store.session() as session:
            return null_reasons(session, self.run_id, metric_name, min(limit, MAX_REASONS))

    def facts(self, language: Language) -> list[tuple[str, str]]:
        """The run's id, name, tags and note, dataset version, target, judge, code, state
        and creation time, labelled in ``language`` (what is unknown is left out). No path
        of the machine that made it: a dataset is its name, version, file name and hash."""
        text, info = TEXT[language], run_info(self.runs, self.record, summary=False)
        lineage = info.lineage
        facts = [(text["run"], info.run_id), (text["name"], info.name or "")]
        facts += [(text["tags"], ", ".join(info.tags)), (text["note"], info.note)]
        facts.append((text["dataset"], dataset_text(info.dataset)))
        facts.append((text["target"], info.label))
        judge = lineage.get("judge") or {}
        if judge:
            prompt = judge.get("prompt") or {}
            code, version = prompt.get("code"), prompt.get("version")
            said = f"{judge.get('model')} · prompt {code}" + (f"@{version}" if version else "")
            if info.scripted_judge:
                said = f"{text['scripted']} · {said}"
            facts.append((text["judge"], said))
            cards = CardStore(self.runs.store).of_metrics(
                judge_model_of(lineage), self.metric_names
            )
            for metric, stored in cards.items():
                label = f"{text['judge_card']} · {metric}"
                facts.append((label, f"{headline(stored.card, prefix='')} (card {stored.id})"))
        code = lineage.get("code") or {}
        if code.get("commit"):
            dirty = " (uncommitted changes)" if code.get("dirty") else ""
            ragmeter = lineage.get("ragmeter")
            facts.append((text["code"], f"{code['commit'][:12]}{dirty} · ragmeter {ragmeter}"))
        facts.append((text["state"], info.state))
        facts.append((text["created"], info.created_at.strftime("%Y-%m-%d %H:%M")))
        return [(label, value) for label, value in facts if value]

    def compare_with(
        self, baseline: StoredRun, rows: int = REGRESSED_ROWS
    ) -> tuple[list[MetricComparison], dict[str, list[RowPair]]]:
        """The comparison of ``baseline`` (base) and this run (other), and per compared
        metric the ``rows`` pairs that regressed most."""
        base = (baseline.run_id, baseline.metric_names)
        mine = (self.run_id, self.metric_names)
        comparison = compare_runs(self.runs.store, base, mine)
        regressions: dict[str, list[RowPair]] = {}
        for item in comparison:
            chosen = choose(self.runs.store, base, mine, item.metric_name)
            page = pair_page(self.runs.store, chosen, regressions_only=True, offset=0, limit=rows)
            regressions[item.metric_name] = page.items
        return comparison, regressions

    def to_html(
        self,
        path: str | Path,
        *,
        compare: str | StoredRun | None = None,
        worst: int = DEFAULT_WORST,
        language: Language = "en",
    ) -> Path:
        """Write the run's report as one self-contained HTML file (``EvaluationReport.to_html``
        has the layout) and return the path; with ``compare`` (a baseline run of this store, or
        its id) also each metric's paired difference and the rows that regressed most."""
        check_options(worst, language)
        text = TEXT[language]
        facts = self.facts(language)
        comparison: list[MetricComparison] = []
        regressions: dict[str, list[RowPair]] = {}
        if compare is not None:
            base = compare if isinstance(compare, StoredRun) else StoredRun(self.runs, compare)
            facts.append((text["baseline"], base.run_id))
            comparison, regressions = self.compare_with(base)
        page = render_html(
            self,
            title=f"{text['report']} · {self.run_id[:12]}",
            facts=facts,
            comparison=comparison,
            regressions=regressions,
            worst=worst,
            language=language,
            agreement=run_agreement(self.runs.store, self.record),
        )
        return write_page(page, path)
