"""``ragmeter runs compare A B``: the dashboard's comparison (the same numbers, from
``runs.views.pairs.compare_runs``) as a table, markdown or JSON; its header names the correction;
verdicts are better, worse, no evidence of a difference, or equivalent within --margin, never
"same"; a flat or small sample's interval reads "not informative"; bad input exits 2 naming
what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.views.pairs import compare_runs
from ragmeter.runs.views.run_view import run_info
from ragmeter.store.db import open_store
from tests.integration.helpers import run

ROWS = 80
METRICS = "mrr,hit_rate@3,ndcg@5"
DOCS = [f"d{i}" for i in range(6)]


def _write(path: Path, rank_of: list[int | None]) -> Path:
    """Rows whose relevant document ``d0`` sits at ``rank_of[i]`` (1-based; None: missed)."""
    lines = []
    for i, rank in enumerate(rank_of):
        others = DOCS[1:]
        retrieved = others[:5] if rank is None else [*others[: rank - 1], "d0", *others[rank - 1 :]]
        row = {"id": i, "query": f"question {i}", "retrieved_ids": retrieved[:5]}
        lines.append(json.dumps({**row, "reference_ids": ["d0"]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run_id(home: Path, data: Path, *metrics: str) -> str:
    done = run(
        "eval", str(data), "-m", ",".join(metrics) or METRICS, "--name", data.stem, home=home
    )
    assert done.returncode == 0, done.stderr
    found, _ = RunStore(open_store(f"sqlite:///{home / 'ragmeter.db'}")).runs(0, 1)
    return found[0].id


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | Path]:
    folder = tmp_path_factory.mktemp("compare")
    home = folder / "home"
    base = [3 if i % 4 else None for i in range(ROWS)]  # rank 3, a quarter missed
    better = [1 if i % 8 else 3 for i in range(ROWS)]  # mostly rank 1
    # a few rows one rank up, as many one rank down: no difference to speak of
    close = [r if r is None or i % 10 else (r - 1 if i % 20 else r + 1) for i, r in enumerate(base)]
    return {
        "home": home,
        "base": _run_id(home, _write(folder / "base.jsonl", base)),
        "better": _run_id(home, _write(folder / "better.jsonl", better)),
        "close": _run_id(home, _write(folder / "close.jsonl", close)),
        "one": _run_id(home, _write(folder / "one.jsonl", [1]), "mrr"),
    }


def _json(runs: dict[str, str | Path], *args: str) -> dict[str, object]:
    done = run("runs", "compare", *map(str, args), "--json", home=Path(runs["home"]))
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_the_table_names_its_correction_and_says_better(runs: dict[str, str | Path]) -> None:
    done = run("runs", "compare", str(runs["base"]), str(runs["better"]), home=Path(runs["home"]))
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # the caption wraps at the table's width
    assert "95% family-wise CI" in out and "p (Bonferroni)" in out
    assert "95% family-wise CI, Bonferroni-adjusted p, 3 metrics (each interval at 98.33%)" in out
    for name in ("mrr (0–1)", "hit_rate@3 (0–1)", "ndcg@5 (0–1)"):
        assert name in out
    assert out.count("better") >= 3 and " same " not in out


def test_json_is_the_dashboard_s_comparison(runs: dict[str, str | Path]) -> None:
    found = _json(runs, runs["base"], runs["better"])
    store = RunStore(open_store(f"sqlite:///{Path(runs['home']) / 'ragmeter.db'}"))
    infos = [run_info(store, store.get(str(runs[k])), summary=False) for k in ("base", "better")]
    expected = compare_runs(
        store.store, (infos[0].run_id, infos[0].metrics), (infos[1].run_id, infos[1].metrics)
    )
    assert found["metrics"] == [c.model_dump(mode="json") for c in expected]
    assert (found["correction"], found["family"]) == ("bonferroni", 3)
    for c in expected:
        assert c.verdict == "better" and c.p_adjusted is not None and c.p_adjusted <= 0.05
        assert (
            c.ci95_low is not None and c.ci95_low > 0 and c.ci_level == pytest.approx(1 - 0.05 / 3)
        )


def test_markdown_and_a_chosen_metric(runs: dict[str, str | Path]) -> None:
    args = ["runs", "compare", "base", "better", "--markdown", "-m", "mrr"]  # runs by name
    done = run(*args, home=Path(runs["home"]))
    assert done.returncode == 0, done.stderr
    head, numbers = done.stdout.split("\n\n### ", 1)  # what changed, then the numbers
    assert head.startswith("### What changed") and "| `dataset.name` | base | better |" in head
    lines = ("### " + numbers).splitlines()
    better, base = str(runs["better"])[:12], str(runs["base"])[:12]
    assert lines[0] == f"### better ({better}) (candidate) against base ({base}) (base)"
    assert lines[2].startswith("| metric (scale) | base | candidate | Δ | 95% family-wise CI |")
    assert lines[3].startswith("|---|---:|")
    assert lines[4].startswith("| mrr (0–1) |") and "| better |" in lines[4]
    assert len([line for line in lines if line.startswith("| ")]) == 2  # the head and mrr
    assert "1 metric (each interval at 95%)" in done.stdout  # a family of one


def test_no_difference_is_no_evidence_and_a_margin_can_make_it_equivalent(
    runs: dict[str, str | Path],
) -> None:
    plain = _json(runs, runs["base"], runs["close"])
    verdicts = {c["metric_name"]: c["verdict"] for c in plain["metrics"]}  # type: ignore[attr-defined]
    assert set(verdicts.values()) == {"no_evidence"}
    wide = _json(runs, runs["base"], runs["close"], "--margin", "0.2")
    for c in wide["metrics"]:  # type: ignore[attr-defined]
        # an interval of all-equal differences (hit_rate@3 here) is no ground for equivalence
        fits = c["ci95_low"] > -0.2 and c["ci95_high"] < 0.2 and c["ci_note"] is None
        assert c["verdict"] == ("equivalent" if fits else "no_evidence") and c["margin"] == 0.2
    assert any(c["verdict"] == "equivalent" for c in wide["metrics"])  # type: ignore[attr-defined]
    shown = run(
        "runs", "compare", str(runs["base"]), str(runs["close"]), "--margin", "0.2",
        home=Path(runs["home"]),
    )  # fmt: skip
    words = " ".join(shown.stdout.split())  # the caption wraps at the table's width
    assert "equivalent (±0.2)" in words and "equivalent: the interval inside ±0.2" in words


def test_one_pair_is_not_informative(runs: dict[str, str | Path]) -> None:
    found = _json(runs, runs["base"], runs["one"])
    (mrr,) = found["metrics"]  # type: ignore[misc]
    assert mrr["small_sample"] is True and mrr["ci_note"].startswith("interval not informative")
    assert mrr["verdict"] == "no_evidence"
    shown = run("runs", "compare", str(runs["base"]), str(runs["one"]), home=Path(runs["home"]))
    assert "not informative (n=1)" in shown.stdout
    # the run alone: `runs show` flags its one-row interval and names the scale
    alone = run("runs", "show", str(runs["one"]), home=Path(runs["home"]))
    assert "mrr (0–1)" in alone.stdout and "not informative (n=1)" in alone.stdout
    assert "0.3333 – 0.3333" not in alone.stdout and "1.0000 – 1.0000" not in alone.stdout


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["nope"], "no run 'nope'"),
        (["BETTER", "-m", "faithfulness"], "--metric: neither run has a metric 'faithfulness'"),
        (["BETTER", "--margin", "-1"], "margin: -1.0; choose a positive number"),
        (["BETTER", "--alpha", "2"], "alpha: 2.0; choose a number between 0 and 1"),
        (["BETTER", "--json", "--markdown"], "--markdown and --json: choose one"),
    ],
)
def test_bad_input_exits_2_naming_it(
    runs: dict[str, str | Path], extra: list[str], said: str
) -> None:
    args = [str(runs["better"]) if a == "BETTER" else a for a in extra]
    done = run("runs", "compare", str(runs["base"]), *args, home=Path(runs["home"]))
    assert done.returncode == 2 and said in done.stderr, done.stderr
