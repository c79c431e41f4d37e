// The curriculum's one source of truth: every stage's id, file, titles, mottos and layer.
// The curriculum pages, the stage header's breadcrumb and the sidebar all read this list.
// Whether a stage exists is not written here: it is decided from agents/ when the site is built.

export type Lang = "en" | "ja";

export interface Stage {
  /** "s02" */
  id: string;
  /** The file in agents/, e.g. "s02_tool_use.ts" */
  file: string;
  /** 1 to 5: the breadcrumb puts a `|` between layers. The capstone stands after them. */
  layer: Layer | "capstone";
  /**
   * The stage this one is built from, which "What changed" on its page compares it with.
   * Part I is cumulative (each stage's parent is the one before it); s06 rebuilds s03's core
   * tools on a registry; s07 to s18 are each s06 plus one mechanism; s19 builds on s18, s20
   * on s19. s01 has none.
   */
  parent?: string;
  title: Record<Lang, string>;
  motto: Record<Lang, string>;
  /** What the stage teaches, in a sentence a learner can read before the stage exists. */
  teaches: Record<Lang, string>;
  /** The seed documents it is designed from (see SEEDS), e.g. ["002"]. */
  seeds: string[];
}

export type Layer = 1 | 2 | 3 | 4 | 5;

export const LAYERS: Record<Layer, Record<Lang, string>> = {
  1: { en: "The loop and its tools", ja: "ループとツール" },
  2: { en: "A harness for many tools", ja: "ツールを束ねるハーネス" },
  3: { en: "Planning and context", ja: "計画とコンテキスト" },
  4: { en: "The agent you use every day", ja: "毎日使うエージェント" },
  5: { en: "Agents that work in parallel", ja: "並んで働くエージェント" },
};

/** The layers in order, for the breadcrumb, the sidebar and the curriculum list. */
export const LAYER_ORDER: Layer[] = [1, 2, 3, 4, 5];

