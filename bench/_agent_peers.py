"""Scores agent rows with the peers' own metric objects: RAGAS 0.4.3's ToolCallAccuracy and
ToolCallF1 (the legacy objects as its docs call them, and the collections ones) and
DeepEval's ToolCorrectnessMetric in its modes.

Executed with the agent peers' Python (``.venv-agents``, made by bench/setup_agent_peers.sh)
by tests/integration/test_agent_parity.py and bench/agents.py, in one process: reads a JSON
file of rows (``messages`` in OpenAI's format, ``reference_tool_calls``) and prints one JSON
object: per metric, each row's score or the error the peer raised on it. With ``--bench``
it only times the RAGAS metrics over the rows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import warnings
from importlib.metadata import version
from typing import Any

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_OUT", "YES")
os.environ.setdefault("OPENAI_API_KEY", "unused-no-model-is-called")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

from deepeval.metrics import ToolCorrectnessMetric  # noqa: E402
from deepeval.test_case import LLMTestCase, ToolCallParams  # noqa: E402
from deepeval.test_case import ToolCall as DeepEvalCall  # noqa: E402
from ragas import EvaluationDataset, evaluate  # noqa: E402
from ragas.dataset_schema import MultiTurnSample  # noqa: E402
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage  # noqa: E402
from ragas.metrics import ToolCallAccuracy, ToolCallF1  # noqa: E402
from ragas.metrics.collections import ToolCallAccuracy as NewToolCallAccuracy  # noqa: E402
from ragas.metrics.collections import ToolCallF1 as NewToolCallF1  # noqa: E402


def ragas_messages(row: dict[str, Any]) -> list[Any]:
    """OpenAI messages as RAGAS's (the converter RAGAS lacks): arguments parsed from JSON."""
    out: list[Any] = []
    for m in row["messages"]:
        if m["role"] == "user":
            out.append(HumanMessage(content=m["content"]))
        elif m["role"] == "assistant":
            calls = [
                ToolCall(name=c["function"]["name"], args=json.loads(c["function"]["arguments"]))
                for c in m.get("tool_calls") or []
            ]
            out.append(AIMessage(content=m.get("content") or "", tool_calls=calls or None))
        elif m["role"] == "tool":
            out.append(ToolMessage(content=m["content"]))
    return out


def ragas_reference(row: dict[str, Any]) -> list[ToolCall]:
    return [ToolCall(name=c["name"], args=c["arguments"]) for c in row["reference_tool_calls"]]


