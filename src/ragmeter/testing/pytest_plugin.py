"""The pytest plugin (entry point ``pytest11``, or ``pytest -p ragmeter.testing.pytest_plugin``):

- the ``ragmeter`` fixture: ``ragmeter.assert_metrics(rows, rules, baseline=...)`` and
  ``ragmeter.evaluate(rows, metrics)`` with the judge and embedder of the command line
  (``--ragmeter-judge``, ``--ragmeter-judge-base-url``, ``--ragmeter-embedder``);
- ``@pytest.mark.ragmeter_rows(DATA)``: the test runs once per row of DATA (a dataset file,
  relative to the test's folder, or a list of rows), which it gets as ``ragmeter_row``;
- ``--ragmeter-markdown FILE``: every gate of the session in one markdown summary (for a pull
  request), gathered from pytest-xdist workers too; each gate's verdict is also a
  ``ragmeter_gate`` user property of its test (so in ``--junitxml``).

Evaluations share one judge cache on disk (the store of ``$RAGMETER_HOME``) and are done once
however many workers ask (``ragmeter.testing.assertions``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragmeter.reports import EvaluationReport
    from ragmeter.runs.gates.gate import GateResult

__all__ = ["RagmeterFixture"]

_MARKER = "ragmeter_rows"
#: user properties a gate leaves on its test
_VERDICT, _MARKDOWN = "ragmeter_gate", "ragmeter_markdown"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragmeter", "ragmeter evaluations")
    group.addoption(
        "--ragmeter-judge",
        default=None,
        help="judge of the ragmeter fixture: a [models.NAME] of ragmeter.toml, or the model "
        "id at --ragmeter-judge-base-url",
    )
    group.addoption(
        "--ragmeter-judge-base-url", default=None, help="OpenAI-compatible endpoint of the judge"
    )
    group.addoption(
        "--ragmeter-embedder", default=None, help="embedding model of the ragmeter fixture"
    )
    group.addoption(
        "--ragmeter-markdown",
        default=None,
        metavar="FILE",
        help="write every ragmeter gate of the session as one markdown summary here",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(data): run the test once per row of data (a dataset file or a list of "
        "rows); the row is its ragmeter_row argument",
    )
    _pending.clear()


#: (test id, markdown) of each gate reported in this session
_pending: list[tuple[str, str]] = []


def _rows(marker: pytest.Mark, module: Path) -> tuple[list[dict[str, Any]], list[str]]:
    from ragmeter.datasets import load_dataset

    if not marker.args:
        raise pytest.UsageError(f"@pytest.mark.{_MARKER} needs the data: a file or a list of rows")
    data = marker.args[0]
    if isinstance(data, str | Path) and not Path(data).is_absolute():
        beside = module.parent / data
        data = beside if beside.exists() else Path(data)
    dataset = load_dataset(data)
    rows = [dict(dataset.raw(i)) for i in range(len(dataset))]
    ids = [str(row["id"]) if "id" in row else f"row{i}" for i, row in enumerate(rows)]
    return rows, ids


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(_MARKER)
    if marker is None:
        return
    if "ragmeter_row" not in metafunc.fixturenames:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: @pytest.mark.{_MARKER} gives each row as the "
            "ragmeter_row argument; the test takes none"
        )
    rows, ids = _rows(marker, Path(str(metafunc.definition.fspath)))
    metafunc.parametrize("ragmeter_row", rows, ids=ids)


@pytest.fixture
def ragmeter_row() -> dict[str, Any]:
    """One dataset row; given by ``@pytest.mark.ragmeter_rows(DATA)``."""
    raise pytest.UsageError(f"ragmeter_row is given by @pytest.mark.{_MARKER}(DATA) on the test")


class RagmeterFixture:
    """What the ``ragmeter`` fixture gives a test: evaluations and gates with the session's
    judge and embedder; each gate's verdict is recorded on the test."""

    def __init__(self, node: pytest.Item, options: dict[str, Any]) -> None:
        self._node = node
        self.options = options

    def _with(self, options: dict[str, Any]) -> dict[str, Any]:
        return {**self.options, **options}

    def evaluate(self, rows: Any, metrics: str | list[str], **options: Any) -> EvaluationReport:
        """``ragmeter.evaluate`` of ``rows`` with the session's judge (cached, shared)."""
        from ragmeter.testing.assertions import evaluate_once

        names = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else metrics
        return evaluate_once(rows, list(names), **self._with(options)).report

    def assert_metrics(
        self, rows_or_dataset: Any, rules: Any, *, baseline: Any = None, **options: Any
    ) -> GateResult:
        """``ragmeter.testing.assert_metrics`` with the session's judge and embedder."""
        from ragmeter.testing.assertions import GateFailed, assert_metrics

        try:
            result = assert_metrics(
                rows_or_dataset, rules, baseline=baseline, **self._with(options)
            )
        except GateFailed as exc:
            self._record(exc.result)
            raise
        self._record(result)
        return result

    def _record(self, result: GateResult) -> None:
        from ragmeter.runs.gates.output import markdown

        verdict = "passed" if result.passed else f"failed: {len(result.failed)} rule(s)"
        self._node.user_properties.append((_VERDICT, verdict))
        self._node.user_properties.append((_MARKDOWN, markdown(result)))


@pytest.fixture
def ragmeter(request: pytest.FixtureRequest) -> RagmeterFixture:
    """Evaluate and gate rows in a test: ``ragmeter.assert_metrics(rows, rules)``."""
    config = request.config
    options: dict[str, Any] = {}
    for name, option in (
        ("judge", "--ragmeter-judge"),
        ("judge_base_url", "--ragmeter-judge-base-url"),
        ("embedder", "--ragmeter-embedder"),
    ):
        value = config.getoption(option)
        if value is not None:
            options[name] = value
    return RagmeterFixture(request.node, options)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Gather each test's gate summaries (in the controller, from xdist workers too)."""
    if report.when != "call":
        return
    found = [str(value) for name, value in report.user_properties if name == _MARKDOWN]
    if found:
        _pending.extend((report.nodeid, text) for text in found)


def _demoted(text: str) -> str:
    """Markdown with every heading one level down (the session summary heads them)."""
    return "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines())


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--ragmeter-markdown")
    if path is None or hasattr(session.config, "workerinput"):  # an xdist worker
        return
    parts = ["# ragmeter gates", ""]
    if not _pending:
        parts.append("No test gated anything.")
    for nodeid, text in sorted(_pending):
        parts += [f"## `{nodeid}`", "", _demoted(text), ""]
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts) + "\n", encoding="utf-8")