export const STAGES: Stage[] = [
  {
    id: "s01",
    file: "s01_agent_loop.ts",
    layer: 1,
    title: { en: "The Agent Loop", ja: "エージェントループ" },
    motto: { en: "One loop and one tool are enough for an agent", ja: "エージェントに要るのは、ループ1つとツール1つです" },
    teaches: {
      en: "The loop: call the model, run the tools it asks for, send the results back, and stop when it stops asking. One tool: bash.",
      ja: "ループです。モデルを呼び、頼まれたツールを実行して結果を返し、頼まれなくなったら止めます。ツールは bash の1つだけです。",
    },
    seeds: ["001"],
  },
  {
    id: "s02",
    file: "s02_tool_use.ts",
    layer: 1,
    parent: "s01",
    title: { en: "Tools", ja: "ツール" },
    motto: { en: "Adding a tool means adding a handler", ja: "ツールを増やすとは、ハンドラを1つ足すことです" },
    teaches: {
      en: "A dispatch map from tool name to handler, three file tools, and a sandbox that keeps every path inside the workspace.",
      ja: "ツール名からハンドラを引くディスパッチマップ、ファイル用のツール3つ、そしてすべてのパスをワークスペースの中に留めるサンドボックスです。",
    },
    seeds: ["001", "004"],
  },
  {
    id: "s03",
    file: "s03_search_and_edit.ts",
    layer: 1,
    parent: "s02",
    title: { en: "Search and Edit", ja: "検索と精密な編集" },
    motto: { en: "Find it first, then change only that", ja: "まず探し、狙った箇所だけを書き換えます" },
    teaches: {
      en: "Find before you change: grep, glob and ls with sensible limits, and an edit_file that changes exactly one known place.",
      ja: "変える前に探します。上限つきの grep、glob、ls と、狙った1か所だけを書き換える edit_file です。",
    },
    seeds: ["000", "003"],
  },
  {
    id: "s04",
    file: "s04_web_fetch.ts",
    layer: 1,
    parent: "s03",
    title: { en: "Web Fetch", ja: "Web の取得" },
    motto: { en: "Reach outside, bring back only text", ja: "外へ手を伸ばし、持ち帰るのはテキストだけ" },
    teaches: {
      en: "Reaching outside: a URL becomes clean text, and private, loopback and cloud-metadata addresses are refused.",
      ja: "外へ手を伸ばします。URL をきれいなテキストにし、プライベート、ループバック、クラウドのメタデータのアドレスは拒否します。",
    },
    seeds: ["000"],
  },
  {
    id: "s05",
    file: "s05_ask_user.ts",
    layer: 1,
    parent: "s04",
    title: { en: "Ask the User", ja: "ユーザーに尋ねる" },
    motto: { en: "When unsure, ask the person", ja: "迷ったら、人に尋ねます" },
    teaches: {
      en: "A human in the loop: before a step that cannot be undone, the model asks a person, and the loop waits for the answer.",
      ja: "人をループに入れます。取り消せない操作の前にモデルが人に尋ね、ループは答えを待ちます。",
    },
    seeds: ["000"],
  },
  {
    id: "s06",
    file: "s06_tool_registry.ts",
    layer: 2,
    parent: "s03",
    title: { en: "Tool Registry", ja: "ツールレジストリ" },
    motto: { en: "A tool describes, checks and confirms itself", ja: "ツールは自分を説明し、検証し、確認を求めます" },
    teaches: {
      en: "Tools as objects that describe, validate and confirm themselves, kept in a registry; the nine steps of one tool call; what the model reads (llmContent) kept apart from what the person sees (returnDisplay).",
      ja: "ツールを、自分を説明し、入力を検証し、確認を求めるオブジェクトにして、レジストリにまとめます。ツール呼び出し1回の9つの手順と、モデルが読むもの(llmContent)と人に見せるもの(returnDisplay)の区別も学びます。",
    },
    seeds: ["002"],
  },
  {
    id: "s07",
    file: "s07_large_results.ts",
    layer: 2,
    parent: "s06",
    title: { en: "Large Results", ja: "大きな結果" },
    motto: { en: "Context is a budget: show a preview, keep the whole", ja: "コンテキストは予算です。見せるのは一部、全体は手元に残します" },
    teaches: {
      en: "Context is a budget: paged reads, capped output, and large results written to a file with a head-and-tail preview, so nothing is lost.",
      ja: "コンテキストは予算です。ページ単位の読み込み、出力の上限、そして大きな結果はファイルに書き出して先頭と末尾だけを見せ、何も失わないようにします。",
    },
    seeds: ["003"],
  },
  {
    id: "s08",
    file: "s08_tool_discovery.ts",
    layer: 2,
    parent: "s06",
    title: { en: "Tool Discovery", ja: "ツールの発見" },
    motto: { en: "Tools can come from outside the program", ja: "ツールはプログラムの外からもやって来ます" },
    teaches: {
      en: "Tools from outside the program: a discovery command and MCP servers, whose tools are named server__tool.",
      ja: "プログラムの外から来るツールです。発見用のコマンドと MCP サーバーを使い、ツール名は server__tool の形になります。",
    },
    seeds: ["002"],
  },
  {
    id: "s09",
    file: "s09_todo_write.ts",
    layer: 3,
    parent: "s06",
    title: { en: "Todo Write", ja: "TODO リスト" },
    motto: { en: "A plan written down is a plan kept", ja: "書き出した計画は、守られる計画になります" },
    teaches: {
      en: "Planning: a todo list the model writes and keeps up to date, and a reminder when it forgets.",
      ja: "計画です。モデルが書いて更新し続ける TODO リストと、忘れたときのリマインダーです。",
    },
    seeds: ["002"],
  },
  {
    id: "s10",
    file: "s10_subagent.ts",
    layer: 3,
    parent: "s06",
    title: { en: "Subagents", ja: "サブエージェント" },
    motto: { en: "A clean context for the side task; only the answer comes back", ja: "寄り道は新しいコンテキストで。戻ってくるのは答えだけです" },
    teaches: {
      en: "A subagent with a clean context: it does a side task and returns only its result.",
      ja: "新しいコンテキストを持つサブエージェントです。寄り道の作業をこなし、結果だけを返します。",
    },
    seeds: ["002"],
  },
  {
    id: "s11",
    file: "s11_context_compact.ts",
    layer: 3,
    parent: "s06",
    title: { en: "Context Compaction", ja: "コンテキストの圧縮" },
    motto: { en: "Make room in the context, keep the transcript on disk", ja: "コンテキストは空けても、記録はディスクに残します" },
    teaches: {
      en: "Making room: old tool results compacted, the conversation summarised near the limit, and the whole transcript kept on disk.",
      ja: "場所を空けます。古いツール結果を圧縮し、上限が近づいたら会話を要約し、記録の全体はディスクに残します。",
    },
    seeds: ["003"],
  },
  {
    id: "s12",
    file: "s12_skills_and_memory.ts",
    layer: 3,
    parent: "s06",
    title: { en: "Skills and Memory", ja: "スキルとメモリ" },
    motto: { en: "Load knowledge when it is needed, remember what matters", ja: "知識は必要なときに読み込み、大事なことは覚えておきます" },
    teaches: {
      en: "Knowledge on demand (skills listed, loaded when asked) and memory that survives from one session to the next.",
      ja: "必要なときに読み込む知識(一覧だけを見せ、頼まれたら読み込むスキル)と、セッションをまたいで残るメモリです。",
    },
    seeds: ["002"],
  },
  {
    id: "s13",
    file: "s13_streaming.ts",
    layer: 4,
    parent: "s06",
    title: { en: "Streaming", ja: "ストリーミング" },
    motto: { en: "Show the reply as it is written", ja: "返答は書かれるそばから見せます" },
    teaches: {
      en: "Replies streamed as they are written: text as its deltas arrive, a tool call shown once its input is whole, Ctrl-C that stops a reply and keeps the history valid, retries announced.",
      ja: "返答を書かれるそばから流します。テキストは差分が届くたびに表示し、ツール呼び出しは入力がそろった時点で見せます。Ctrl-C で返答を止めても履歴は正しいまま残り、再試行は知らせます。",
    },
    seeds: [],
  },
  {
    id: "s14",
    file: "s14_cost.ts",
    layer: 4,
    parent: "s06",
    title: { en: "Cost", ja: "コスト" },
    motto: { en: "Know what a session costs, and cache what repeats", ja: "セッションの費用を知り、繰り返す部分はキャッシュします" },
    teaches: {
      en: "Prompt caching with breakpoints on the system prompt, the tools and the newest message; tokens and dollars after every turn; /cost for the session.",
      ja: "システムプロンプト、ツール、最新のメッセージにブレークポイントを置くプロンプトキャッシュ。ターンごとのトークン数と費用、そしてセッション全体の /cost です。",
    },
    seeds: [],
  },
  {
    id: "s15",
    file: "s15_providers.ts",
    layer: 4,
    parent: "s06",
    title: { en: "Providers", ja: "プロバイダ" },
    motto: { en: "One loop, any model", ja: "ループは1つ、モデルは何でも" },
    teaches: {
      en: "One adapter that speaks OpenAI's Chat Completions and translates both ways, so the same loop runs on any model (PROVIDER=openai).",
      ja: "OpenAI の Chat Completions を話し、双方向に変換するアダプタを1つ。同じループがどのモデルでも動きます(PROVIDER=openai)。",
    },
    seeds: [],
  },
  {
    id: "s16",
    file: "s16_sessions.ts",
    layer: 4,
    parent: "s06",
    title: { en: "Sessions", ja: "セッション" },
    motto: { en: "Nothing is lost when the program ends", ja: "プログラムが終わっても、何も失いません" },
    teaches: {
      en: "An append-only session log, one message per line as it enters the history; --continue and --resume, and repair of a log cut short.",
      ja: "履歴に入るたびに1行ずつ書き足すセッションログ。--continue と --resume、そして途中で切れたログの修復です。",
    },
    seeds: [],
  },
  {
    id: "s17",
    file: "s17_hooks_and_permissions.ts",
    layer: 4,
    parent: "s06",
    title: { en: "Hooks and Permissions", ja: "フックと権限" },
    motto: { en: "The person sets the rules, the harness keeps them", ja: "ルールは人が決め、守るのはハーネスです" },
    teaches: {
      en: "Permission rules (allow, ask, deny) in Claude Code's syntax, and hooks the harness runs before and after each tool, at each prompt and at the end of a turn.",
      ja: "Claude Code と同じ書き方の権限ルール(allow、ask、deny)と、ツールの前後、プロンプトのたび、ターンの終わりにハーネスが実行するフックです。",
    },
    seeds: [],
  },
  {
    id: "s18",
    file: "s18_background_tasks.ts",
    layer: 5,
    parent: "s06",
    title: { en: "Background Tasks", ja: "バックグラウンドタスク" },
    motto: { en: "Keep thinking while a command runs", ja: "コマンドが動く間も考え続けます" },
    teaches: {
      en: "Slow commands run in the background; the agent reads their output when it wants, and hears when they end.",
      ja: "時間のかかるコマンドはバックグラウンドで動かします。エージェントは好きなときに出力を読み、終わったら知らせを受けます。",
    },
    seeds: [],
  },
  {
    id: "s19",
    file: "s19_task_graph_and_team.ts",
    layer: 5,
    parent: "s18",
    title: { en: "Task Graph and Team", ja: "タスクグラフとチーム" },
    motto: { en: "Split the work, claim it, and say when it is done", ja: "仕事を分け、引き受け、終わったら伝えます" },
    teaches: {
      en: "A task board on disk with dependencies, and teammates with inboxes who claim tasks from it, race-free.",
      ja: "依存関係つきのタスクボードをディスクに置き、受信箱を持つチームメイトがそこからタスクを取り合わずに引き受けます。",
    },
    seeds: [],
  },
  {
    id: "s20",
    file: "s20_worktrees.ts",
    layer: 5,
    parent: "s19",
    title: { en: "Worktrees", ja: "ワークツリー" },
    motto: { en: "Each task in its own checkout", ja: "タスクごとに専用のチェックアウトを" },
    teaches: {
      en: "Each task in its own git worktree: created, listed and removed by the agent, bound to a task, and the core tools working inside it.",
      ja: "タスクごとに git のワークツリーを1つ。エージェントが作り、一覧し、片づけ、タスクに結びつけ、中核のツールがその中で動きます。",
    },
    seeds: [],
  },
];

