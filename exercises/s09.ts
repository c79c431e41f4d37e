// Exercise s09: the plan and its reminder. The todo_write schema, its rules (TODO_RULES), the
// checklist, the registry and the loop are given; the tool's execute, countReply and
// withReminder are taken out. The checks read the requests the model received, as the API
// would: each tool_use answered by the very next message, the reminder inside a result.
import type { MessageCreateParams, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { defineExercise, notWrittenIn, quote, reply, resultText, say, scenarioOf, toolResults, type CheckKit } from "../lib/course/exercises.ts";

type Status = "pending" | "in_progress" | "completed";
type Todo = { id: string; content: string; status: Status };
const STEPS = ["Add slugify to strings.js", "Test it", "Run the test"];
/** The whole list: one status per step, ids "1", "2", ... */
const plan = (...statuses: Status[]): { todos: Todo[] } => ({ todos: statuses.map((status, i) => ({ id: String(i + 1), content: STEPS[i] ?? `Step ${i + 1}`, status })) });

const NOTES = "the notes of this project\n";
const readNotes = (id?: string) => ({ id, name: "read_file", input: { path: "notes.txt" } });
const todoWrite = (input: { todos: Todo[] }, id?: string) => ({ id, name: "todo_write", input });

/** The stage's own functions the checks use besides the tools; runTool's result as the model gets it. */
function stageOf(t: CheckKit) {
  const stage = t.stage as unknown as {
    runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
    todoList(): readonly Todo[];
    prepareReplay(): void;
  };
  return {
    ...stage,
    async runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> {
      const result = await stage.runTool(call);
      // A TODO reached inside the tool: thrown, the report names the function.
      if (notWrittenIn(resultText(result))) throw new Error(resultText(result));
      return result;
    },
  };
}

/** The person's words and the checks' own view of a list: "[1 pending, 2 in_progress]". */
const shown = (list: readonly Todo[]) => `[${list.map((item) => `${item.id} ${item.status}`).join(", ")}]`;
const sameList = (a: readonly Todo[], b: readonly Todo[]) => shown(a) === shown(b) && a.every((item, i) => item.content === b[i].content);

let calls = 0;
const useBlock = (name: string, input: Record<string, unknown>) => ({ type: "tool_use", id: `toolu_s09_check_${++calls}`, name, input }) as ToolUseBlock;

/** Play `replies` through the learner's loop, after a file to read; the requests the model received. */
async function played(t: CheckKit, replies: Parameters<typeof scenarioOf>[0]) {
  t.write("notes.txt", NOTES);
  const scenario = scenarioOf(replies);
  const session = t.asRecorded(await t.replay(scenario));
  for (const error of session.turnErrors) {
    const text = error instanceof Error ? error.message : String(error);
    t.fail(say(`a turn ended with an error: ${text}`, `ターンがエラーで終わりました: ${text}`));
  }
  mustBeValid(t, session, scenario.prompts);
  return session;
}

/**
 * The tool results a reminder rode in, over the whole session (its last request holds it all),
 * by tool_use id: the results of other tools than todo_write that speak of the todo list. What
 * those tools return here (a file, an error, a command's output) never does.
 */
function reminded(requests: MessageCreateParams[]): string[] {
  const messages = (requests.at(-1)?.messages ?? []) as MessageParam[];
  const todoCalls = new Set(messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).flatMap((b) => (b.type === "tool_use" && b.name === "todo_write" ? [b.id] : [])));
  const ids: string[] = [];
  for (const message of messages) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type === "tool_result" && !todoCalls.has(block.tool_use_id) && /todo/i.test(resultText(block))) ids.push(block.tool_use_id);
    }
  }
  return ids;
}

/**
 * What the API would refuse, or the reminder done the wrong way: roles that do not alternate,
 * a tool_use not answered by the very next message (each id, in order), anything but tool
 * results in the message that answers them, or the person's prompt changed.
 */
