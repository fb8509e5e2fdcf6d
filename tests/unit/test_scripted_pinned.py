"""The scripted judge's pinned answers: a task key or text it pins gets its value as written,
the others their scripted answers; a bad answers file is refused naming what is wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from ragmeter.errors import ConfigError
from ragmeter.testing import PinnedAnswers, ScriptedJudgeServer, read_pinned
from ragmeter.testing.answers import answer_chat, embed_text


def _body(*keys: str) -> dict[str, object]:
    inputs = {"response": "Paris is in France.", "reference": "Paris is in France."}
    quoted = ", ".join(f'"{key}"' for key in keys)
    return {
        "messages": [
            {"role": "system", "content": f"Reply in JSON with keys {quoted}."},
            {"role": "user", "content": json.dumps(inputs)},
        ]
    }


def test_a_pinned_key_gets_its_value_and_the_others_their_rules() -> None:
    pinned = {"response_statements": ["One.", "Two."]}
    body = _body("response_statements", "reference_statements")
    reply = json.loads(answer_chat(body, pinned=pinned))
    scripted = json.loads(answer_chat(body))
    assert reply["response_statements"] == ["One.", "Two."]
    assert reply["reference_statements"] == scripted["reference_statements"]
    assert scripted["response_statements"] != ["One.", "Two."]


def test_the_server_answers_pinned_outputs_and_vectors() -> None:
    pinned = PinnedAnswers({"response_statements": []}, {"Paris": [0.1, 0.2, 0.3]})
    with ScriptedJudgeServer(pinned=pinned) as server:
        chat = httpx.post(f"{server.url}/chat/completions", json=_body("response_statements"))
        vectors = httpx.post(f"{server.url}/embeddings", json={"input": ["Paris", "Rome"]})
    content = chat.json()["choices"][0]["message"]["content"]
    assert json.loads(content) == {"response_statements": []}
    found = [item["embedding"] for item in vectors.json()["data"]]
    assert found[0] == [0.1, 0.2, 0.3]
    assert found[1] == pytest.approx(embed_text("Rome"))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[]", "must hold a JSON object"),
        ("{bad", "is not valid JSON"),
        ('{"outputs": [], "x": 1}', "unknown key(s) 'x'"),
        ('{"outputs": []}', "'outputs' must be an object"),
        ('{"embeddings": {"a": []}}', "embeddings['a'] must be a non-empty list"),
        ('{"embeddings": {"a": [1, true]}}', "embeddings['a'] must be a non-empty list"),
    ],
)
def test_a_bad_answers_file_is_refused_naming_the_problem(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "answers.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(says)):
        read_pinned(path)
    with pytest.raises(ConfigError, match="cannot read"):
        read_pinned(tmp_path / "missing.json")