/**
 * The capstone, agents/s_full.ts: every mechanism together. It is not one of the twelve
 * stages (it adds no mechanism of its own), so it is kept apart from STAGES; its page is
 * `full`, after s12.
 */
export const CAPSTONE: Stage = {
  id: "full",
  file: "s_full.ts",
  layer: "capstone",
  title: { en: "The Capstone", ja: "総仕上げ" },
  motto: { en: "Every mechanism together: the agent you would use", ja: "すべての仕組みを1つに。実際に使うエージェントです" },
  teaches: {
    en: "Every mechanism of s01 to s20 in one program: the registry, large results kept out of the context, discovered tools, a plan, subagents, compaction, skills and memory, a streamed reply and its cost, any provider, sessions, hooks and permission rules, background tasks, a task board with teammates, and a git worktree per task.",
    ja: "s01〜s20 のすべての仕組みを1つのプログラムにまとめます。レジストリ、コンテキストに入れない大きな結果、発見したツール、計画、サブエージェント、圧縮、スキルとメモリ、ストリームで届く返答とその費用、どのプロバイダでも使えること、セッション、フックとパーミッションのルール、バックグラウンドタスク、タスクボードとチームメイト、タスクごとの git ワークツリーです。",
  },
  seeds: [],
};

/**
 * The machinery in lib/machinery: what every stage's tools call and no stage teaches. Each
 * module has an "Under the hood" page (docs/under-the-hood/<id>.md): what the plain version
 * gets wrong, then the fix, included from the module by region, and the test that proves it.
 * A stage page links to the modules its file imports (stages.data.ts reads the imports).
 */
