"""DB-GPT's own client (``dbgpt-client`` 0.8.2, in ``.venv-dbgpt``) runs the seed's Python
example against ragmeter's server unchanged: the same imports, request and ``run_evaluation``."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, NOTES_AWEL, ROOT, TEA, write_models
from tests.integration.service import ServiceProcess, data

pytestmark = pytest.mark.both_stores

DBGPT_PYTHON = ROOT / ".venv-dbgpt" / "bin" / "python"

# the seed's example, with api_base pointing at the test's port
SEED = """
import asyncio, json, sys
from dbgpt_client import Client
from dbgpt_client.evaluation import run_evaluation, EvaluateServeRequest

DBGPT_API_KEY = "dbgpt"
client = Client(api_base=sys.argv[1], api_key=DBGPT_API_KEY)
SPACE_ID = sys.argv[2]
request = EvaluateServeRequest(
    # The scene type of the evaluation, e.g. support app, recall
    scene_key="recall",
    # e.g. app id(when scene_key is app), space id(when scene_key is recall)
    scene_value=SPACE_ID,
    context={"top_k": 5},
    evaluate_metrics=[
        "RetrieverHitRateMetric",
        "RetrieverMRRMetric",
        "RetrieverSimilarityMetric",
    ],
    datasets=[
        {
            "query": "what awel talked about",
            "doc_name": "awel.md",
        }
    ],
)

async def main():
    data = await run_evaluation(client, request=request)
    await client.aclose()
    print(json.dumps(data))

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("dbgpt-home")
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with ServiceProcess(home, keys="dbgpt") as server, server.client("dbgpt") as http:
            data(http.post("/knowledge/spaces", json={"name": "awel", "embedder": "hashed"}), 201)
            files = [
                ("files", ("awel.md", GUIDE_AWEL.encode(), "text/markdown")),
                ("files", ("notes.md", NOTES_AWEL.encode(), "text/markdown")),
                ("files", ("tea.md", TEA.encode(), "text/markdown")),
            ]
            data(http.post("/knowledge/spaces/awel/documents", files=files))
            yield server


def _dbgpt_python() -> Path:
    if not DBGPT_PYTHON.exists():
        if os.environ.get("CI"):
            pytest.fail(".venv-dbgpt is missing: scripts/install.sh should have made it")
        pytest.skip("DB-GPT's client is not installed (bash scripts/setup_dbgpt_client.sh)")
    return DBGPT_PYTHON


def test_dbgpt_client_runs_the_seed_recall_example(service: ServiceProcess) -> None:
    python = _dbgpt_python()
    with service.client("dbgpt") as http:
        space_id = str(data(http.get("/knowledge/spaces/awel"))["id"])
    done = subprocess.run(
        [str(python), "-c", SEED, service.api, space_id],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert [r["metric_name"] for r in rows[0]] == [
        "RetrieverHitRateMetric", "RetrieverMRRMetric", "RetrieverSimilarityMetric",
    ]  # fmt: skip
    hit, mrr, similarity = (r["score"] for r in rows[0])
    assert hit == 1.0 and mrr > 0 and 0 < similarity <= 1
    assert len(rows[0][0]["prediction"]) == 5  # context.top_k is honoured


def test_dbgpt_client_without_the_key_is_refused(service: ServiceProcess) -> None:
    python = _dbgpt_python()
    script = SEED.replace('DBGPT_API_KEY = "dbgpt"', 'DBGPT_API_KEY = "not-the-key"')
    done = subprocess.run(
        [str(python), "-c", script, service.api, "1"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "Failed to run evaluation" in done.stderr
