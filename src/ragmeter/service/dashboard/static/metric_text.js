// What each metric measures, in the dashboard's language. The server describes metrics in
// English (/evaluate/metrics); the Chinese lines live here, keyed by the registry's name of
// each metric, which the server lists as a metric's name or among its aliases.
// tests/unit/test_metric_text.py checks that every registered metric has a line, and no other.
import { lang } from "./i18n.js";

// A JSON object: one "name": "text" pair a line.
const ZH = {
  "AnswerRelevancyMetric": "DB-GPT 的回答相关性：评审模型按含 {query}、{context} 和 {answer} 的提示模板给回答打 0-5 分；回复的第一行是分数，其余是反馈。",
  "AppLinkMetric": "DB-GPT 的 AppLinkMetric：回答 JSON 中的 app_name 是上下文之一时为 1。",
  "IntentMetric": "DB-GPT 的 IntentMetric：回答 JSON 中的 intent 是上下文之一时为 1。",
  "agent_goal_accuracy": "对话的最终状态是期望结果时 AgentGoalAccuracy = 1，否则为 0。",
  "answer_correctness": "AnswerCorrectness = (1 - w) * F1 + w * cosine(E(response), E(reference))，其中 w = similarity_weight（0.25）；F1 = TP / (TP + 0.5 (FP + FN))，由回答的陈述与参考答案的陈述对照得出。",
  "answer_relevancy": "ResponseRelevancy = 评审模型根据回答写出的各个问题上 cosine(E(query), E(q_i)) 的平均值（负的余弦值按 0 计）；回答回避问题时为 0。",
  "argument_accuracy": "参数准确率：在对期望工具发出的各次调用上，参数一致比例的平均值。",
  "context_precision": "ContextPrecision = sum_k(precision@k * v_k) / sum_k(v_k)，按排名顺序计算检索到的上下文；v_k = 第 k 个上下文对参考答案是否有用（该行没有参考答案时看是否对回答有用）。",
  "context_recall": "ContextRecall = 可归因于检索到的上下文的参考答案陈述数 / 参考答案陈述数。",
  "conversation_relevancy": "ConversationRelevancy = 与用户在前几轮中所说内容相关的助手回复数 / 助手回复数（同 DeepEval 的 ConversationRelevancyMetric）。",
  "criteria": "任意评分标准，打 0-1 分并给出理由：CriteriaMetric(criteria=\"cites its sources\")。",
  "faithfulness": "Faithfulness = 得到支持的回答陈述数 / 回答陈述数，每条陈述都对照检索到的上下文核查。",
  "hit_rate": "命中率：检索到的 top-k 分块中只要有一个相关即为 1，否则为 0。",
  "knowledge_retention": "KnowledgeRetention = 记住了用户已给出信息（既不再次询问，也不与之矛盾）的助手回复数 / 助手回复数（同 DeepEval 的 KnowledgeRetentionMetric：1 减去出现遗忘的回复所占比例）。",
  "map": "平均精确率@k = 各相关排名 j <= k 处的 precision@j 之和 / 相关项数。",
  "mrr": "平均倒数排名：1 / top k 中第一个相关分块的排名，top k 中没有相关分块时为 0。",
  "ndcg": "nDCG@k = DCG@k / 理想 DCG@k，增益为 1/log2(rank+1)，相关性只分相关与不相关。",
  "precision": "Precision@k = top k 中的相关分块数 / k（没有 k 时除以检索到的数量）。",
  "recall": "Recall@k = top k 中的相关分块数 / 相关项数。",
  "retrieval_similarity": "Similarity = 各检索分块的 cosine(E(chunk), E(reference)) 的平均值，有多个参考答案时按 max（默认）、first（DB-GPT）或 mean 合并。",
  "task_completion": "TaskCompletion = 评审模型先写明用户交给的任务和对话的结果（智能体的回答与工具结果），再以 0-1 分评定这一结果完成任务的完整与正确程度（同 DeepEval 的 TaskCompletionMetric）。",
  "tool_argument_correctness": "ToolArgumentCorrectness = 评审模型认为参数正确的工具调用数 / 发出的工具调用数。",
  "tool_call_accuracy": "工具调用准确率：是否以正确的参数发出了期望的调用，有多余或缺少的调用时得部分分。",
  "tool_call_f1": "工具调用 F1：按不重复的调用计算，只有名称相同且参数作为带类型的 JSON 相等时才算匹配。",
  "tool_call_precision": "工具调用精确率：属于期望调用的不重复实际调用数 / 不重复实际调用数（tp / (tp + fp)；有期望调用却没有发出任何调用时为 0）。",
  "tool_call_recall": "工具调用召回率：已发出的不重复期望调用数 / 不重复期望调用数（tp / (tp + fn)；发出了调用但没有期望调用时为 0）。",
  "tool_correctness": "DeepEval 的工具正确性，等于其 ToolCorrectnessMetric 的工具调用得分，只在 DeepEval 把重复的调用误算作已使用的调用之处不同（deepeval_tool_correctness）：默认取与期望调用的最佳匹配，should_exact_match 要求按顺序发出相同的调用，should_consider_ordering 按加权 LCS 计分，input_parameters 把参数计入（DeepEval 的 evaluation_params=[INPUT_PARAMETERS]）。",
  "topic_adherence": "TopicAdherence = 智能体回答的主题对照该行 reference_topics 的 F1（或由 mode 选 precision、recall）。",
  "trajectory_match": "轨迹匹配：实际调用在 mode 规定的方式下与期望调用一致时为 1，否则为 0。"
};

const TEXT = { zh: ZH };

/** What metric `m` (an item of /evaluate/metrics) measures, in the current language: the
 * line kept here when there is one, else the server's English description. */
export function metricText(m) {
  const known = TEXT[lang()];
  if (known) {
    for (const name of [m.name, ...(m.aliases || [])]) {
      if (Object.hasOwn(known, name)) return known[name];
    }
  }
  return m.description;
}
