"""Reports: evaluation results (columns per metric, records on demand), summaries with
confidence intervals, exports."""

from ragmeter.reports.columns import ResultColumns
from ragmeter.reports.record import ResultRecord
from ragmeter.reports.report import EvaluationReport, MetricSummary

__all__ = ["EvaluationReport", "MetricSummary", "ResultColumns", "ResultRecord"]
