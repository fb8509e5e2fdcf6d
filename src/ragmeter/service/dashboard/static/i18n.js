// UI text in English and Chinese: one dictionary, one lookup, one switch.
const TEXT = {
  en: {
    skip: "Skip to content",
    loading: "Loading…",
    "nav.label": "Views",
    "nav.runs": "Runs",
    "lang.label": "Language",
    "auth.title": "Sign in",
    "auth.intro": "This server needs an API key. It is sent once and kept only by the server; this browser keeps a session cookie instead.",
    "auth.key": "API key",
    "auth.submit": "Sign in",
    "auth.wrong": "Wrong key: use one of the server's [server] api_keys.",
    "auth.logout": "Sign out",
    "auth.expired": "Your session has ended: sign in again.",
    "runs.title": "Runs",
    "runs.search": "Search",
    "runs.searchHint": "id, dataset or target",
    "runs.state": "State",
    "runs.dataset": "Dataset",
    "runs.any": "Any",
    "runs.clear": "Clear filters",
    "runs.count": "{n} runs",
    "runs.count1": "1 run",
    "runs.empty": "No runs yet.",
    "runs.emptyHint": "Start one with: ragmeter eval rows.jsonl -m hit_rate,mrr (or POST /api/v2/serve/evaluate/runs); it shows here.",
    "runs.noMatch": "No run matches these filters.",
    "runs.prev": "Previous",
    "runs.next": "Next",
    "runs.page": "{from}–{to} of {total}",
    "col.run": "Run",
    "col.dataset": "Dataset",
    "col.target": "Target",
    "col.metrics": "Metrics (mean, 95% CI)",
    "col.state": "State",
    "col.cost": "Judge cost",
    "col.date": "Created",
    "col.actions": "Actions",
    "state.pending": "pending",
    "state.running": "running",
    "state.done": "done",
    "state.failed": "failed",
    "state.cancelled": "cancelled",
    "progress": "{done} of {total} rows",
    "cost.none": "none",
    "cost.line": "{requests} requests, {tokens} tokens",
    "metric.null": "{n} null",
    "metric.noScore": "no score yet",
    "inline": "(inline rows)",
    "action.cancel": "Cancel",
    "action.resume": "Resume",
    "action.cancelLabel": "Cancel run {id}",
    "action.resumeLabel": "Resume run {id}",
    "action.cancelled": "Run {id} cancelled.",
    "action.resumed": "Run {id} queued again.",
    "error": "Error: {message}",
    "notFound": "No such page.",
  },
  zh: {
    skip: "跳到正文",
    loading: "加载中…",
    "nav.label": "视图",
    "nav.runs": "评测运行",
    "lang.label": "语言",
    "auth.title": "登录",
    "auth.intro": "此服务需要 API 密钥。密钥只发送一次，仅由服务器保存；浏览器只保留会话 Cookie。",
    "auth.key": "API 密钥",
    "auth.submit": "登录",
    "auth.wrong": "密钥错误：请使用服务器 [server] api_keys 中的密钥。",
    "auth.logout": "退出登录",
    "auth.expired": "会话已结束，请重新登录。",
    "runs.title": "评测运行",
    "runs.search": "搜索",
    "runs.searchHint": "ID、数据集或评测对象",
    "runs.state": "状态",
    "runs.dataset": "数据集",
    "runs.any": "全部",
    "runs.clear": "清除筛选",
    "runs.count": "共 {n} 次运行",
    "runs.count1": "共 1 次运行",
    "runs.empty": "还没有评测运行。",
    "runs.emptyHint": "开始一次评测：ragmeter eval rows.jsonl -m hit_rate,mrr（或 POST /api/v2/serve/evaluate/runs），它会显示在这里。",
    "runs.noMatch": "没有符合筛选条件的运行。",
    "runs.prev": "上一页",
    "runs.next": "下一页",
    "runs.page": "第 {from}–{to} 条，共 {total} 条",
    "col.run": "运行",
    "col.dataset": "数据集",
    "col.target": "评测对象",
    "col.metrics": "指标（均值，95% 置信区间）",
    "col.state": "状态",
    "col.cost": "评审开销",
    "col.date": "创建时间",
    "col.actions": "操作",
    "state.pending": "排队中",
    "state.running": "运行中",
    "state.done": "已完成",
    "state.failed": "失败",
    "state.cancelled": "已取消",
    "progress": "{done} / {total} 行",
    "cost.none": "无",
    "cost.line": "{requests} 次请求，{tokens} 个 token",
    "metric.null": "{n} 个空值",
    "metric.noScore": "暂无得分",
    "inline": "（内联数据）",
    "action.cancel": "取消",
    "action.resume": "继续",
    "action.cancelLabel": "取消运行 {id}",
    "action.resumeLabel": "继续运行 {id}",
    "action.cancelled": "运行 {id} 已取消。",
    "action.resumed": "运行 {id} 已重新排队。",
    "error": "错误：{message}",
    "notFound": "页面不存在。",
  },
};

const STORE_KEY = "ragmeter.lang";
let current = pick();

function pick() {
  const saved = localStorage.getItem(STORE_KEY);
  if (saved && saved in TEXT) return saved;
  return (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
}

/** The text of `key` in the current language, `{name}` replaced from `params`. */
export function t(key, params = {}) {
  const text = TEXT[current][key] ?? TEXT.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(params[name] ?? ""));
}

export function lang() {
  return current;
}

/** Switch language, remember it, and relabel the static parts of the page. */
export function setLang(code) {
  if (!(code in TEXT)) return;
  current = code;
  localStorage.setItem(STORE_KEY, code);
  translateStatic(document);
}

/** Fill elements marked data-i18n (text) and data-i18n-label (aria-label). */
export function translateStatic(root) {
  document.documentElement.lang = current === "zh" ? "zh-CN" : "en";
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-label]")) {
    el.setAttribute("aria-label", t(el.dataset.i18nLabel));
  }
}
