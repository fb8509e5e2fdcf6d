"""Monitors of production traces: alert rules on a metric over a window, their episodes in
the store and the webhooks they post (the statistics are ``reports.monitor``'s)."""

__all__: list[str] = []
