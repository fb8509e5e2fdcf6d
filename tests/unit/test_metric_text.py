"""The dashboard's Chinese metric descriptions (static/metric_text.js): one for every registered
metric, so that each metric /evaluate/metrics lists in any scene is described in Chinese, and
none for a name the registry does not know."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import ragmeter.service.dashboard
from ragmeter.metrics import metric_entries
from ragmeter.runs.planning.request import SCENES
from ragmeter.service.routes.evaluate import metrics

MODULE = Path(ragmeter.service.dashboard.__file__).parent / "static" / "metric_text.js"
_OBJECT = re.compile(r"^const ZH = (\{\n.*?\n\});$", re.DOTALL | re.MULTILINE)
_HAN = re.compile(r"[\u4e00-\u9fff]")


def chinese() -> dict[str, str]:
    """The JS module's ``ZH`` object, which is written as JSON."""
    found = _OBJECT.search(MODULE.read_text(encoding="utf-8"))
    assert found, f"no `const ZH = {{...}};` block in {MODULE}"
    table = json.loads(found.group(1))
    assert isinstance(table, dict)
    return table


def test_every_registered_metric_has_a_chinese_description_and_no_other_name_does() -> None:
    table = chinese()
    registered = {entry.name for entry in metric_entries()}
    assert sorted(registered - table.keys()) == [], "metrics without a Chinese description"
    assert sorted(table.keys() - registered) == [], "Chinese descriptions of unknown metrics"


def test_the_descriptions_are_chinese_one_line_text() -> None:
    for name, text in chinese().items():
        assert _HAN.search(text), name
        assert text.strip() == text and "\n" not in text, name
        assert text.endswith("。"), name


@pytest.mark.parametrize("scene", [None, *SCENES])
def test_each_metric_the_endpoint_lists_is_found_by_its_name_or_an_alias(
    scene: str | None,
) -> None:
    table = chinese()
    listed = metrics(scene_key=scene).data
    assert listed
    for m in listed:
        # metricText looks the name up first, then the aliases
        assert m.name in table or any(a in table for a in m.aliases), m.name
