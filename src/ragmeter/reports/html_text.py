"""The fixed text of the HTML report, in English and Chinese."""

from __future__ import annotations

from typing import Literal

__all__ = ["LANGUAGES", "TEXT", "Language"]

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")

TEXT: dict[Language, dict[str, str]] = {
    "en": {
        "report": "ragmeter report",
        "run": "Run",
        "name": "Name",
        "tags": "Tags",
        "note": "Note",
        "dataset": "Dataset",
        "target": "Target",
        "judge": "Judge",
        "judge_card": "Judge card",
        "scripted": "SCRIPTED JUDGE: scores no model gave (a dry run)",
        "code": "Code",
        "state": "State",
        "created": "Created",
        "baseline": "Baseline",
        "rows": "Rows",
        "duration": "Duration",
        "requests": "Judge requests",
        "cached": "From the cache",
        "tokens": "Tokens",
        "summary": "Summary",
        "metric": "Metric",
        "mean": "Mean",
        "ci": "95% CI",
        "scored": "Scored",
        "null": "Null",
        "calibrated": "Corrected by human labels (95% CI)",
        "calibratedNote": (
            "Corrected by human labels: the judge's mean over every row plus the mean "
            "human-judge difference on the labelled rows (prediction-powered inference, "
            "PPI++), with an interval that counts the judge's errors. Valid when the labelled "
            "rows were picked at random (or with known probabilities)."
        ),
        "labelsCount": "{n:,} labels",
        "distribution": "Score distributions",
        "histogram": "Histogram of {name}: {n} scores",
        "histCaption": "{n:,} scores; the tallest bar holds {top:,}",
        "noScore": "No score in any row.",
        "comparison": "Against the baseline",
        "baseMean": "Baseline mean",
        "candidateMean": "This run's mean",
        "delta": "Paired difference",
        "ciFamily": "{level}% family-wise CI",
        "ciEach": "CI",
        "pAdjusted": "p (Bonferroni)",
        "pRaw": "p",
        "correction": (
            "Intervals and p-values are corrected together for the {m} metrics compared "
            "(Bonferroni): each interval is made at {each}% so that all {m} hold together at "
            "{level}%. A verdict says better or worse only when both the p-value and the "
            "interval show a difference; otherwise there is no evidence of a difference "
            "(which does not mean the runs are the same)."
        ),
        "margin": " Equivalent: the interval lies inside ±{margin}.",
        "verdict": "Verdict",
        "paired": "Paired rows",
        "better": "better",
        "worse": "worse",
        "no_evidence": "no evidence of a difference",
        "equivalent": "equivalent (±{margin})",
        "notInformative": "not informative (n={n})",
        "notInformativeNote": (
            "Not informative: fewer than 30 values, or all equal; the interval says little."
        ),
        "unpaired": (
            "no row is scored in both runs ({scored_a} scored in the baseline, {scored_b} in "
            "the candidate; rows pair by {by})"
        ),
        "by.id": "row id",
        "by.query": "query text",
        "regressed": "{name}: the rows that regressed most",
        "noRegression": "No row got worse.",
        "row": "Row",
        "query": "Query",
        "response": "Response",
        "reference": "Reference",
        "base": "Baseline",
        "candidate": "This run",
        "score": "score",
        "feedback": "Feedback",
        "worst": "The worst rows per metric (at most {n}: lowest scores, then nulls)",
        "notRecorded": "The judge's reasoning was not recorded for this result.",
        "moreItems": "… and {n} more, not shown here",
        "kind.response_statements": "Statements of the response",
        "kind.reference_statements": "Statements of the reference",
        "kind.questions": "Questions generated from the response (cosine to the query)",
        "kind.contexts": "Retrieved contexts as judged (rank)",
        "kind.feedback": "The judge's feedback (0-5 score)",
        "kind.goal": "The user's goal, and the end state reached (is it the desired outcome?)",
        "kind.task": "The task, and its outcome (completion 0-1)",
        "kind.topics_refused": "Topics the user raised (refused by the agent?)",
        "kind.topics_in_reference": "Topics the user raised (within the reference topics?)",
        "kind.tool_calls": "Tool calls made (arguments right?)",
        "kind.turns": "The assistant's replies, as judged",
    },
    "zh": {
        "report": "ragmeter 评测报告",
        "run": "运行",
        "name": "名称",
        "tags": "标签",
        "note": "备注",
        "dataset": "数据集",
        "target": "评测对象",
        "judge": "评审模型",
        "judge_card": "评审模型卡片",
        "scripted": "脚本评审：分数并非模型给出（仅供演练）",
        "code": "代码版本",
        "state": "状态",
        "created": "创建时间",
        "baseline": "基线",
        "rows": "行数",
        "duration": "耗时",
        "requests": "评审请求",
        "cached": "缓存命中",
        "tokens": "令牌数",
        "summary": "概要",
        "metric": "指标",
        "mean": "均值",
        "ci": "95% 置信区间",
        "scored": "已评分",
        "null": "无分数",
        "calibrated": "经人工标注校正（95% 置信区间）",
        "calibratedNote": (
            "经人工标注校正：评审模型在全部样本上的均值，加上已标注样本中人工与评审模型的平均差值"
            "（预测驱动推断 PPI++）；置信区间已计入评审模型的误差。仅当标注样本是随机抽取"
            "（或抽取概率已知）时成立。"
        ),
        "labelsCount": "{n:,} 条标注",
        "distribution": "分数分布",
        "histogram": "{name} 的直方图：{n} 个分数",
        "histCaption": "共 {n:,} 个分数；最高的柱为 {top:,} 个",
        "noScore": "没有任何一行得到分数。",
        "comparison": "与基线对比",
        "baseMean": "基线均值",
        "candidateMean": "本次均值",
        "delta": "配对差值",
        "ciFamily": "{level}% 联合置信区间",
        "ciEach": "置信区间",
        "pAdjusted": "p 值（Bonferroni 校正）",
        "pRaw": "p 值",
        "correction": (
            "区间与 p 值针对所比较的 {m} 个指标一并校正（Bonferroni）：每个区间按 {each}% 构造，"
            "使 {m} 个区间同时成立的概率为 {level}%。只有 p 值与区间都显示差异时，结论才是更好"
            "或更差；否则为无证据表明有差异（这并不表示两次运行相同）。"
        ),
        "margin": "等效：区间完全落在 ±{margin} 之内。",
        "verdict": "结论",
        "paired": "配对行数",
        "better": "更好",
        "worse": "更差",
        "no_evidence": "无证据表明有差异",
        "equivalent": "等效（±{margin}）",
        "notInformative": "区间无参考意义（n={n}）",
        "notInformativeNote": "区间无参考意义：少于 30 个值，或所有值相同。",
        "unpaired": (
            "没有两次运行都打了分的行（基线 {scored_a} 行有分，候选 {scored_b} 行有分；"
            "配对依据：{by}）"
        ),
        "by.id": "行 id",
        "by.query": "查询文本",
        "regressed": "{name}：退步最多的行",
        "noRegression": "没有变差的行。",
        "row": "行",
        "query": "问题",
        "response": "回答",
        "reference": "参考答案",
        "base": "基线",
        "candidate": "本次",
        "score": "分数",
        "feedback": "说明",
        "worst": "各指标最差的行（最多 {n} 行：先是最低分，再是无分数）",
        "notRecorded": "此结果未记录评审理由。",
        "moreItems": "……另有 {n} 条未在此显示",
        "kind.response_statements": "回答中的陈述",
        "kind.reference_statements": "参考答案中的陈述",
        "kind.questions": "由回答生成的问题（与原问题的余弦相似度）",
        "kind.contexts": "评审后的检索上下文（排名）",
        "kind.feedback": "评审说明（0-5 分）",
        "kind.goal": "用户目标与最终达成的状态（是否为期望结果？）",
        "kind.task": "任务及其结果（完成度 0-1）",
        "kind.topics_refused": "用户提出的主题（智能体是否拒绝？）",
        "kind.topics_in_reference": "用户提出的主题（是否属于参考主题？）",
        "kind.tool_calls": "发出的工具调用（参数是否正确？）",
        "kind.turns": "助手的各条回复（评审结果）",
    },
}