export interface Machinery {
  /** "processes": the module lib/machinery/processes.ts and the page under-the-hood/processes */
  id: string;
  title: Record<Lang, string>;
  /** The plain version's failure, in a line. */
  failure: Record<Lang, string>;
}

export const MACHINERY: Machinery[] = [
  {
    id: "processes",
    title: { en: "Processes", ja: "プロセス" },
    failure: { en: "A background job outlives the agent; a command that reads stdin waits for ever.", ja: "バックグラウンドのジョブがエージェントより長生きし、stdin を読むコマンドは永遠に待ちます。" },
  },
  {
    id: "head-and-tail",
    title: { en: "Head and tail", ja: "先頭と末尾" },
    failure: { en: "`yes` fills memory; keeping only the head loses the error at the end.", ja: "`yes` がメモリを埋め尽くし、先頭だけ残すと末尾のエラーが消えます。" },
  },
  {
    id: "safe-read",
    title: { en: "Safe reads", ja: "安全な読み込み" },
    failure: { en: "A FIFO blocks the whole program; /dev/zero fills memory.", ja: "FIFO がプログラム全体を止め、/dev/zero がメモリを埋めます。" },
  },
  {
    id: "atomic-write",
    title: { en: "Atomic writes", ja: "アトミックな書き込み" },
    failure: { en: "A crash half-way leaves half a file; a symlink planted at the temporary name sends the write elsewhere.", ja: "途中で落ちると半分だけのファイルが残り、一時ファイル名に仕掛けたシンボリックリンクが書き込みをよそへ向けます。" },
  },
  {
    id: "walk",
    title: { en: "The walk", ja: "ファイルの走査" },
    failure: { en: "A brace pattern expands to a million; a symlink carries the search out of the workspace.", ja: "波括弧のパターンが百万通りに膨らみ、シンボリックリンクが検索をワークスペースの外へ連れ出します。" },
  },
  {
    id: "search",
    title: { en: "The search", ja: "検索" },
    failure: { en: "`(a+)+$` runs for years on one line, and nothing can stop it on the main thread.", ja: "`(a+)+$` が1行に何年もかかり、メインスレッドでは止める手段がありません。" },
  },
  {
    id: "html-to-text",
    title: { en: "HTML to text", ja: "HTML からテキストへ" },
    failure: { en: "A page of nested tags takes quadratic time in a parser that builds a tree.", ja: "入れ子の深いページは、木を作るパーサーでは2乗の時間がかかります。" },
  },
  {
    id: "addresses",
    title: { en: "Addresses", ja: "アドレス" },
    failure: { en: "An address spelled another way reaches loopback or the cloud's metadata.", ja: "別の書き方をしたアドレスがループバックやクラウドのメタデータに届きます。" },
  },
  {
    id: "http-body",
    title: { en: "Response bodies", ja: "レスポンスの本文" },
    failure: { en: "An endless page, or a small compressed one, fills memory.", ja: "終わらないページや、小さな圧縮ページがメモリを埋めます。" },
  },
  {
    id: "display",
    title: { en: "Display", ja: "表示" },
    failure: { en: "A 10,000-line result floods the terminal, and the person misses what happened.", ja: "1万行の結果が端末を埋め、何が起きたのかが見えなくなります。" },
  },
  {
    id: "mcp",
    title: { en: "MCP", ja: "MCP" },
    failure: { en: "A call still reporting progress is killed at its limit; an answer over 10 MB reads as a crash; `content[0].text` loses the rest.", ja: "進捗を報告中の呼び出しが制限時間で打ち切られ、10 MB を超える答えはクラッシュに見え、`content[0].text` は残りを失います。" },
  },
  {
    id: "validation",
    title: { en: "Validation", ja: "入力の検査" },
    failure: { en: "\"Cannot read properties of undefined\" tells the model nothing it can fix.", ja: "「Cannot read properties of undefined」では、モデルは何を直せばよいかわかりません。" },
  },
];

