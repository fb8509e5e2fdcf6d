"""``ragmeter report``: a stored run as one self-contained HTML file, optionally against a
baseline run (paired differences with 95% family-wise intervals and Bonferroni-adjusted
p-values, the rows that regressed most)."""

from __future__ import annotations

from pathlib import Path

from ragmeter.cli._common import console
from ragmeter.errors import ConfigError
from ragmeter.reports.html_text import LANGUAGES, Language

__all__ = ["write_report"]


def write_report(
    run_id: str, out: Path, *, baseline: str | None, worst: int, language: str
) -> Path:
    """Write ``run_id``'s report to ``out`` (compared with ``baseline`` when given)."""
    from ragmeter.runs.views.stored import load_run

    if language not in LANGUAGES:
        raise ConfigError(f"--language {language!r}: choose {' or '.join(LANGUAGES)}")
    if out.is_dir():
        raise ConfigError(f"--out {out} is a folder: name the HTML file to write")
    chosen: Language = "zh" if language == "zh" else "en"
    run = load_run(run_id)
    written = run.to_html(out, compare=baseline, worst=worst, language=chosen)
    size = written.stat().st_size
    console.print(f"report: {written} ({size / 1024:,.0f} KiB)", highlight=False)
    return written