function requestProblems(requests: MessageCreateParams[], prompts: string[]): string[] {
  const problems: string[] = [];
  for (const [n, request] of requests.entries()) {
    const messages = request.messages as MessageParam[];
    messages.forEach((message, i) => {
      const where = `request ${n + 1}, message ${i + 1}`;
      const role = i % 2 === 0 ? "user" : "assistant";
      if (message.role !== role) problems.push(`${where} is from ${message.role}, where the roles must alternate`);
      const previous = messages[i - 1];
      const asked = previous && Array.isArray(previous.content) ? previous.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) : [];
      if (message.role !== "user") return;
      if (typeof message.content === "string") {
        if (asked.length > 0) problems.push(`${where} is text where the results of [${asked.join(", ")}] must be`);
        else if (!prompts.includes(message.content)) problems.push(`${where} is ${quote(message.content)}, not the person's prompt as typed`);
        return;
      }
      const answered = message.content.flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : []));
      if (asked.join(",") !== answered.join(",")) problems.push(`${where} answers [${answered.join(", ")}], the calls before it were [${asked.join(", ")}]`);
      const other = message.content.find((b) => b.type !== "tool_result");
      if (other) problems.push(`${where} holds a ${other.type} block beside the tool results: the reminder must ride inside a result`);
    });
  }
  return problems;
}

function mustBeValid(t: CheckKit, session: { requests: MessageCreateParams[] }, prompts: string[]): void {
  const problems = requestProblems(session.requests, prompts);
  if (problems.length > 0) t.fail(say(`a request the API would refuse, or a reminder outside a result: ${problems[0]}`, `API が拒否するリクエストか、結果の外のリマインダーがあります: ${problems[0]}`));
}

function mustRemindIn(t: CheckKit, requests: MessageCreateParams[], expected: string[], what: { en: string; ja: string }): void {
  const got = reminded(requests);
  if (got.join(",") !== expected.join(",")) {
    const list = (ids: string[]) => (ids.length === 0 ? "none" : ids.join(", "));
    t.fail(
      say(`${what.en}: the reminder rode in the results of [${list(got)}]`, `${what.ja}: リマインダーが入っていたのは [${list(got)}] の結果でした`),
      say(`a reminder in the results of [${list(expected)}] only`, `リマインダーは [${list(expected)}] の結果にだけ入る`),
    );
  }
}

