"""The custom-metric example from DB-GPT's evaluation docs, run against ragmeter unchanged
except for the import line."""

from collections.abc import Sequence

import ragmeter
from ragmeter.metrics import BaseEvaluationResult, RetrieverEvaluationMetric


class RetrieverMRRMetric(RetrieverEvaluationMetric):
    """Retriever Mean Reciprocal Rank metric.

    For each query, MRR evaluates the system's accuracy by looking at the rank of the
    highest-placed relevant document. Specifically, it's the average of the reciprocals
    of these ranks across all the queries. So, if the first relevant document is the
    top result, the reciprocal rank is 1; if it's second, the reciprocal rank is 1/2,
    and so on.
    """

    def sync_compute(
        self,
        prediction: list[str],
        contexts: Sequence[str] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        """Compute MRR metric.

        Args:
            prediction(Optional[List[str]]): The retrieved chunks from the retriever.
            contexts(Optional[List[str]]): The contexts from dataset.
            query:(Optional[str]) The query text.

        Returns:
            BaseEvaluationResult: The evaluation result.
                The score is the reciprocal rank of the first relevant chunk.
        """
        if not prediction or not contexts:
            return BaseEvaluationResult(
                prediction=prediction,
                contexts=contexts,
                score=0.0,
            )
        for i, retrieved_chunk in enumerate(prediction):
            if retrieved_chunk in contexts:
                return BaseEvaluationResult(
                    score=1.0 / (i + 1),
                )
        return BaseEvaluationResult(
            score=0.0,
        )


if __name__ == "__main__":
    rows = [
        {
            "query": "what awel talked about",
            "contexts": ["intro", "AWEL design"],
            "factual": ["AWEL design"],
        },
        {"query": "how to install", "contexts": ["install guide"], "factual": ["install guide"]},
        {"query": "what is a space", "contexts": ["weather"], "factual": ["knowledge space"]},
    ]
    report = ragmeter.evaluate(rows, metrics=[RetrieverMRRMetric(), "mrr"])
    for name in report.metric_names:
        print(name, report.scores(name), report.summary()[name]["mean"])