export const machineryLink = (id: string, lang: Lang) => `${lang === "ja" ? "/ja" : ""}/under-the-hood/${id}`;

/**
 * The size a stage file may reach, in total lines, comments included (CONVENTIONS.md): a stage
 * reads in one sitting. The tests hold every file to it; the home page shows it.
 */
const SIZE_TARGETS: Record<string, number> = { s01: 180, s02: 330, s03: 520, s04: 720, s05: 800, s06: 600, s07: 700, s08: 720, full: 2600 };
export const sizeTarget = (id: string) => SIZE_TARGETS[id] ?? 560;

/**
 * A file over its target, held at the size it has so that it cannot grow; the home page shows
 * it as over and links to its page's reasons (CONVENTIONS.md: where a target does not fit a
 * real case, do what serves the learner and say why on the page). The capstone carries every
 * mechanism of s01 to s20 in one file that imports no stage; its page's "Why it is over its size
 * target" counts where its lines come from (capstone-size.ts).
 */
export const OVER_TARGET: Record<string, number> = { full: 4848 };

/** Every page that is a stage's, in reading order: s01 ... s12, then the capstone. */
export const PAGE_STAGES: Stage[] = [...STAGES, CAPSTONE];

/** The stage whose page comes after `id`'s, if any. */
export function nextStage(id: string): Stage | undefined {
  const index = PAGE_STAGES.findIndex((stage) => stage.id === id);
  return index >= 0 ? PAGE_STAGES[index + 1] : undefined;
}

/**
 * The seed documents the stages were designed from, in words a learner can follow, and the
 * system each one describes (see SYSTEMS).
 */
