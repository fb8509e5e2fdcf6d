"""``ragmeter report``: a stored run as one self-contained HTML file, optionally against a
baseline run (paired differences, Holm-corrected p-values, the rows that regressed most)."""

from __future__ import annotations

from pathlib import Path

from ragmeter.cli._common import console
from ragmeter.errors import ConfigError
from ragmeter.reports.html_text import TEXT, Language

__all__ = ["write_report"]

#: regressed rows listed per metric in a comparison
REGRESSED_ROWS = 20


def write_report(
    run_id: str, out: Path, *, baseline: str | None, worst: int, language: Language
) -> Path:
    """Write ``run_id``'s report to ``out`` (compared with ``baseline`` when given)."""
    from ragmeter.knowledge import KnowledgeBase
    from ragmeter.runs.compare import compare_scores
    from ragmeter.runs.pairs import choose, pair_page
    from ragmeter.runs.store import RunStore

    if out.is_dir():
        raise ConfigError(f"--out {out} is a folder: name the HTML file to write")
    runs = RunStore(KnowledgeBase().store)
    record = runs.get(run_id)
    report = runs.report(run_id)
    text = TEXT[language]
    info = runs.info(record, summary=False)
    target = f"{record.scene_key}: {record.scene_value}" if record.scene_value else record.scene_key
    facts = [(text["run"], record.id), (text["target"], target), (text["state"], record.state)]
    dataset = runs.dataset(record.dataset_id)
    facts.append((text["dataset"], dataset.name or dataset.source or str(dataset.id)))
    facts.append((text["created"], record.created_at.strftime("%Y-%m-%d %H:%M")))
    comparison = []
    regressions = {}
    if baseline is not None:
        base = runs.get(baseline)
        facts.append((text["baseline"], base.id))
        comparison = compare_scores(runs.scores(base.id), runs.scores(record.id))
        base_metrics = runs.info(base, summary=False).metrics
        for item in comparison:
            chosen = choose(
                runs.store, (base.id, base_metrics), (record.id, info.metrics), item.metric_name
            )
            page = pair_page(
                runs.store, chosen, regressions_only=True, offset=0, limit=REGRESSED_ROWS
            )
            regressions[item.metric_name] = page.items
    title = f"{text['report']} · {record.id[:12]}"
    try:
        written = report.to_html(
            out,
            title=title,
            worst=worst,
            language=language,
            facts=facts,
            comparison=comparison,
            regressions=regressions,
        )
    except OSError as exc:
        raise ConfigError(f"cannot write --out {out}: {exc.strerror or exc}") from None
    console.print(f"report: {written}", highlight=False)
    return written
