"""Reports: evaluation results, summaries with confidence intervals, exports."""

from ragmeter.reports.report import EvaluationReport, MetricSummary, ResultRecord

__all__ = ["EvaluationReport", "MetricSummary", "ResultRecord"]
