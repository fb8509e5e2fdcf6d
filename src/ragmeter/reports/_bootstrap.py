"""Kept for ``runs/store.py``'s import: the bootstrap lives in ``ragmeter.reports.stats``."""

from ragmeter.reports.stats import bootstrap_mean_ci

__all__ = ["bootstrap_mean_ci"]
