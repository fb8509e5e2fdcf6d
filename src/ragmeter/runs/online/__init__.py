"""Online evaluation: rules that score production traces in the background with the offline
engine (matching, sampling by trace id, a daily judge budget per rule, cursors)."""

from ragmeter.runs.online.budget import BudgetGate, BudgetLedger, Spent, utc_day
from ragmeter.runs.online.loop import OnlineScoring
from ragmeter.runs.online.matching import matches, sample_point, sampled
from ragmeter.runs.online.memory import MemoryTraces, ascore_traces, score_traces
from ragmeter.runs.online.rule_store import RuleStore
from ragmeter.runs.online.scorer import RuleScorer, check_rule
from ragmeter.runs.online.source import Cursor, PendingTrace, TraceSource
from ragmeter.runs.online.stored import StoredTraces

__all__ = [
    "BudgetGate",
    "BudgetLedger",
    "Cursor",
    "MemoryTraces",
    "OnlineScoring",
    "PendingTrace",
    "RuleScorer",
    "RuleStore",
    "Spent",
    "StoredTraces",
    "TraceSource",
    "ascore_traces",
    "check_rule",
    "matches",
    "sample_point",
    "sampled",
    "score_traces",
    "utc_day",
]
