"""Synthetic RAG rows for dry runs of the judge: a question, a 3-sentence answer, 3-5 retrieved
contexts and a reference, built deterministically from a small fact table."""

from __future__ import annotations

import random
from typing import Any

__all__ = ["synthetic_rows"]

_TOPICS: dict[str, list[str]] = {
    "AWEL": [
        "AWEL is a workflow expression language for building LLM applications.",
        "AWEL is divided into an operator layer, an AgentFream layer and a DSL layer.",
        "The operator layer holds basic operations such as retrieval and model calls.",
        "The AgentFream layer chains operators and supports map, filter and reduce.",
        "The DSL layer describes workflows as structured statements.",
        "AWEL workflows run in a stand-alone environment or on Ray.",
    ],
    "knowledge spaces": [
        "A knowledge space stores documents that are split into chunks.",
        "Each chunk is embedded into a vector and stored in an index.",
        "Markdown documents are chunked by their headers.",
        "A search embeds the query and returns the closest chunks.",
        "The top_k setting limits how many chunks a search returns.",
        "Hybrid retrieval fuses vector and keyword rankings.",
    ],
    "compost": [
        "Compost is decomposed organic matter used to enrich soil.",
        "A compost pile needs a balance of green and brown material.",
        "Green material such as grass clippings supplies nitrogen.",
        "Brown material such as dry leaves supplies carbon.",
        "Turning the pile every week adds oxygen and speeds decay.",
        "Finished compost is dark, crumbly and smells of earth.",
    ],
    "tides": [
        "Tides are the regular rise and fall of the sea surface.",
        "The gravity of the Moon is the main cause of tides.",
        "Most coasts see two high tides and two low tides each day.",
        "Spring tides happen when the Sun and Moon line up.",
        "Neap tides happen when the Sun and Moon are at right angles.",
        "The Bay of Fundy has some of the highest tides on Earth.",
    ],
    "sourdough": [
        "Sourdough bread is leavened by a culture of wild yeast and bacteria.",
        "The starter is fed with flour and water to keep it active.",
        "Lactic acid bacteria give sourdough its sour taste.",
        "A long cold proof develops more flavour in the dough.",
        "Sourdough loaves are often baked in a preheated Dutch oven.",
        "Steam in the first minutes of baking helps the crust expand.",
    ],
}
_WRONG = [
    "It was first described in the year 1850 by a Roman engineer.",
    "It only works when the temperature is below freezing.",
    "Most experts agree it was banned in every country in 2001.",
]
_QUESTIONS = [
    "What is {t} and how does it work?",
    "Can you explain {t}?",
    "What should I know about {t}?",
]


def synthetic_rows(count: int = 50, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` rows with query, response (3 sentences), retrieved_contexts (3-5) and
    reference; some answers carry an unsupported claim, some contexts are off-topic."""
    rng = random.Random(seed)
    names = sorted(_TOPICS)
    rows = []
    for i in range(count):
        topic = names[i % len(names)]
        facts = _TOPICS[topic]
        chosen = rng.sample(facts, 4)
        response = chosen[:2] + ([rng.choice(_WRONG)] if i % 3 == 0 else [chosen[2]])
        n_contexts = 3 + i % 3
        contexts = rng.sample(facts, n_contexts - 1)
        other = _TOPICS[names[(i + 1) % len(names)]]
        contexts.insert(rng.randrange(n_contexts), rng.choice(other))
        reference = [chosen[0], chosen[3]] + ([facts[0]] if facts[0] not in chosen else [])
        rows.append(
            {
                "query": rng.choice(_QUESTIONS).format(t=topic),
                "response": " ".join(response),
                "retrieved_contexts": contexts,
                "reference": " ".join(reference),
                "metadata": {"topic": topic},
            }
        )
    return rows
