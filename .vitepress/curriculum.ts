// The curriculum's one source of truth: every stage's id, file, titles, mottos and layer.
// The curriculum pages, the stage header's breadcrumb and the sidebar all read this list.
// Whether a stage exists is not written here: it is decided from agents/ when the site is built.

export type Lang = "en" | "ja";

export interface Stage {
  /** "s02" */
  id: string;
  /** The file in agents/, e.g. "s02_tool_use.ts" */
  file: string;
  /** 1, 2 or 3: the breadcrumb puts a `|` between layers. */
  layer: 1 | 2 | 3;
  /**
   * The stage this one is built from, which "What changed" on its page compares it with.
   * Part I is cumulative (each stage's parent is the one before it); s06 rebuilds s03's core
   * tools on a registry; s07 to s12 are each s06 plus one mechanism. s01 has none.
   */
  parent?: string;
  title: Record<Lang, string>;
  motto: Record<Lang, string>;
}

export const LAYERS: Record<1 | 2 | 3, Record<Lang, string>> = {
  1: { en: "The loop and its tools", ja: "ループとツール" },
  2: { en: "A harness for many tools", ja: "ツールを束ねるハーネス" },
  3: { en: "Planning and context", ja: "計画とコンテキスト" },
};

export const STAGES: Stage[] = [
  {
    id: "s01",
    file: "s01_agent_loop.ts",
    layer: 1,
    title: { en: "The Agent Loop", ja: "エージェントループ" },
    motto: { en: "One loop and one tool are enough for an agent", ja: "エージェントに要るのは、ループ1つとツール1つです" },
  },
  {
    id: "s02",
    file: "s02_tool_use.ts",
    layer: 1,
    parent: "s01",
    title: { en: "Tools", ja: "ツール" },
    motto: { en: "Adding a tool means adding a handler", ja: "ツールを増やすとは、ハンドラを1つ足すことです" },
  },
  {
    id: "s03",
    file: "s03_search_and_edit.ts",
    layer: 1,
    parent: "s02",
    title: { en: "Search and Edit", ja: "検索と精密な編集" },
    motto: { en: "Find it first, then change only that", ja: "まず探し、狙った箇所だけを書き換えます" },
  },
  {
    id: "s04",
    file: "s04_web_fetch.ts",
    layer: 1,
    parent: "s03",
    title: { en: "Web Fetch", ja: "Web の取得" },
    motto: { en: "Reach outside, bring back only text", ja: "外へ手を伸ばし、持ち帰るのはテキストだけ" },
  },
  {
    id: "s05",
    file: "s05_ask_user.ts",
    layer: 1,
    parent: "s04",
    title: { en: "Ask the User", ja: "ユーザーに尋ねる" },
    motto: { en: "When unsure, ask the person", ja: "迷ったら、人に尋ねます" },
  },
  {
    id: "s06",
    file: "s06_tool_registry.ts",
    layer: 2,
    parent: "s03",
    title: { en: "Tool Registry", ja: "ツールレジストリ" },
    motto: { en: "A tool describes, checks and confirms itself", ja: "ツールは自分を説明し、検証し、確認を求めます" },
  },
  {
    id: "s07",
    file: "s07_large_results.ts",
    layer: 2,
    parent: "s06",
    title: { en: "Large Results", ja: "大きな結果" },
    motto: { en: "Context is a budget: show a preview, keep the whole", ja: "コンテキストは予算です。見せるのは一部、全体は手元に残します" },
  },
  {
    id: "s08",
    file: "s08_tool_discovery.ts",
    layer: 2,
    parent: "s06",
    title: { en: "Tool Discovery", ja: "ツールの発見" },
    motto: { en: "Tools can come from outside the program", ja: "ツールはプログラムの外からもやって来ます" },
  },
  {
    id: "s09",
    file: "s09_todo_write.ts",
    layer: 3,
    parent: "s06",
    title: { en: "Todo Write", ja: "TODO リスト" },
    motto: { en: "A plan written down is a plan kept", ja: "書き出した計画は、守られる計画になります" },
  },
  {
    id: "s10",
    file: "s10_subagent.ts",
    layer: 3,
    parent: "s06",
    title: { en: "Subagents", ja: "サブエージェント" },
    motto: { en: "A clean context for the side task; only the answer comes back", ja: "寄り道は新しいコンテキストで。戻ってくるのは答えだけです" },
  },
  {
    id: "s11",
    file: "s11_context_compact.ts",
    layer: 3,
    parent: "s06",
    title: { en: "Context Compaction", ja: "コンテキストの圧縮" },
    motto: { en: "Make room in the context, keep the transcript on disk", ja: "コンテキストは空けても、記録はディスクに残します" },
  },
  {
    id: "s12",
    file: "s12_skills_and_memory.ts",
    layer: 3,
    parent: "s06",
    title: { en: "Skills and Memory", ja: "スキルとメモリ" },
    motto: { en: "Load knowledge when it is needed, remember what matters", ja: "知識は必要なときに読み込み、大事なことは覚えておきます" },
  },
];

/** The link to a stage's page in one language: "/s02" or "/ja/s02". */
export function stageLink(id: string, lang: Lang): string {
  return `${lang === "ja" ? "/ja/" : "/"}${id}`;
}

export function stageById(id: string): Stage {
  const stage = STAGES.find((s) => s.id === id);
  if (!stage) throw new Error(`unknown stage ${id}: add it to .vitepress/curriculum.ts`);
  return stage;
}
