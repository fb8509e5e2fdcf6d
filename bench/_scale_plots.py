"""The plots of bench/scale.py: time and memory against the work, one PNG per part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, MaxNLocator

THOUSANDS = FuncFormatter(lambda value, _: f"{value:,.0f}")


def _two_axes(title: str) -> tuple[Any, Any, Any]:
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    figure.suptitle(title)
    return figure, left, right


def _save(figure: Any, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path.name


def plot_rows(entries: list[dict[str, Any]], path: Path) -> str:
    """Wall time and peak memory of the stored run against its rows, with the 1M goals."""
    figure, left, right = _two_axes("ragmeter eval, 6 retrieval metrics, stored (local executor)")
    rows = [e["rows"] for e in entries]
    left.plot(rows, [e["seconds"] for e in entries], "o-", label="measured")
    left.axhline(60, color="red", linestyle="--", label="goal at 1M rows: 60 s")
    left.set(xlabel="rows", ylabel="wall time (s)")
    right.plot(rows, [e["peak_mb"] for e in entries], "o-", label="measured")
    right.axhline(4096, color="red", linestyle="--", label="goal at 1M rows: 4 GB")
    right.set(xlabel="rows", ylabel="peak resident memory (MB)")
    for axis in (left, right):
        axis.set_xlim(left=0)
        axis.set_ylim(bottom=0)
        axis.xaxis.set_major_formatter(THOUSANDS)
        axis.xaxis.set_major_locator(MaxNLocator(5))
        axis.set_xlim(0, axis.get_xlim()[1] * 1.08)
        axis.legend()
        axis.grid(alpha=0.3)
    return _save(figure, path)


def plot_views(entries: list[dict[str, Any]], path: Path) -> str:
    """p95 of each view against the results per run, one line per view and store."""
    figure, left, right = _two_axes("Dashboard views: p95 of their API requests")
    for axis, store in ((left, "sqlite"), (right, "postgresql")):
        mine = [e for e in entries if e["store"] == store]
        for view in sorted({e["view"] for e in mine}):
            points = sorted((e["results"], e["p95_s"]) for e in mine if e["view"] == view)
            axis.plot([p[0] for p in points], [p[1] for p in points], "o-", label=view)
        axis.axhline(1.0, color="red", linestyle="--", label="goal: p95 < 1 s")
        axis.set(title=store, xlabel="results per run", ylabel="p95 (s)")
        axis.set_xlim(left=0)
        axis.set_ylim(0, max([1.2, *(e["p95_s"] * 1.1 for e in mine)]))
        axis.xaxis.set_major_formatter(THOUSANDS)
        axis.xaxis.set_major_locator(MaxNLocator(5))
        axis.set_xlim(0, axis.get_xlim()[1] * 1.08)
        axis.legend(fontsize=7, loc="center left")
        axis.grid(alpha=0.3)
    return _save(figure, path)


def plot_judged(entries: list[dict[str, Any]], path: Path) -> str:
    """Wall time and requests per minute (whole minutes) of judged runs against their rows."""
    figure, left, right = _two_axes("Judged runs: scripted judge at 50 ms, limit 3000 requests/min")
    for executor in sorted({e["executor"] for e in entries}):
        mine = sorted((e for e in entries if e["executor"] == executor), key=lambda e: e["rows"])
        rows = [e["rows"] for e in mine]
        left.plot(rows, [e["seconds"] for e in mine], "o-", label=executor)
        whole = [(e["rows"], e["minute_rpm"]) for e in mine if e.get("minute_rpm") is not None]
        right.plot(
            [r for r, _ in whole], [w for _, w in whole], "o-", label=f"{executor}: whole minutes"
        )
        right.plot(rows, [e["peak_rpm"] for e in mine], "x:", label=f"{executor}: busiest 60 s")
    left.set(xlabel="rows", ylabel="wall time (s)")
    right.axhline(3000, color="red", linestyle="--", label="limit")
    right.axhline(2850, color="orange", linestyle="--", label="limit - 5%")
    right.set(xlabel="rows", ylabel="judge requests per minute", ylim=(0, 3400))
    left.set_ylim(bottom=0)
    for axis in (left, right):
        axis.xaxis.set_major_formatter(THOUSANDS)
        axis.xaxis.set_major_locator(MaxNLocator(5))
        axis.set_xlim(0, axis.get_xlim()[1] * 1.08)
        axis.legend(fontsize=7, loc="lower left")
        axis.grid(alpha=0.3)
    return _save(figure, path)


def plot_all(results: dict[str, Any], folder: Path) -> dict[str, str]:
    """Each part's PNG in ``folder``; the file names by part."""
    drawn = {}
    if results.get("rows"):
        drawn["rows"] = plot_rows(results["rows"], folder / "rows.png")
    if results.get("views"):
        drawn["views"] = plot_views(results["views"], folder / "views.png")
    if results.get("judged"):
        drawn["judged"] = plot_judged(results["judged"], folder / "judged.png")
    return drawn