export const SEEDS: Record<string, { system: string; what: Record<Lang, string> }> = {
  "000": {
    system: "glassbox",
    what: {
      en: "the glassbox tutorial's chapter on its extended tools (edit_file, grep, glob, web_fetch, ask_user)",
      ja: "glassbox チュートリアルの拡張ツールの章(edit_file、grep、glob、web_fetch、ask_user)",
    },
  },
  "001": {
    system: "learn-claude-code",
    what: {
      en: "the s02 chapter of learn-claude-code, a staged Python course (the dispatch map and safe_path)",
      ja: "段階を追って進む Python の講座 learn-claude-code の s02 の章(ディスパッチマップと safe_path)",
    },
  },
  "002": {
    system: "qwen-code",
    what: {
      en: "Qwen Code's documentation of its core Tools API (tool objects, the registry, discovery and MCP, the execution flow)",
      ja: "Qwen Code のコア Tools API のドキュメント(ツールのオブジェクト、レジストリ、発見と MCP、実行の流れ)",
    },
  },
  "003": {
    system: "deepagents",
    what: {
      en: "deepagents' FilesystemMiddleware (seven file tools, path checks, large results evicted to files)",
      ja: "deepagents の FilesystemMiddleware(ファイル用のツール7つ、パスの検査、大きな結果のファイルへの退避)",
    },
  },
  "004": {
    system: "learn-claude-code",
    what: {
      en: "learn-claude-code's web page for its s02 (how a stage page is laid out)",
      ja: "learn-claude-code の s02 の Web ページ(ステージのページの構成)",
    },
  },
};

/**
 * The systems the pages compare the stages with: one address each, found in their own
 * documentation or repository. A page links them through <ComparedWith>, never by hand.
 */
export const SYSTEMS: Record<string, { name: Record<Lang, string>; url: string; what: Record<Lang, string> }> = {
  "claude-code": {
    name: { en: "Claude Code", ja: "Claude Code" },
    url: "https://code.claude.com/docs/en/how-claude-code-works",
    what: {
      en: "Anthropic's coding agent for the terminal; compared by its documented tools and behaviour, not by its code",
      ja: "Anthropic の、端末で使うコーディングエージェント。比べたのはドキュメントに書かれたツールと振る舞いで、コードではありません",
    },
  },
  "qwen-code": {
    name: { en: "Qwen Code", ja: "Qwen Code" },
    url: "https://github.com/QwenLM/qwen-code",
    what: {
      en: "an open-source coding agent for the terminal; compared by its core Tools API as its documentation describes it",
      ja: "オープンソースの、端末で使うコーディングエージェント。比べたのはドキュメントに書かれたコアの Tools API です",
    },
  },
  deepagents: {
    name: { en: "deepagents", ja: "deepagents" },
    url: "https://github.com/langchain-ai/deepagents",
    what: {
      en: "LangChain's agent library; compared by the tools of its FilesystemMiddleware and their descriptions",
      ja: "LangChain のエージェント用ライブラリ。比べたのは FilesystemMiddleware のツールとその説明文です",
    },
  },
  glassbox: {
    name: { en: "the glassbox tutorial", ja: "glassbox チュートリアル" },
    url: "https://github.com/acompany-develop/ai-coding-agent-glassbox",
    what: {
      en: "a Japanese tutorial that builds a coding agent in Python; compared by its chapter on extended tools",
      ja: "Python でコーディングエージェントを作る日本語のチュートリアル。比べたのは拡張ツールの章です",
    },
  },
  "learn-claude-code": {
    name: { en: "learn-claude-code", ja: "learn-claude-code" },
    url: "https://github.com/shareAI-lab/learn-claude-code",
    what: {
      en: "a staged Python course that builds an agent like Claude Code; compared by its s02 chapter",
      ja: "Claude Code のようなエージェントを段階的に作る Python の講座。比べたのは s02 の章です",
    },
  },
  pi: {
    name: { en: "Pi", ja: "Pi" },
    url: "https://github.com/earendil-works/pi-mono",
    what: {
      en: "an open-source coding agent for the terminal (the coding-agent package of pi-mono); compared by its documentation of sessions and their file format",
      ja: "オープンソースの、端末で使うコーディングエージェント(pi-mono の coding-agent パッケージ)。比べたのはセッションとそのファイル形式のドキュメントです",
    },
  },
};

/** The link to a stage's page in one language: "/s02" or "/ja/s02". */
export function stageLink(id: string, lang: Lang): string {
  return `${lang === "ja" ? "/ja/" : "/"}${id}`;
}

export function stageById(id: string): Stage {
  const stage = PAGE_STAGES.find((s) => s.id === id);
  if (!stage) throw new Error(`unknown stage ${id}: add it to .vitepress/curriculum.ts`);
  return stage;
}
