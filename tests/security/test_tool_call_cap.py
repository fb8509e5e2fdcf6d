"""Issue 26 F2: tool calls per row are capped (``[server] max_tool_calls``, and the library's
readers), and aligning expected with actual calls is bounded in time and memory whatever the
sizes: scoring a row of thousands of calls a side, and opening its Row view, take seconds,
not the quadratic minutes and gigabytes they took."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from ragmeter.datasets import load_dataset
from ragmeter.datasets.agent import ToolCall
from ragmeter.errors import LimitError
from ragmeter.metrics.agent import align_ordered, deepeval_tool_correctness
from ragmeter.metrics.agent._calls import align_unordered
from tests.integration.helpers import scripted_home
from tests.integration.service import ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

#: calls a side of the attack: 2,000 x 2,000 pairs took 51 s and +1.2 GB to score
CALLS = 2_000
#: what a bounded alignment may take for it, in seconds (well under the quadratic cost)
BOUND = 10.0
ALIGNING = ["tool_call_accuracy", "argument_accuracy", "tool_correctness"]


def _agent_row(made: int, expected: int) -> dict[str, Any]:
    calls = [
        {"id": f"c{i}", "type": "function",
         "function": {"name": "search", "arguments": f'{{"q": "{i}", "page": {i % 7}}}'}}
        for i in range(made)
    ]  # fmt: skip
    return {
        "messages": [
            {"role": "user", "content": "find everything"},
            {"role": "assistant", "content": None, "tool_calls": calls},
        ],
        "reference_tool_calls": [
            {"name": "search", "arguments": {"q": str(i + 1), "page": i % 5}}
            for i in range(expected)
        ],
    }


def _body(row: dict[str, Any]) -> dict[str, Any]:
    return {"scene_key": "dataset", "datasets": [row], "evaluate_metrics": ALIGNING}


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with (
        scripted_home(tmp_path_factory.mktemp("calls-capped")) as home,
        ServiceProcess(home) as server,
    ):
        yield server


@pytest.fixture(scope="module")
def raised(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    """A server whose admin raised the cap past the calls the attack sends."""
    extra = f"\n[server]\nmax_tool_calls = {CALLS}\n"
    with (
        scripted_home(tmp_path_factory.mktemp("calls-raised"), extra) as home,
        ServiceProcess(home) as server,
    ):
        yield server


def test_a_row_over_the_cap_is_a_413_naming_the_setting_row_and_field(
    capped: ServiceProcess,
) -> None:
    with capped.client() as http:
        before = data(http.get("/evaluate/runs"))["total"]
        for made, expected, field in ((CALLS, 3, "messages"), (3, CALLS, "reference_tool_calls")):
            body = _body(_agent_row(made, expected))
            for path in ("/evaluate/runs", "/evaluate/evaluation"):
                started = time.monotonic()
                message = failure(http.post(path, json=body), 413)
                assert time.monotonic() - started < BOUND
                assert "[server] max_tool_calls" in message, message
                assert f"row 0 field '{field}'" in message and "at most 256" in message
        assert data(http.get("/evaluate/runs"))["total"] == before
        # at the cap the row is scored exactly, in well under the bound
        started = time.monotonic()
        rows = data(http.post("/evaluate/evaluation", json=_body(_agent_row(256, 256))))
        assert time.monotonic() - started < BOUND
        assert all(r[0]["score"] is not None for r in rows)


def test_thousands_of_calls_a_side_are_scored_and_shown_in_bounded_time(
    raised: ServiceProcess,
) -> None:
    """Past 256 x 256 pairs the aligning metrics give no score, with the reason, and the Row
    view pairs the calls greedily: no quadratic table is ever built."""
    with raised.client() as http:
        started = time.monotonic()
        run_id = data(http.post("/evaluate/runs", json=_body(_agent_row(CALLS, CALLS))), 202)
        info = wait_run(http, run_id["run_id"], timeout=120)
        assert info["state"] == "done"
        assert time.monotonic() - started < BOUND
        results = data(http.get(f"/evaluate/runs/{run_id['run_id']}/results"))["items"]
        assert {r["metric_name"] for r in results} == set(ALIGNING)
        for result in results:
            assert result["score"] is None
            assert "max_tool_calls" in result["error"] and "4,000,000 pairs" in result["error"]
        for _ in range(2):
            started = time.monotonic()
            row = data(http.get(f"/evaluate/runs/{run_id['run_id']}/rows/0"))
            assert time.monotonic() - started < BOUND
        pairs = row["trajectory"]["pairs"]
        assert sum(p["status"] != "extra" for p in pairs) == CALLS
        assert sum(p["status"] != "missing" for p in pairs) == CALLS


def test_the_library_readers_cap_calls_per_row_naming_the_row() -> None:
    rows = [_agent_row(2, 2), _agent_row(257, 2)]
    with pytest.raises(LimitError, match=r"<rows> row 1 field 'messages' holds 257 tool calls"):
        load_dataset(rows)
    assert len(load_dataset([_agent_row(256, 256)])) == 1


@pytest.mark.parametrize("align", [align_ordered, align_unordered])
def test_the_alignment_itself_is_linear_past_its_bound(align: Any) -> None:
    """Every pair of these calls shares a name and half its arguments: the exact alignment
    compares all 4,000,000 pairs (25 s or more before), the bounded one a few thousand."""
    size = CALLS
    expected = [ToolCall(name="f", arguments={"q": i, "page": 1}) for i in range(size)]
    actual = [ToolCall(name="f", arguments={"q": i, "page": 2}) for i in range(size)]
    started = time.monotonic()
    pairs = align(expected, actual)
    assert time.monotonic() - started < BOUND / 5
    assert [(i, j) for i, j, _ in pairs] == [(i, i) for i in range(size)]
    assert sum(w for _, _, w in pairs) == size / 2


def test_deepevals_pairwise_modes_refuse_past_the_bound_before_any_work() -> None:
    calls = [ToolCall(name="f", arguments={"q": i}) for i in range(CALLS)]
    started = time.monotonic()
    for ordering in (False, True):
        with pytest.raises(LimitError, match=r"4,000,000 pairs .*\(max_tool_calls\)"):
            deepeval_tool_correctness(calls, calls, should_consider_ordering=ordering)
    assert time.monotonic() - started < 1.0
    assert deepeval_tool_correctness(calls, calls, should_exact_match=True) == 1.0