def deepeval_case(row: dict[str, Any]) -> LLMTestCase:
    called = [
        DeepEvalCall(
            name=c["function"]["name"], input_parameters=json.loads(c["function"]["arguments"])
        )
        for m in row["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]
    expected = [
        DeepEvalCall(name=c["name"], input_parameters=c["arguments"])
        for c in row["reference_tool_calls"]
    ]
    return LLMTestCase(
        input=row["messages"][0]["content"],
        actual_output=row["messages"][-1]["content"],
        tools_called=called,
        expected_tools=expected,
    )


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


async def _ragas(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    legacy = {
        "ragas_accuracy_strict": ToolCallAccuracy(),
        "ragas_accuracy_flexible": ToolCallAccuracy(strict_order=False),
        "ragas_f1": ToolCallF1(),
    }
    new = {
        "ragas_new_accuracy_strict": NewToolCallAccuracy(),
        "ragas_new_accuracy_flexible": NewToolCallAccuracy(strict_order=False),
        "ragas_new_f1": NewToolCallF1(),
    }
    out: dict[str, list[Any]] = {name: [] for name in [*legacy, *new]}
    for row in rows:
        try:
            messages, reference = ragas_messages(row), ragas_reference(row)
            sample = MultiTurnSample(user_input=messages, reference_tool_calls=reference)
        except Exception as exc:  # the peer cannot even take the row
            for name in out:
                out[name].append({"error": _error(exc)})
            continue
        for name, metric in legacy.items():
            try:
                out[name].append(float(await metric.multi_turn_ascore(sample)))
            except Exception as exc:
                out[name].append({"error": _error(exc)})
        for name, metric in new.items():
            try:
                result = await metric.ascore(user_input=messages, reference_tool_calls=reference)
                out[name].append(float(result.value))
            except Exception as exc:
                out[name].append({"error": _error(exc)})
    return out


DEEPEVAL_MODES = {
    "deepeval_default": {},
    "deepeval_exact": {"should_exact_match": True},
    "deepeval_ordering": {"should_consider_ordering": True},
    "deepeval_default_params": {"params": True},
    "deepeval_exact_params": {"should_exact_match": True, "params": True},
    "deepeval_ordering_params": {"should_consider_ordering": True, "params": True},
}


def _deepeval(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    metrics = {}
    for name, mode in DEEPEVAL_MODES.items():
        options = {k: v for k, v in mode.items() if k != "params"}
        params = [ToolCallParams.INPUT_PARAMETERS] if mode.get("params") else []
        metrics[name] = ToolCorrectnessMetric(
            evaluation_params=params, async_mode=False, include_reason=False, **options
        )
    out: dict[str, list[Any]] = {name: [] for name in metrics}
    for row in rows:
        try:
            case = deepeval_case(row)
        except Exception as exc:
            for name in out:
                out[name].append({"error": _error(exc)})
            continue
        for name, metric in metrics.items():
            try:
                out[name].append(float(metric.measure(case, _show_indicator=False)))
            except Exception as exc:
                out[name].append({"error": _error(exc)})
    return out


async def _bench(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """RAGAS's deterministic agent metrics over the rows as its docs call them: a
    MultiTurnSample per row, then ``await metric.multi_turn_ascore(sample)`` per metric and
    row; and the dataset path, ``evaluate(EvaluationDataset(samples), metrics)``. Building
    the samples from OpenAI messages is timed apart (``build``): RAGAS cannot read them
    itself. A row RAGAS raises on counts as an error."""
    metrics = {
        "tool_call_accuracy": ToolCallAccuracy(),
        "tool_call_accuracy(strict_order=false)": ToolCallAccuracy(strict_order=False),
        "tool_call_f1": ToolCallF1(),
    }
    errors: dict[str, int] = {"build": 0}
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    samples = []
    for row in rows:
        try:
            messages, reference = ragas_messages(row), ragas_reference(row)
            samples.append(MultiTurnSample(user_input=messages, reference_tool_calls=reference))
        except Exception:
            errors["build"] += 1
    seconds["build"] = time.perf_counter() - started
    for name, metric in metrics.items():
        errors[name] = 0
        started = time.perf_counter()
        for sample in samples:
            try:
                await metric.multi_turn_ascore(sample)
            except Exception:
                errors[name] += 1
        seconds[name] = time.perf_counter() - started
    # the dataset path of RAGAS's docs: evaluate(EvaluationDataset, metrics)
    started = time.perf_counter()
    result = evaluate(
        EvaluationDataset(samples=samples),
        metrics=[
            ToolCallAccuracy(),
            ToolCallAccuracy(name="tool_call_accuracy_flexible", strict_order=False),
            ToolCallF1(),
        ],
        show_progress=False,
    )
    frame = result.to_pandas()
    seconds["evaluate"] = time.perf_counter() - started
    errors["evaluate"] = int(frame.iloc[:, -3:].isna().sum().sum())
    return {"rows": len(rows), "seconds": seconds, "errors": errors, "ragas": version("ragas")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--bench", action="store_true")
    args = parser.parse_args()
    with open(args.data, encoding="utf-8") as handle:
        rows = json.load(handle)
    if args.bench:
        print(json.dumps(asyncio.run(_bench(rows))))
        return
    started = time.perf_counter()
    out = asyncio.run(_ragas(rows))
    out.update(_deepeval(rows))
    print(json.dumps({"scores": out, "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