export default defineExercise({
  stage: "s09",
  title: say("A plan and its reminder", "計画とリマインダー"),
  mechanism: say(
    "todo_write's rules and the reminder: count the model's replies, and after three without a new list put a reminder inside a tool result",
    "todo_write の規則とリマインダー: モデルの返答を数え、リストが3回更新されなければツール結果の中にリマインダーを入れる",
  ),
  minutes: 35,
  takeOut: [
    {
      function: "todoWriteTool.execute",
      task: say(
        "check the new list against TODO_RULES (a list over MAX_TODOS by its length alone, before any work on its items); refuse it naming each rule it breaks and keep the old list; otherwise keep it, show the person the checklist and tell the model in one line.",
        "新しいリストを TODO_RULES で確かめます(MAX_TODOS を超えるリストは、項目を1つずつ調べる前に長さだけで判断します)。破った規則を名指しして拒否し、古いリストを残します。守っていればリストを保存し、人にはチェックリストを、モデルには1行の確認を返します。",
      ),
    },
    {
      function: "countReply",
      task: say(
        "count this reply of the model: start again when the list was updated or nothing is open; at the third reply in a row without a new list, make a reminder due and start again.",
        "モデルの返答を1つ数えます。リストが更新されたか開いている項目がなければ数え直し、新しいリストのない返答が3回続いたらリマインダーを予約して数え直します。",
      ),
    },
    {
      function: "withReminder",
      task: say(
        "count the reply (was there an accepted todo_write?), then put a due reminder inside the last tool result's content; never as a message or block of its own.",
        "返答を数え（受け付けられた todo_write があったか）、予約されたリマインダーを最後のツール結果の content の中に入れます。独立したメッセージやブロックにはしません。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "a refused todo_write counted as an update: the count starts again, and the reminder never comes",
      change: [["countReply(calls.some((call, i) => call.name === todoWriteTool.name && results[i]?.is_error !== true));", "countReply(calls.some((call) => call.name === todoWriteTool.name));"]],
      fails: "third-reply",
    },
    {
      name: "the reminder as a message of its own, between the tool_use and its results",
      change: [
        ["let reminderDue = false;", "let reminderDue = false;\nlet reminderMessage: string | undefined;"],
        ["  return [...results.slice(0, -1), { ...last, content }];", "  reminderMessage = note;\n  return results;"],
        ["    messages.push({ role: \"user\", content: results });", "    if (reminderMessage) messages.push({ role: \"user\", content: reminderMessage });\n    reminderMessage = undefined;\n    messages.push({ role: \"user\", content: results });"],
      ],
      fails: "inside-a-result",
    },
    {
      name: "the reminder as a text block of its own in front of the results",
      change: [["  return [...results.slice(0, -1), { ...last, content }];", "  return [{ type: \"text\", text: note } as unknown as ToolResultBlockParam, ...results];"]],
      fails: "inside-a-result",
    },
    {
      name: "a reminder at every reply: the count is never waited for",
      change: [["  if (repliesSinceUpdate < REMIND_AFTER) return;\n", ""]],
      fails: "third-reply",
    },
    {
      name: "off by one: the reminder at the fourth reply",
      change: [["if (repliesSinceUpdate < REMIND_AFTER) return;", "if (repliesSinceUpdate <= REMIND_AFTER) return;"]],
      fails: "third-reply",
    },
    {
      name: "the count not started again after a reminder: one at every reply after the third",
      change: [["  repliesSinceUpdate = 0; // after a reminder the count starts again\n", ""]],
      fails: "third-reply",
    },
    {
      name: "every tool call counted, not every reply",
      change: [["  countReply(calls.some((call, i) => call.name === todoWriteTool.name && results[i]?.is_error !== true));", "  for (const [i, call] of calls.entries()) countReply(call.name === todoWriteTool.name && results[i]?.is_error !== true);"]],
      fails: "third-reply",
    },
    {
      name: "a new list does not start the count again",
      change: [["  if (listUpdated || openItems().length === 0) {", "  if (openItems().length === 0) {"]],
      fails: "third-reply",
    },
    {
      name: "the new list merged into the old one by id, not replacing it",
      change: [["    todos = list.map(({ id, content, status }) => ({ id, content, status }));\n", "    todos = [...todos.filter((old) => !list.some((item) => item.id === old.id)), ...list];\n"]],
      fails: "whole-list",
    },
    {
      name: "two items in_progress accepted: only the first three rules checked",
      change: [[": TODO_RULES;\n", ": TODO_RULES.slice(0, 3);\n"]],
      fails: "rules",
    },
    {
      name: "the list kept before the rules are checked, so a refused list replaces it anyway",
      change: [["    const list = params.todos as Todo[];\n", "    const list = params.todos as Todo[];\n    todos = list;\n"]],
      fails: "rules",
    },
    {
      name: "duplicate ids looked for by hand before the list is counted, each item against the whole list",
      change: [
        [
          "    const list = params.todos as Todo[];\n",
          "    const list = params.todos as Todo[];\n    const twice = list.find((item, i) => list.findIndex((other) => other.id === item.id) !== i);\n    if (twice) throw new Error(`the list was refused: it breaks the rule \"ids unique\" (the id \"${twice.id}\" is used more than once)`);\n",
        ],
      ],
      fails: "rules",
    },
    {
      name: "a refusal returned as an ordinary result, without is_error",
      change: [["      throw new Error(`the list was refused: it breaks the rule ${broken.join(\" and the rule \")}. The list is unchanged:\\n${checklist(todos, { ids: true })}`);", "      return { llmContent: `the list was refused: it breaks the rule ${broken.join(\" and the rule \")}.`, returnDisplay: checklist(todos) };"]],
      fails: "rules",
    },
    {
      name: "the reminder in the first result of the reply, not the last",
      change: [
        ["  const last = results.at(-1);\n  if (!reminderDue", "  const last = results[0];\n  if (!reminderDue"],
        ["  return [...results.slice(0, -1), { ...last, content }];", "  return [{ ...last, content }, ...results.slice(1)];"],
      ],
      fails: "inside-a-result",
    },
    {
      name: "the reminder in place of what the tool returned",
      change: [["  return [...results.slice(0, -1), { ...last, content }];", "  return [...results.slice(0, -1), { ...last, content: note }];"]],
      fails: "inside-a-result",
    },
    {
      name: "the result that carries the reminder loses its is_error",
      change: [["  return [...results.slice(0, -1), { ...last, content }];", "  return [...results.slice(0, -1), { type: \"tool_result\", tool_use_id: last.tool_use_id, content }];"]],
      fails: "inside-a-result",
    },
    {
      name: "a reply that ends the turn not counted",
      change: [["  countReply(false); // s09: a reply that ends the turn counts too (it ran no todo_write)\n", ""]],
      fails: "turn-ends",
    },
    {
      name: "a reminder due when the turn ends is dropped, since no result can carry it",
      change: [["  countReply(false); // s09: a reply that ends the turn counts too (it ran no todo_write)", "  countReply(false); // s09: a reply that ends the turn counts too (it ran no todo_write)\n  reminderDue = false;"]],
      fails: "turn-ends",
    },
    {
      name: "a reminder while no item is open",
      change: [["  if (listUpdated || openItems().length === 0) {", "  if (listUpdated || todos.length === 0) {"]],
      fails: "open-items",
    },
  ],
  requirements: [
    {
      id: "whole-list",
      title: say(
        "todo_write keeps the whole list it is sent, replacing the old one; the person sees every item, the model gets one short line; an empty list clears it",
        "todo_write は送られたリスト全体を保存して古いリストと置き換え、人にはすべての項目を見せ、モデルには短い1行を返す。空のリストで消える",
      ),
      hints: [
        say("The model sends the whole list every time. What should happen to the list it sent before?", "モデルは毎回リスト全体を送ります。前に送ったリストはどうなるべきでしょう。"),
        say(
          "Keep a copy of the new list in todos. Return llmContent with a one-line confirmation and returnDisplay with checklist(todos): runTool prints returnDisplay for the person.",
          "新しいリストのコピーを todos に入れます。llmContent には1行の確認を、returnDisplay には checklist(todos) を返します。runTool が returnDisplay を人に見せます。",
        ),
        say(
          "todos = list; return { llmContent: todos.length === 0 ? \"Todo list cleared.\" : `Todo list saved: ${summary(todos)}.`, returnDisplay: checklist(todos) };",
          "todos = list; return { llmContent: todos.length === 0 ? \"Todo list cleared.\" : `Todo list saved: ${summary(todos)}.`, returnDisplay: checklist(todos) };",
        ),
      ],
      async check(t) {
        const stage = stageOf(t);
        stage.prepareReplay();
        for (const list of [plan("completed", "in_progress", "pending"), plan("in_progress", "pending")]) {
          t.printed.length = 0;
          const result = await stage.runTool(useBlock("todo_write", list));
          const text = resultText(result);
          if (result.is_error) t.fail(say(`a valid list was refused: ${quote(text)}`, `正しいリストが拒否されました: ${quote(text)}`));
          if (!sameList(stage.todoList(), list.todos)) t.fail(say(`after todo_write(${shown(list.todos)}) the list is ${shown(stage.todoList())}`, `todo_write(${shown(list.todos)}) のあと、リストは ${shown(stage.todoList())} でした`));
          const screen = t.printed.join("\n");
          const missing = list.todos.find((item) => !screen.includes(item.content));
          if (missing) t.fail(say(`the person did not see the item ${quote(missing.content)}; the screen showed ${quote(screen)}`, `人に項目 ${quote(missing.content)} が見えていません。画面は ${quote(screen)} でした`));
          if (text.includes("\n") || text.length > 200) t.fail(say(`the model got more than one short line: ${quote(text)}`, `モデルに短い1行より多くが返りました: ${quote(text)}`));
        }
        const cleared = await stage.runTool(useBlock("todo_write", { todos: [] }));
        if (cleared.is_error || stage.todoList().length !== 0) t.fail(say(`an empty list did not clear it: ${quote(resultText(cleared))}`, `空のリストで消えませんでした: ${quote(resultText(cleared))}`));
      },
    },
    {
      id: "rules",
      title: say(
        "A list that breaks a rule (more than 20 items, an id twice, empty content, two items in_progress) is refused with an error naming the rule, and the old list is kept; a list of 40,000 items is refused at once",
        "規則を破るリスト（21項目以上、同じ id が2回、空の内容、in_progress が2つ）はその規則を名指ししたエラーで拒否され、古いリストが残る。40,000項目のリストもすぐに拒否される",
      ),
      hints: [
        say("A list with two items in progress: what is the agent doing now? Refuse it, and say which rule it breaks, so the model can send a better one.", "進行中の項目が2つあるリストでは、エージェントが今何をしているのか分かりません。拒否し、どの規則を破ったかを伝えれば、モデルは直したリストを送れます。"),
        say(
          "Check every rule of TODO_RULES before changing anything (for a list over MAX_TODOS, the first rule alone: its length says enough), and collect the names of those broken. Throw an Error naming them (runTool turns it into is_error); todos is assigned only after the checks pass.",
          "何かを変える前に TODO_RULES の規則をすべて確かめ(MAX_TODOS を超えるリストは最初の規則だけで十分です。長さが分かれば拒否できます)、破られた規則の名前を集めます。それを書いた Error を throw します（runTool が is_error にします）。todos に代入するのは確認が通ってからです。",
        ),
        say(
          "const broken = TODO_RULES.flatMap(({ rule, broken }) => { const how = broken(list); return how ? [`\"${rule}\" (${how})`] : []; }); if (broken.length > 0) throw new Error(`the list was refused: it breaks the rule ${broken.join(\" and the rule \")}`);",
          "const broken = TODO_RULES.flatMap(({ rule, broken }) => { const how = broken(list); return how ? [`\"${rule}\" (${how})`] : []; }); if (broken.length > 0) throw new Error(`the list was refused: it breaks the rule ${broken.join(\" and the rule \")}`);",
        ),
      ],
      async check(t) {
        const stage = stageOf(t);
        stage.prepareReplay();
        const kept = plan("completed", "in_progress", "pending");
        await stage.runTool(useBlock("todo_write", kept));
        const twenty = Array.from({ length: 20 }, (_, i) => ({ id: `t${i}`, content: `Step ${i}`, status: "pending" as const }));
        const cases: [string, RegExp, { todos: Todo[] }][] = [
          ["more than 20 items", /20/, { todos: [...twenty, { id: "t20", content: "One more", status: "pending" }] }],
          ["an id used twice", /unique|id/i, { todos: [...plan("pending", "pending").todos, { id: "2", content: "Again", status: "pending" }] }],
          ["an item with no content", /content|empty/i, { todos: [{ id: "1", content: "  ", status: "pending" }] }],
          ["two items in_progress", /in_progress|in progress/i, plan("in_progress", "in_progress")],
        ];
        for (const [what, names, list] of cases) {
          const answer = await t.tool("todo_write")(list);
          if (!answer.isError) t.fail(say(`a list with ${what} was not refused: ${quote(answer.text)}`, `${what} のリストが拒否されませんでした: ${quote(answer.text)}`));
          if (!names.test(answer.text)) t.fail(say(`the refusal of a list with ${what} does not name the rule: ${quote(answer.text)}`, `${what} のリストを拒否するエラーが規則を名指ししていません: ${quote(answer.text)}`));
          if (!sameList(stage.todoList(), kept.todos)) t.fail(say(`after refusing a list with ${what}, the list is ${shown(stage.todoList())}, not the old ${shown(kept.todos)}`, `${what} のリストを拒否したあと、リストが古い ${shown(kept.todos)} ではなく ${shown(stage.todoList())} でした`));
        }
        const full = await t.tool("todo_write")({ todos: twenty });
        if (full.isError) t.fail(say(`a list of exactly 20 items was refused: ${quote(full.text)}`, `ちょうど20項目のリストが拒否されました: ${quote(full.text)}`));
        // A list far over the limit: its length is enough to refuse it, whatever its items hold.
        const huge = Array.from({ length: 40_000 }, (_, i) => ({ id: `h${i}`, content: `Step ${i}`, status: "pending" as const }));
        const begun = Date.now();
        const long = await t.tool("todo_write")({ todos: huge });
        const took = Date.now() - begun;
        if (!long.isError || !/20/.test(long.text)) t.fail(say(`a list of 40,000 items was not refused for its length: ${quote(long.text.slice(0, 300))}`, `40,000項目のリストが長さを理由に拒否されませんでした: ${quote(long.text.slice(0, 300))}`));
        if (took > 1000) {
          t.fail(
            say(`a list of 40,000 items took ${took} ms to refuse: count it first, before any work on each item`, `40,000項目のリストの拒否に ${took} ms かかりました。項目を1つずつ調べる前に、まず長さを数えます`),
            say("a list over the limit refused at once, by its length", "上限を超えるリストは、長さだけですぐに拒否される"),
          );
        }
      },
    },
    {
      id: "third-reply",
      title: say(
        "After three replies in a row without a new list while items are open (a refused todo_write is no new list), a reminder rides in the third reply's tool result, not before; then the count starts again",
        "開いている項目があるのに新しいリストのない返答が3回続くと（拒否された todo_write は新しいリストではない）、3回目の返答のツール結果にリマインダーが入る（それより前には入らない）。そのあと数え直す",
      ),
      hints: [
        say("Every reply of the model passes through runTools (it asked for tools) or endTurn (it stopped). Count there, not in the loop.", "モデルの返答はどれも runTools（ツールを頼んだとき）か endTurn（止まったとき）を通ります。ループではなく、そこで数えます。"),
        say(
          "countReply: reset to 0 when the list was updated or no item is open; otherwise add one, and at REMIND_AFTER make the reminder due and reset. withReminder calls countReply with whether an accepted todo_write was among the calls.",
          "countReply は、リストが更新されたか開いた項目がなければ 0 に戻し、そうでなければ1足して、REMIND_AFTER に達したらリマインダーを予約して 0 に戻します。withReminder は、受け付けられた todo_write が呼び出しの中にあったかを渡して countReply を呼びます。",
        ),
        say(
          "if (listUpdated || openItems().length === 0) { repliesSinceUpdate = 0; reminderDue = false; return; } if (++repliesSinceUpdate < REMIND_AFTER) return; repliesSinceUpdate = 0; reminderDue = true;",
          "if (listUpdated || openItems().length === 0) { repliesSinceUpdate = 0; reminderDue = false; return; } if (++repliesSinceUpdate < REMIND_AFTER) return; repliesSinceUpdate = 0; reminderDue = true;",
        ),
      ],
      async check(t) {
        const reads = Array.from({ length: 7 }, (_, i) => reply.tools([readNotes(`toolu_read_${i + 1}`)]));
        const session = await played(t, [reply.tools([todoWrite(plan("in_progress", "pending"))]), ...reads, reply.text("done")]);
        mustRemindIn(t, session.requests, ["toolu_read_3", "toolu_read_6"], say("a list with open items, then seven replies that read a file", "開いた項目のあるリストのあと、ファイルを読む返答が7回"));
        const current = await played(t, [
          reply.tools([todoWrite(plan("in_progress", "pending"))]),
          reply.tools([readNotes()]),
          reply.tools([readNotes()]),
          reply.tools([todoWrite(plan("completed", "in_progress")), readNotes()]),
          reply.tools([readNotes()]),
          reply.tools([readNotes()]),
          reply.text("done"),
        ]);
        mustRemindIn(t, current.requests, [], say("a model that updates its list at the third reply", "3回目の返答でリストを更新するモデル"));
        // A list the tool refused changed nothing: it is no update, and the count goes on.
        const refused = await played(t, [
          reply.tools([todoWrite(plan("in_progress", "pending"))]),
          reply.tools([readNotes()]),
          reply.tools([readNotes()]),
          reply.tools([todoWrite(plan("in_progress", "in_progress"), "toolu_refused"), readNotes("toolu_after_refused")]),
          reply.tools([readNotes()]),
          reply.text("done"),
        ]);
        const [refusal] = toolResults(refused.requests, 4);
        if (refusal?.is_error !== true) {
          t.fail(say(`a list with two items in_progress was not refused: ${quote(refusal && resultText(refusal))} (see the rules requirement)`, `in_progress が2つのリストが拒否されませんでした: ${quote(refusal && resultText(refusal))}（規則の要件を見てください）`));
        }
        mustRemindIn(t, refused.requests, ["toolu_after_refused"], say("a todo_write refused (two items in_progress) beside a read at the third reply", "3回目の返答で、拒否される todo_write（in_progress が2つ）とファイルの読み込みを並べたとき"));
        // Three calls in one reply are one reply.
        const side = await played(t, [
          reply.tools([todoWrite(plan("in_progress", "pending"))]),
          reply.tools([readNotes(), readNotes(), readNotes()]),
          reply.tools([readNotes()]),
          reply.tools([readNotes("toolu_side_third")]),
          reply.text("done"),
        ]);
        mustRemindIn(t, side.requests, ["toolu_side_third"], say("a first reply of three reads side by side, then two replies of one read", "1回目の返答で3つを並べて読み、そのあと1つずつ読む返答が2回"));
      },
    },
    {
      id: "open-items",
      title: say("No reminder while no item is open: no list, an empty list, or every item completed", "開いている項目がなければリマインダーは来ない（リストなし、空のリスト、すべて completed）"),
      hints: [
        say("A plan whose every step is done needs no reminder. Neither does no plan at all.", "すべての手順が終わった計画に、リマインダーは要りません。計画がないときも同じです。"),
        say("In countReply, count only while some item is not completed (openItems()); otherwise start again at 0, and drop a reminder that was due.", "countReply では、completed でない項目（openItems()）があるときだけ数えます。なければ 0 に戻し、予約されたリマインダーも取り消します。"),
        say("if (listUpdated || openItems().length === 0) { repliesSinceUpdate = 0; reminderDue = false; return; }", "if (listUpdated || openItems().length === 0) { repliesSinceUpdate = 0; reminderDue = false; return; }"),
      ],
      async check(t) {
        const reads = (n: number) => Array.from({ length: n }, () => reply.tools([readNotes()]));
        const session = await played(t, [
          ...reads(4),
          reply.tools([todoWrite({ todos: [] })]),
          ...reads(4),
          reply.tools([todoWrite(plan("completed", "completed", "completed"))]),
          ...reads(4),
          reply.text("done"),
        ]);
        mustRemindIn(t, session.requests, [], say("no list, then an empty list, then a list with every item completed, four replies each", "リストなし、空のリスト、すべて completed のリストで、それぞれ返答4回"));
      },
    },
    {
      id: "inside-a-result",
      title: say(
        "The reminder rides inside one tool result, the last of the reply (with parallel calls too, and an error stays an error); every request is one the API accepts",
        "リマインダーは返答の最後のツール結果1つの中に入る（並列の呼び出しでも同じ。エラーの結果はエラーのまま）。どのリクエストも API が受け付ける形になる",
      ),
      hints: [
        say(
          "The API refuses a request where a tool_use is not answered by the very next message. What happens if the reminder is a message of its own, or a text block in front of the results?",
          "API は、tool_use の直後のメッセージがその結果になっていないリクエストを拒否します。リマインダーを独立したメッセージにしたり、結果の前にテキストのブロックとして置いたりしたら、どうなるでしょう。",
        ),
        say(
          "Change only the content of the last result: add the reminder's text after what the tool returned, and keep its tool_use_id and is_error. Return the results in the same order.",
          "変えるのは最後の結果の content だけです。ツールが返したテキストのあとにリマインダーの文を足し、tool_use_id と is_error はそのままにします。結果は同じ順番で返します。",
        ),
        say(
          "const last = results.at(-1); if (!reminderDue || !last) return results; reminderDue = false; return [...results.slice(0, -1), { ...last, content: `${last.content}\\n\\n${reminder()}` }];",
          "const last = results.at(-1); if (!reminderDue || !last) return results; reminderDue = false; return [...results.slice(0, -1), { ...last, content: `${last.content}\\n\\n${reminder()}` }];",
        ),
      ],
      async check(t) {
        const parallel = await played(t, [
          reply.tools([todoWrite(plan("in_progress", "pending"))]),
          reply.tools([readNotes()]),
          reply.tools([readNotes()]),
          reply.tools([readNotes("toolu_a"), readNotes("toolu_b"), readNotes("toolu_c")]),
          reply.text("done"),
        ]);
        mustRemindIn(t, parallel.requests, ["toolu_c"], say("three calls side by side in the third reply", "3回目の返答で3つを並べて呼んだとき"));
        const results = toolResults(parallel.requests, 4);
        if (results.slice(0, 2).some((result) => resultText(result) !== NOTES)) {
          t.fail(say(`the results before the last one changed: ${quote(results.slice(0, 2).map(resultText))}`, `最後より前の結果が変わっていました: ${quote(results.slice(0, 2).map(resultText))}`));
        }
        if (!resultText(results[2] ?? ({} as ToolResultBlockParam)).includes(NOTES.trim())) t.fail(say("the last result lost what the tool returned", "最後の結果から、ツールが返した内容が消えていました"));
        const failing = await played(t, [
          reply.tools([todoWrite(plan("in_progress", "pending"))]),
          reply.tools([readNotes()]),
          reply.tools([readNotes()]),
          reply.tools([{ id: "toolu_missing", name: "read_file", input: { path: "missing.txt" } }]),
          reply.text("done"),
        ]);
        mustRemindIn(t, failing.requests, ["toolu_missing"], say("an error result at the third reply", "3回目の返答の結果がエラーのとき"));
        const [error] = toolResults(failing.requests, 4);
        if (error?.is_error !== true || !resultText(error).includes("missing.txt")) {
          t.fail(say(`the error result with the reminder is no longer the error: ${quote(error)}`, `リマインダーを入れたエラーの結果が、元のエラーではなくなっていました: ${quote(error)}`));
        }
      },
    },
    {
      id: "turn-ends",
      title: say(
        "A reply that ends the turn counts too; a reminder due then waits for the next tool result and is never added to the person's prompt",
        "ターンを終える返答も数に入る。そのとき予約されたリマインダーは次のツール結果まで待ち、人のプロンプトに足されることはない",
      ),
      hints: [
        say("When the third reply ends the turn, there is no tool result to carry the reminder. Where can it go without breaking a request?", "3回目の返答がターンを終えるなら、リマインダーを運ぶツール結果がありません。リクエストを壊さずに、どこに入れられるでしょう。"),
        say("endTurn sees every reply that ends a turn: count it there too (it runs no todo_write). Keep the reminder due until withReminder has a result to put it in.", "endTurn はターンを終える返答をすべて見ます。そこでも数えます（todo_write は動いていません）。withReminder が入れる結果を持つまで、リマインダーは予約したままにします。"),
        say("In endTurn: countReply(false); and in withReminder do not clear reminderDue unless you put the reminder into a result.", "endTurn で countReply(false); を呼びます。withReminder では、結果にリマインダーを入れたときだけ reminderDue を戻します。"),
      ],
      async check(t) {
        const session = await played(t, [
          reply.tools([todoWrite(plan("in_progress", "pending"))]),
          reply.tools([readNotes()]),
          reply.tools([readNotes()]),
          reply.text("I'll stop here for now."),
          reply.tools([readNotes("toolu_next_turn")]),
          reply.text("done"),
        ]);
        mustRemindIn(t, session.requests, ["toolu_next_turn"], say("a third reply that ends the turn, then a read in the next turn", "3回目の返答がターンを終え、次のターンでファイルを読んだとき"));
        // The reply that ended the turn was the second: the next turn's first read is the third.
        const early = await played(t, [
          reply.tools([todoWrite(plan("in_progress", "pending"))]),
          reply.tools([readNotes()]),
          reply.text("Pausing here."),
          reply.tools([readNotes("toolu_third_after_pause")]),
          reply.tools([readNotes()]),
          reply.text("done"),
        ]);
        mustRemindIn(t, early.requests, ["toolu_third_after_pause"], say("a second reply that ends the turn, then reads in the next turn", "2回目の返答がターンを終え、次のターンでファイルを読んだとき"));
      },
    },
    {
      id: "demo",
      title: say(
        "Plays the stage's recorded demo: one reminder, in the result of the fourth reply (writing the test); slugify is added and its test passes",
        "ステージの記録済みデモを再生できる（リマインダーは4回目の返答、テストを書いた結果に1回だけ。slugify が追加され、テストが通る）",
      ),
      hints: [
        say("Run your copy: npx tsx workshop/s09.ts, and watch for the line that says a reminder was added.", "コピーを動かして、リマインダーを足したという行を探します: npx tsx workshop/s09.ts"),
        say("After the plan, the model reads, edits and writes without touching its list: the third of those replies (writing strings.test.js) must carry the reminder, and then the model updates its list.", "計画のあと、モデルはリストに触れずに読み、編集し、書きます。その3回目の返答（strings.test.js を書く）の結果にリマインダーが入り、モデルはリストを更新します。"),
        say("If the checks above pass and this one fails, compare the message with the demo's description in fixtures/s09/demo.json.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを fixtures/s09/demo.json のデモの説明と比べてみてください。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        mustBeValid(t, session, loadScenario("s09").prompts);
        mustRemindIn(t, session.requests, ["toolu_s09_demo_04"], say("the demo", "デモ"));
        if (!(t.read("strings.js") ?? "").includes("slugify")) t.fail(say("strings.js has no slugify after the demo", "デモのあと、strings.js に slugify がありません"));
        const ran = toolResults(session.requests, 6)[0];
        if (!ran || !resultText(ran).includes("3 checks passed")) t.fail(say(`the test did not pass: ${quote(ran && resultText(ran))}`, `テストが通りませんでした: ${quote(ran && resultText(ran))}`));
      },
    },
  ],
});
