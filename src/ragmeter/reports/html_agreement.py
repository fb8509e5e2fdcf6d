"""The HTML report's section on the judge's agreement with people: per labelled metric, for
every row and then per language, each statistic of the judge against each reviewer and
against their majority (value, interval, n), and the reviewers' own alpha, the ceiling. It
reads the plain dict of ``runs.views.agreement.run_agreement``."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["agreement_section"]

#: how each statistic is called in the report, by language
_NAMES = {
    "en": {
        "cohen_kappa": "Cohen's κ",
        "weighted_kappa": "quadratic-weighted κ",
        "krippendorff_alpha": "Krippendorff's α",
        "spearman": "Spearman ρ",
        "balanced_accuracy": "balanced accuracy",
        "f1": "F1 (failing class)",
        "accuracy": "accuracy",
        "exact_agreement": "exact agreement",
    },
    "zh": {
        "cohen_kappa": "Cohen κ",
        "weighted_kappa": "二次加权 κ",
        "krippendorff_alpha": "Krippendorff α",
        "spearman": "Spearman ρ",
        "balanced_accuracy": "平衡准确率",
        "f1": "F1（不通过类）",
        "accuracy": "准确率",
        "exact_agreement": "完全一致率",
    },
}
_TEXT = {
    "en": {
        "title": "Judge and people",
        "intro": (
            "How the judge's scores agree with the human labels of the same rows, with 95% "
            "bootstrap intervals. The reviewers' α among themselves is the ceiling a judge "
            "can reach."
        ),
        "against": "Against",
        "majority": "the reviewers' majority",
        "statistic": "Statistic",
        "value": "Value",
        "ci": "95% CI",
        "n": "n",
        "alpha": "Reviewers among themselves (α)",
        "confusion": "Counts: the judge's verdicts (rows) against {who}'s (columns)",
        "all": "all rows",
        "language": "rows in {language}",
        "languages": {"en": "English", "zh": "Chinese"},
    },
    "zh": {
        "title": "评审模型与人工标注",
        "intro": "评审模型的分数与同一批样本的人工标注之间的一致性，附 95% 自助法置信区间。"
        "标注人之间的 α 是评审模型所能达到的上限。",
        "against": "对照",
        "majority": "标注人多数意见",
        "statistic": "统计量",
        "value": "数值",
        "ci": "95% 置信区间",
        "n": "样本数",
        "alpha": "标注人之间（α）",
        "confusion": "计数：评审模型的判断（行）对比{who}的判断（列）",
        "all": "全部样本",
        "language": "{language}样本",
        "languages": {"en": "英文", "zh": "中文"},
    },
}


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: Any) -> str:
    if not isinstance(value, int | float) or not math.isfinite(value):
        return "–"
    return f"{value:.3f}"


def _interval(stat: Mapping[str, Any]) -> str:
    note = stat.get("note") or {}
    if stat.get("low") is None or stat.get("high") is None:
        return f"<span class='muted'>{_e(note.get('text', '–'))}</span>"
    shown = f"{_num(stat['low'])} – {_num(stat['high'])}"
    return f"<span class='muted' title='{_e(note['text'])}'>{shown}</span>" if note else shown


def _rows(group: Mapping[str, Any], language: str) -> list[str]:
    text, names = _TEXT[language], _NAMES[language]
    out: list[str] = []
    for found in group.get("agreement") or []:
        against = found["against"]
        who = text["majority"] if against == "majority" else against
        for stat in found.get("statistics") or []:
            out.append(
                f"<tr><td>{_e(who)}</td><td>{_e(names.get(stat['name'], stat['name']))}</td>"
                f"<td class='num'>{_num(stat.get('value'))}</td>"
                f"<td class='num'>{_interval(stat)}</td><td class='num'>{stat.get('n', 0):,}</td>"
                "</tr>"
            )
    alpha = group.get("reviewers_alpha")
    if alpha:
        out.append(
            f"<tr><td>{text['alpha']}</td><td>{names['krippendorff_alpha']}</td>"
            f"<td class='num'>{_num(alpha.get('value'))}</td>"
            f"<td class='num'>{_interval(alpha)}</td><td class='num'>{alpha.get('n', 0):,}</td>"
            "</tr>"
        )
    return out


def _confusion(found: Mapping[str, Any], who: str, language: str) -> str:
    """The judge's verdicts (rows) against one reviewer's or the majority's (columns)."""
    confusion = found.get("confusion")
    if not confusion:
        return ""
    names = [_num(c).rstrip("0").rstrip(".") or "0" for c in confusion["categories"]]
    head = "<th></th>" + "".join(f"<th class='num'>{_e(n)}</th>" for n in names)
    rows = "".join(
        f"<tr><th class='num'>{_e(name)}</th>"
        + "".join(f"<td class='num'>{int(n):,}</td>" for n in row)
        + "</tr>"
        for name, row in zip(names, confusion["counts"], strict=True)
    )
    caption = _e(str(_TEXT[language]["confusion"]).format(who=who))
    return (
        f"<table class='confusion'><caption>{caption}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _group_title(group: Mapping[str, Any], language: str) -> str:
    text = _TEXT[language]
    found = str(group.get("language") or "all")
    if found == "all":
        return str(text["all"])
    shown = text["languages"].get(found, found)  # type: ignore[attr-defined]
    return str(text["language"]).format(language=shown)


def agreement_section(agreement: Mapping[str, Any] | None, language: str) -> str:
    """The section (empty when no metric of the run has a label)."""
    metrics = [m for m in (agreement or {}).get("metrics") or [] if m.get("groups")]
    if not metrics:
        return ""
    text = _TEXT[language]
    head = "".join(
        f"<th>{text[k]}</th>"
        if k in ("against", "statistic")
        else f"<th class='num'>{text[k]}</th>"
        for k in ("against", "statistic", "value", "ci", "n")
    )
    parts = [f"<h2>{text['title']}</h2><p class='muted'>{text['intro']}</p>"]
    for metric in metrics:
        for group in metric["groups"]:
            rows = _rows(group, language)
            if not rows:
                continue
            title = f"{_e(metric['metric'])} · {_group_title(group, language)}"
            parts.append(
                f"<h3>{title}</h3><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{''.join(rows)}</tbody></table>"
            )
            for found in group.get("agreement") or []:
                who = text["majority"] if found["against"] == "majority" else found["against"]
                parts.append(_confusion(found, str(who), language))
    return "".join(parts)
