"""Runs ragas 0.4.3's five metrics over a JSONL file against an OpenAI-compatible server.

Executed with the ragas environment's Python by bench/judge_vs_ragas.py; prints one JSON
line: wall seconds, rows, NaN counts per metric.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from ragas import EvaluationDataset, evaluate
from ragas.embeddings import LangchainEmbeddingsWrapper
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import (
    answer_correctness,
    answer_relevancy,
    context_precision,
    context_recall,
    faithfulness,
)
from ragas.run_config import RunConfig


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    with open(args.data, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    samples = [
        {
            "user_input": r["query"],
            "response": r["response"],
            "retrieved_contexts": r["retrieved_contexts"],
            "reference": r["reference"],
        }
        for r in rows
    ]
    llm = LangchainLLMWrapper(
        ChatOpenAI(model="scripted", base_url=args.url, api_key="EMPTY", temperature=0)
    )
    embeddings = LangchainEmbeddingsWrapper(
        OpenAIEmbeddings(
            model="scripted", base_url=args.url, api_key="EMPTY", check_embedding_ctx_length=False
        )
    )
    metrics = [
        faithfulness,
        answer_relevancy,
        context_precision,
        context_recall,
        answer_correctness,
    ]
    started = time.perf_counter()
    result = evaluate(
        EvaluationDataset.from_list(samples),
        metrics=metrics,
        llm=llm,
        embeddings=embeddings,
        run_config=RunConfig(max_workers=args.workers, timeout=120),
        show_progress=False,
    )
    seconds = time.perf_counter() - started
    frame = result.to_pandas()
    names = [m.name for m in metrics]
    nans = {
        n: int(sum(1 for v in frame[n] if v is None or (isinstance(v, float) and math.isnan(v))))
        for n in names
    }
    means = {n: float(frame[n].mean()) for n in names}
    print(json.dumps({"seconds": seconds, "rows": len(rows), "nan": nans, "means": means}))


if __name__ == "__main__":
    main()
