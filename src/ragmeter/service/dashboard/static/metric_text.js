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
  "answered": "Answered = 回答含有字母、数字、符号或组合标记时为 1，否则为 0（没有回答、回答为空、只有空白或只有标点：应用没有作答）。",
  "argument_accuracy": "参数准确率：在对期望工具发出的各次调用上，参数一致比例的平均值。",
  "binary_gain": "trec_eval 的 binG：对每个相关项取 1 / log2(2 + 排在它前面的不相关项数)，求和后除以相关项数。",
  "bpref": "bpref：每个检索到的相关项得 1 - (排在它前面的已判定不相关项数，最多 R) / min(R, 已判定不相关项数)，求和后除以 R；未判定的项跳过（Buckley 与 Voorhees）。",
  "context_precision": "ContextPrecision = sum_k(precision@k * v_k) / sum_k(v_k)，按排名顺序计算检索到的上下文；v_k = 第 k 个上下文对参考答案是否有用（该行没有参考答案时看是否对回答有用）。",
  "context_recall": "ContextRecall = 可归因于检索到的上下文的参考答案陈述数 / 参考答案陈述数。",
  "conversation_relevancy": "ConversationRelevancy = 与用户在前几轮中所说内容相关的助手回复数 / 助手回复数（同 DeepEval 的 ConversationRelevancyMetric）。",
  "criteria": "任意评分标准，打 0-1 分并给出理由：CriteriaMetric(criteria=\"cites its sources\")。",
  "dcg": "DCG@k = top k 中各项增益 / log2(rank+1) 之和，不做归一化（同 ranx 的 dcg）。",
  "dcg_burges": "增益取 2^等级 - 1 的 DCG，不做归一化（同 ranx 的 dcg_burges）。",
  "f1": "F1@k：precision@k 与 recall@k 的调和平均（同 ranx 的 f1）。",
  "faithfulness": "Faithfulness = 得到支持的回答陈述数 / 回答陈述数，每条陈述都对照检索到的上下文核查。",
  "gm_bpref": "每行的 bpref；trec_eval 的 all 行取各查询的几何平均（值不低于 1e-5），表格中显示算术平均。",
  "gm_map": "每行的平均精确率；trec_eval 的 all 行取各查询的几何平均（值不低于 1e-5），表格中显示算术平均。",
  "hit_rate": "命中率：检索到的 top-k 分块中只要有一个相关即为 1，否则为 0。",
  "infap": "推断平均精确率 infAP（Yilmaz 与 Aslam）：池中未评估的项（负等级）按已判定的项推断，同 trec_eval 的 infAP。",
  "iprec": "召回率水平 r 处的插值精确率（如 iprec@0.1）：召回率不低于 r 的各排名上精确率的最大值，r 按 round(r·R) 个相关项计（同 trec_eval 的 iprec_at_recall）。",
  "iprec_avg": "各召回率水平（默认 0, 0.1, …, 1，可用 levels 指定）上插值精确率的平均值（同 trec_eval 的 11pt_avg）。",
  "json_response": "JsonResponse = 回答能按严格的 JSON（RFC 8259，orjson；不接受代码围栏、注释、尾随逗号或 NaN）解析时为 1，否则为 0；shape=object 或 shape=array 还要求顶层是对象或数组。",
  "knowledge_retention": "KnowledgeRetention = 记住了用户已给出信息（既不再次询问，也不与之矛盾）的助手回复数 / 助手回复数（同 DeepEval 的 KnowledgeRetentionMetric：1 减去出现遗忘的回复所占比例）。",
  "lexical_grounding": "LexicalGrounding = 回答中出现在检索上下文里的不同内容词数 / 回答的不同内容词数：一种廉价的词面近似，不是忠实度。",
  "map": "平均精确率@k = 各相关排名 j <= k 处的 precision@j 之和 / 相关项数。",
  "mrr": "平均倒数排名：1 / top k 中第一个相关分块的排名，top k 中没有相关分块时为 0。",
  "ndcg": "nDCG@k = DCG@k / 理想 DCG@k，DCG = Σ 增益 / log2(rank+1)，增益默认取相关性等级（gains={1:3,2:9} 可另行指定，dcg=exp-log2 取 2^等级 - 1）。",
  "ndcg_burges": "增益取 2^等级 - 1 的 nDCG（Burges 等；同 ranx 的 ndcg_burges，等同于 ndcg(dcg=exp-log2)）。",
  "ndcg_rel": "在各相关项所在排名上取 nDCG 的平均值，未检索到的相关项按整个列表的 nDCG 计（同 trec_eval 的 ndcg_rel）。",
  "normalized_gain": "trec_eval 的 G：按已付出的代价折扣后的增益之和，除以理想排序的总增益。",
  "num_nonrel_judged_ret": "检索到且已判定为不相关的项数；trec_eval 的 all 行对各查询求和。",
  "num_q": "每个参与评测的行记为 1；trec_eval 的 all 行求和，即查询数。",
  "num_rel": "该行已判定的相关项数（R）；trec_eval 的 all 行对各查询求和。",
  "num_rel_ret": "检索到的相关项数（有 @k 时只计 top k；同 ranx 的 hits）；trec_eval 的 all 行对各查询求和。",
  "num_ret": "检索到的项数（给出 rel 时只计等级不低于 rel 的项，同 ir_measures 的 NumRet）；trec_eval 的 all 行对各查询求和。",
  "precision": "Precision@k = top k 中的相关分块数 / k（没有 k 时除以检索到的数量）。",
  "r_ndcg": "在理想排序的增益等级发生变化的各排名上取 nDCG 的平均值（同 trec_eval 的 Rndcg）。",
  "r_precision": "R-精确率：前 R 个检索结果中的相关项数 / R，R 为该行的相关项数（同 trec_eval 的 Rprec）。",
  "r_precision_mult": "排名 m·R 处的精确率（如 r_precision_mult@0.2；同 trec_eval 的 Rprec_mult）。",
  "rbp": "排序偏置精确率 RBP = (1 - p) × Σ 增益 × p^(rank-1)，增益缩放到 [0, 1]（Moffat 与 Zobel；同 trec_eval 的 rbp，持续度 p 默认 0.9）。",
  "rbp_resid": "若所有未判定的项都相关，RBP 最多还能增加多少（同 trec_eval 的 rbp_resid）。",
  "recall": "Recall@k = top k 中的相关分块数 / 相关项数。",
  "relative_precision": "相对精确率@k = top k 中的相关项数 / min(k, R)（同 trec_eval 的 relative_P）；没有 k 时即 set_relative_precision。",
  "retrieval_similarity": "Similarity = 各检索分块的 cosine(E(chunk), E(reference)) 的平均值，有多个参考答案时按 max（默认）、first（DB-GPT）或 mean 合并。",
  "retrieved_any": "RetrievedAny = 检索到至少一条上下文或文档 id 时为 1，否则为 0（检索器什么也没找到，或没有被调用）。",
  "set_f": "集合 F 值 = (beta + 1)·P·R / (beta·P + R)，P、R 为集合精确率与召回率（同 trec_eval 的 set_F；beta 为召回率的权重，默认 1）。",
  "set_map": "无序平均精确率 = 检索到的相关项数² / (检索到的项数 × R)（同 trec_eval 的 set_map）。",
  "set_precision": "集合精确率 = 检索到的相关项数 / 检索到的项数（有 @k 时只看前 k 个，不像 precision@k 那样把较短的列表补足到 k；同 trec_eval 的 set_P）。",
  "set_relative_precision": "检索到的相关项数 / min(检索到的项数, R)（同 trec_eval 的 set_relative_P）。",
  "task_completion": "TaskCompletion = 评审模型先写明用户交给的任务和对话的结果（智能体的回答与工具结果），再以 0-1 分评定这一结果完成任务的完整与正确程度（同 DeepEval 的 TaskCompletionMetric）。",
  "tool_argument_correctness": "ToolArgumentCorrectness = 评审模型认为参数正确的工具调用数 / 发出的工具调用数。",
  "tool_call_accuracy": "工具调用准确率：是否以正确的参数发出了期望的调用，有多余或缺少的调用时得部分分。",
  "tool_call_f1": "工具调用 F1：按不重复的调用计算，只有名称相同且参数作为带类型的 JSON 相等时才算匹配。",
  "tool_call_precision": "工具调用精确率：属于期望调用的不重复实际调用数 / 不重复实际调用数（tp / (tp + fp)；有期望调用却没有发出任何调用时为 0）。",
  "tool_call_recall": "工具调用召回率：已发出的不重复期望调用数 / 不重复期望调用数（tp / (tp + fn)；发出了调用但没有期望调用时为 0）。",
  "tool_correctness": "DeepEval 的工具正确性，等于其 ToolCorrectnessMetric 的工具调用得分，只在 DeepEval 把重复的调用误算作已使用的调用之处不同（deepeval_tool_correctness）：默认取与期望调用的最佳匹配，should_exact_match 要求按顺序发出相同的调用，should_consider_ordering 按加权 LCS 计分，input_parameters 把参数计入（DeepEval 的 evaluation_params=[INPUT_PARAMETERS]）。",
  "topic_adherence": "TopicAdherence = 智能体回答的主题对照该行 reference_topics 的 F1（或由 mode 选 precision、recall）。",
  "trajectory_match": "轨迹匹配：实际调用在 mode 规定的方式下与期望调用一致时为 1，否则为 0。",
  "unjudged": "top k 中未被该行判定的项所占比例（同 trec_eval 的 unj_k）。",
  "utility": "集合效用 = a × 检索到的相关项 + b × 检索到的不相关项 + c × 漏掉的相关项 + d × 未检索的不相关项（同 trec_eval 的 utility；默认 1, -1, 0, 0；n 为集合大小，用于 d 项）。"
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
