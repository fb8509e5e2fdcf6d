"""Agent metrics with no judge: tool calls (accuracy, F1, precision, recall, arguments),
trajectories, DeepEval's tool correctness and DB-GPT's IntentMetric and AppLinkMetric."""

from ragmeter.metrics.agent._calls import align_ordered, argument_accuracy, typed_key
from ragmeter.metrics.agent.base import ToolCallMetric
from ragmeter.metrics.agent.dbgpt_agent import AppLinkMetric, IntentMetric
from ragmeter.metrics.agent.tool_calls import (
    TRAJECTORY_MODES,
    ArgumentAccuracyMetric,
    ToolCallAccuracyMetric,
    ToolCallF1Metric,
    ToolCallPrecisionMetric,
    ToolCallRecallMetric,
    TrajectoryMatchMetric,
    ragas_tool_call_accuracy,
)
from ragmeter.metrics.agent.tool_correctness import (
    ToolCorrectnessMetric,
    deepeval_tool_correctness,
)

__all__ = [
    "TRAJECTORY_MODES",
    "AppLinkMetric",
    "ArgumentAccuracyMetric",
    "IntentMetric",
    "ToolCallAccuracyMetric",
    "ToolCallF1Metric",
    "ToolCallMetric",
    "ToolCallPrecisionMetric",
    "ToolCallRecallMetric",
    "ToolCorrectnessMetric",
    "TrajectoryMatchMetric",
    "align_ordered",
    "argument_accuracy",
    "deepeval_tool_correctness",
    "ragas_tool_call_accuracy",
    "typed_key",
]
