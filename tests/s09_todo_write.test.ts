// s09: a todo list the model keeps, and a reminder when it forgets. Each rule is a test in its
// own workspace. todo_write takes the whole list, refuses a list that breaks a rule (naming
// the rule, keeping the old list), shows the person a checklist and the model one line. The
// reminder comes at the third reply in a row without a new list while items are open, and
// always inside a tool result: every request the model receives is checked for the API's
// rule that each tool_use is answered, in order, by the very next message.
import { readFileSync, writeFileSync } from "node:fs";
import { PassThrough } from "node:stream";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { MessageCreateParams, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { reply, resultText, runTurns, scenarioOf, stageFile, toolResults, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s09");
type Stage = {
  term: typeof import("../lib/runtime/terminal.ts");
  registry: { getTool(name: string): { kind: string } | undefined };
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  agentLoop(messages: MessageParam[]): Promise<void>;
  prepareReplay(): void;
  todoList(): readonly { id: string; content: string; status: string }[];
  TOOLS: { name: string }[];
};

// The stage as the tests run: no APPROVAL_MODE, so "default" (todo_write and reads never ask).
const stage = { ...(await import(FILE)), term: await import("../lib/runtime/terminal.ts") } as Stage;

/** The stage loaded afresh with another approval mode (read at load), with the terminal module it uses. */
async function stageIn(mode: string): Promise<Stage> {
  vi.stubEnv("APPROVAL_MODE", mode);
  vi.resetModules();
  try {
    return { ...(await import(FILE)), term: await import("../lib/runtime/terminal.ts") } as Stage;
  } finally {
    vi.unstubAllEnvs();
  }
}

// ---------------------------------------------------------------------------------------
// Lists, calls and what the requests must look like

type Status = "pending" | "in_progress" | "completed";
const STEPS = ["Add slugify to strings.js", "Test it", "Run the test"];
/** The whole list: one status per step of STEPS, ids "1", "2", ... */
const plan = (...statuses: Status[]) => ({ todos: statuses.map((status, i) => ({ id: String(i + 1), content: STEPS[i] ?? `Step ${i + 1}`, status })) });
const items = (count: number, status: Status = "pending") => ({
  todos: Array.from({ length: count }, (_, i) => ({ id: `t${i + 1}`, content: `Step ${i + 1}`, status })),
});

let ids = 0;
const call = (name: string, input: Record<string, unknown>): ToolUseBlock => ({ type: "tool_use", id: `toolu_s09_${++ids}`, name, input }) as ToolUseBlock;
const todoWrite = (input: Record<string, unknown>) => ({ name: "todo_write", input });
const readNotes = () => ({ name: "read_file", input: { path: "notes.txt" } });

const REMINDER = "<reminder>";
const reminders = (text: string) => text.split(REMINDER).length - 1;

type Block = { type: string; id?: string; tool_use_id?: string; text?: string; content?: unknown };
const blocksOf = (message: MessageParam): Block[] => (typeof message.content === "string" ? [] : (message.content as Block[]));

/**
 * What the API would refuse in a request's messages, in words: roles that do not alternate,
 * a tool_use not answered by the very next message (each id, in order), a tool_result that
 * answers nothing before it, or another block placed before the results.
 */
function apiProblems(messages: MessageParam[]): string[] {
  const problems: string[] = [];
  messages.forEach((message, i) => {
    const role = i % 2 === 0 ? "user" : "assistant";
    if (message.role !== role) problems.push(`message ${i} is from ${message.role}: roles must alternate, starting with the user`);
    const asked = i > 0 ? blocksOf(messages[i - 1]).filter((b) => b.type === "tool_use").map((b) => b.id) : [];
    const blocks = blocksOf(message);
    const answered = blocks.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id);
    if (asked.join(",") !== answered.join(",")) problems.push(`message ${i} answers [${answered.join(", ")}], the calls before it were [${asked.join(", ")}]`);
    const firstOther = blocks.findIndex((b) => b.type !== "tool_result");
    if (answered.length > 0 && firstOther !== -1 && firstOther < answered.length) problems.push(`message ${i}: a ${blocks[firstOther].type} block comes before its tool results`);
  });
  return problems;
}

/** Where the reminders are in a request's messages: the id of each tool_result holding one; anywhere else is a problem. */
function reminderPlaces(messages: MessageParam[]): { inResults: string[]; elsewhere: string[] } {
  const inResults: string[] = [];
  const elsewhere: string[] = [];
  messages.forEach((message, i) => {
    if (typeof message.content === "string") {
      if (message.content.includes(REMINDER)) elsewhere.push(`message ${i} (text)`);
      return;
    }
    for (const block of blocksOf(message)) {
      if (block.type === "tool_result") {
        const count = reminders(resultText(block as ToolResultBlockParam));
        for (let n = 0; n < count; n++) inResults.push(block.tool_use_id!);
      } else if (JSON.stringify(block).includes(REMINDER)) elsewhere.push(`message ${i} (${block.type})`);
    }
  });
  return { inResults, elsewhere };
}

/** Every request the model received is one the API accepts, and every reminder rides inside a tool result. */
function expectEveryRequestValid(requests: MessageCreateParams[]): void {
  for (const [n, request] of requests.entries()) {
    expect(apiProblems(request.messages), `request ${n}`).toEqual([]);
    expect(reminderPlaces(request.messages).elsewhere, `request ${n}`).toEqual([]);
  }
}

/** The ids of the tool results that carry a reminder, over the whole session (its last request holds it all). */
const remindedIds = (requests: MessageCreateParams[]) => reminderPlaces(requests.at(-1)!.messages).inResults;

describe("the request check itself", () => {
  const use = { type: "tool_use", id: "toolu_1", name: "bash", input: {} };
  const result = { type: "tool_result", tool_use_id: "toolu_1", content: "ok" };
  const nudge = { type: "text", text: `${REMINDER}update your todos</reminder>` };
  const before = [{ role: "user", content: "go" }, { role: "assistant", content: [use] }] as MessageParam[];

  it("passes a reminder inside the result, and catches the ways a reminder has broken requests", () => {
    expect(apiProblems([...before, { role: "user", content: [{ ...result, content: `ok\n\n${nudge.text}` }] }] as MessageParam[])).toEqual([]);
    // The reminder as a block before the results, as its own message, or in place of the result.
    expect(apiProblems([...before, { role: "user", content: [nudge, result] }] as MessageParam[])).toEqual(["message 2: a text block comes before its tool results"]);
    expect(apiProblems([...before, { role: "user", content: [nudge] }, { role: "user", content: [result] }] as MessageParam[])).toEqual([
      "message 2 answers [], the calls before it were [toolu_1]",
      "message 3 is from user: roles must alternate, starting with the user",
      "message 3 answers [toolu_1], the calls before it were []",
    ]);
    expect(reminderPlaces([...before, { role: "user", content: [result, nudge] }] as MessageParam[]).elsewhere).toEqual(["message 2 (text)"]);
  });
});

// ---------------------------------------------------------------------------------------

describe("s09 todo_write: the whole list, each time", () => {
  useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();
  beforeEach(() => stage.prepareReplay());

  it("is a registered tool the model sees, next to the core tools", () => {
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file", "todo_write"]);
  });

  it("the person sees the list as a checklist; the model gets one short line", async () => {
    const result = await stage.runTool(call("todo_write", plan("completed", "in_progress", "pending")));
    expect(result.is_error).toBeUndefined();
    expect(resultText(result)).toBe("Todo list saved: 3 items: 1 completed, 1 in_progress, 1 pending.");
    expect(printed.join("\n")).toContain("> TodoWrite 3 items: 1 completed, 1 in_progress, 1 pending\n  [x] Add slugify to strings.js\n  [>] Test it\n  [ ] Run the test");
  });

  it("a new list replaces the old one whole", async () => {
    await stage.runTool(call("todo_write", plan("in_progress", "pending", "pending")));
    printed.length = 0;
    const result = await stage.runTool(call("todo_write", { todos: [{ id: "a", content: "Only this now", status: "pending" }] }));
    expect(resultText(result)).toBe("Todo list saved: 1 item: 0 completed, 0 in_progress, 1 pending.");
    expect(printed.slice(1)).toEqual(["  [ ] Only this now"]);
    expect(stage.todoList()).toEqual([{ id: "a", content: "Only this now", status: "pending" }]);
  });

  it.each([
    ["at most 20 items", items(21), "the list has 21"],
    ["ids unique", { todos: [...plan("pending", "pending").todos, { id: "2", content: "Again", status: "pending" }] }, 'the id "2" is used more than once'],
    ["content not empty", { todos: [{ id: "1", content: "Fine", status: "pending" }, { id: "2", content: " \n\t", status: "pending" }] }, 'item "2" has no content'],
    ["at most one item in_progress", plan("in_progress", "in_progress", "pending"), '2 items are in_progress ("1", "2")'],
  ])('refuses a list that breaks "%s", naming the rule, and keeps the old list', async (rule, input, how) => {
    await stage.runTool(call("todo_write", plan("completed", "in_progress", "pending")));
    const result = await stage.runTool(call("todo_write", input));
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toBe(
      `Error: the list was refused: it breaks the rule "${rule}" (${how}). The list is unchanged:\n` +
        "[x] 1: Add slugify to strings.js\n[>] 2: Test it\n[ ] 3: Run the test",
    );
    expect(stage.todoList()).toEqual(plan("completed", "in_progress", "pending").todos);
  });

  it("names every rule a list breaks, and keeps the old list", async () => {
    await stage.runTool(call("todo_write", plan("pending")));
    const broken = { todos: [...items(19, "in_progress").todos, { id: "t1", content: "", status: "pending" }] };
    const text = resultText(await stage.runTool(call("todo_write", broken)));
    expect(text).toMatch(/^Error: the list was refused: it breaks the rule "ids unique" \(the id "t1" is used more than once\) and the rule "content not empty" \(item "t1" has no content\) and the rule "at most one item in_progress" \(19 items are in_progress/);
    expect(text).toMatch(/The list is unchanged:\n\[ \] 1: Add slugify to strings\.js$/);
  });

  it("refuses a list over the limit by its length alone, before any rule looks at its items", async () => {
    await stage.runTool(call("todo_write", plan("pending")));
    const broken = { todos: [...items(21, "in_progress").todos, { id: "t1", content: "", status: "pending" }] };
    expect(resultText(await stage.runTool(call("todo_write", broken)))).toBe(
      'Error: the list was refused: it breaks the rule "at most 20 items" (the list has 22). The list is unchanged:\n[ ] 1: Add slugify to strings.js',
    );
  });

  it("refuses a list of 100,000 items at once, with the limit; a duplicate id is still named (the check is linear)", async () => {
    await stage.runTool(call("todo_write", plan("pending")));
    const huge = items(100_000);
    const begun = performance.now();
    const result = await stage.runTool(call("todo_write", huge));
    expect(performance.now() - begun).toBeLessThan(1000); // was 17 s: each id looked for in the whole list
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toMatch(/^Error: the list was refused: it breaks the rule "at most 20 items" \(the list has 100000\)\. The list is unchanged:\n\[ \] 1: Add slugify/);
    const twice = { todos: [...items(19).todos, { id: "t19", content: "Again", status: "pending" }] };
    expect(resultText(await stage.runTool(call("todo_write", twice)))).toMatch(/^Error: the list was refused: it breaks the rule "ids unique" \(the id "t19" is used more than once\)\./);
    expect(stage.todoList()).toEqual(plan("pending").todos);
  });

  it("takes exactly 20 items", async () => {
    const result = await stage.runTool(call("todo_write", items(20)));
    expect(resultText(result)).toBe("Todo list saved: 20 items: 0 completed, 0 in_progress, 20 pending.");
  });

  it.each([
    [{ todos: [{ id: "1", content: "x", status: "done" }] }, '"todos.0.status" must be one of pending, in_progress, completed'],
    [{ todos: "1. write tests" }, '"todos" must be an array'],
    [{}, '"todos" is required'],
    [{ todos: [{ id: 1, content: "x", status: "pending" }] }, '"todos.0.id" must be a string'],
    [{ todos: [{ id: "1", content: "x", status: "pending", priority: "high" }] }, '"priority" is not a parameter of this tool'],
  ])("a list of the wrong shape %j is stopped by validation: %s, and the old list stays", async (input, message) => {
    await stage.runTool(call("todo_write", plan("in_progress")));
    const result = await stage.runTool(call("todo_write", input));
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toBe(`Error: todo_write was not run: ${message}.`);
    expect(stage.todoList()).toEqual(plan("in_progress").todos);
    const kept = await stage.runTool(call("todo_write", plan("in_progress", "in_progress")));
    expect(resultText(kept)).toMatch(/The list is unchanged:\n\[>\] 1: Add slugify to strings\.js$/);
  });

  it("an empty list clears it", async () => {
    await stage.runTool(call("todo_write", plan("in_progress", "pending")));
    printed.length = 0;
    const result = await stage.runTool(call("todo_write", { todos: [] }));
    expect(resultText(result)).toBe("Todo list cleared.");
    expect(stage.todoList()).toEqual([]);
    expect(printed).toEqual(["> TodoWrite an empty list", "  (the todo list is empty)"]);
  });

  it("shows an item written over several lines on one line of the checklist", async () => {
    await stage.runTool(call("todo_write", { todos: [{ id: "1", content: "Fix the parser\n  and its tests", status: "pending" }] }));
    expect(printed).toContain("  [ ] Fix the parser and its tests");
  });

  it("of two lists in one reply, the later one is the list (they run in call order)", async () => {
    const session = replay(
      scenarioOf([reply.tools([todoWrite(plan("in_progress")), todoWrite(plan("completed", "in_progress"))]), reply.tools([todoWrite(plan("in_progress", "in_progress"))]), reply.text("ok")]),
    );
    await stage.agentLoop([{ role: "user", content: "plan" }]);
    expect(resultText(toolResults(session, 2)[0])).toMatch(/The list is unchanged:\n\[x\] 1: Add slugify to strings\.js\n\[>\] 2: Test it$/);
  });

  it("never asks the person, in default mode with no one at the terminal", async () => {
    stage.term.useTerminal(stage.term.nobody);
    const result = await stage.runTool(call("todo_write", plan("in_progress")));
    expect(resultText(result)).toMatch(/^Todo list saved/);
  });

  it("plan mode allows it: planning is what plan mode is for", async () => {
    const planning = await stageIn("plan");
    expect(planning.registry.getTool("todo_write")?.kind).toBe("read");
    expect(resultText(await planning.runTool(call("todo_write", plan("in_progress", "pending"))))).toMatch(/^Todo list saved/);
    expect(resultText(await planning.runTool(call("write_file", { path: "x.txt", content: "x" })))).toMatch(/^Not run: the agent is in plan mode/);
  });
});

describe("s09 the reminder", () => {
  useWorkspace();
  const replay = useReplay();
  const printed = usePrinted();
  beforeEach(() => {
    stage.prepareReplay();
    writeFileSync("notes.txt", "the notes\n");
  });

  /** Play `replies` through the real loop, a turn per reply that ends one; the requests the model received. */
  async function play(replies: ReturnType<typeof reply.text>[]) {
    const scenario = scenarioOf(replies);
    const session = replay(scenario);
    const messages = await runTurns(stage.agentLoop, scenario.prompts);
    expect(session.verdict()).toEqual([]);
    expectEveryRequestValid(session.requests);
    return { session, requests: session.requests, messages };
  }

  it("comes exactly at the third reply without a new list, not before; then the count starts again", async () => {
    const calls = Array.from({ length: 7 }, (_, i) => ({ ...readNotes(), id: `toolu_read_${i + 1}` }));
    const { session, requests } = await play([reply.tools([todoWrite(plan("in_progress", "pending"))]), ...calls.map((c) => reply.tools([c])), reply.text("done")]);
    // Replies 2, 3 and 4 are the first three without a new list: the third's result carries it.
    expect(remindedIds(requests)).toEqual(["toolu_read_3", "toolu_read_6"]);
    const third = toolResults(session, 4)[0];
    expect(resultText(third)).toBe(
      "the notes\n\n<reminder>From the harness, not the tool: your todo list has not changed in your last 3 replies, and 2 of its 2 items are open " +
        '("Add slugify to strings.js" is in_progress). If you have finished or started an item, send the whole list again with todo_write; if not, carry on.</reminder>',
    );
    expect(printed.filter((line) => line.includes("[reminder for the model"))).toHaveLength(2);
  });

  it("never comes while no item is open: no list, an empty list, or every item completed", async () => {
    const reads = (n: number) => Array.from({ length: n }, () => reply.tools([readNotes()]));
    const { requests } = await play([
      ...reads(4),
      reply.tools([todoWrite({ todos: [] })]),
      ...reads(4),
      reply.tools([todoWrite(plan("completed", "completed", "completed"))]),
      ...reads(4),
      reply.text("done"),
    ]);
    expect(remindedIds(requests)).toEqual([]);
  });

  it("does not come while the model keeps its list current", async () => {
    const { requests } = await play([
      reply.tools([todoWrite(plan("in_progress", "pending", "pending"))]),
      reply.tools([readNotes()]),
      reply.tools([readNotes()]),
      reply.tools([readNotes(), todoWrite(plan("completed", "in_progress", "pending"))]), // the third reply: a new list with it
      reply.tools([readNotes()]),
      reply.tools([readNotes()]),
      reply.text("done"),
    ]);
    expect(remindedIds(requests)).toEqual([]);
  });

  it("with parallel calls, rides in exactly one result, the last, and leaves the others as they were", async () => {
    writeFileSync("a.txt", "A");
    writeFileSync("b.txt", "B");
    const parallel = [
      { id: "toolu_a", name: "read_file", input: { path: "a.txt" } },
      { id: "toolu_b", name: "read_file", input: { path: "b.txt" } },
      { id: "toolu_c", name: "read_file", input: { path: "notes.txt" } },
    ];
    const { session, requests } = await play([
      reply.tools([todoWrite(plan("in_progress", "pending"))]),
      reply.tools([readNotes()]),
      reply.tools([readNotes()]),
      reply.tools(parallel),
      reply.text("done"),
    ]);
    const results = toolResults(session, 4);
    expect(results.map((result) => result.tool_use_id)).toEqual(["toolu_a", "toolu_b", "toolu_c"]);
    expect(results.map(resultText).slice(0, 2)).toEqual(["A", "B"]);
    expect(resultText(results[2])).toMatch(/^the notes\n\n<reminder>/);
    expect(remindedIds(requests)).toEqual(["toolu_c"]);
  });

  it("with an error result, rides inside it and the result stays an error", async () => {
    const { session, requests } = await play([
      reply.tools([todoWrite(plan("in_progress", "pending"))]),
      reply.tools([readNotes()]),
      reply.tools([readNotes()]),
      reply.tools([{ id: "toolu_missing", name: "read_file", input: { path: "missing.txt" } }]),
      reply.text("done"),
    ]);
    const [result] = toolResults(session, 4);
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toMatch(/^Error: missing\.txt does not exist\n\n<reminder>[^]*<\/reminder>$/);
    expect(remindedIds(requests)).toEqual(["toolu_missing"]);
  });

  it("a refused list is not a new list: the count goes on, and the reminder rides on the refusal", async () => {
    const { session, requests } = await play([
      reply.tools([todoWrite(plan("in_progress", "pending"))]),
      reply.tools([readNotes()]),
      reply.tools([readNotes()]),
      reply.tools([{ id: "toolu_refused", ...todoWrite(plan("in_progress", "in_progress")) }]),
      reply.text("done"),
    ]);
    const [result] = toolResults(session, 4);
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toMatch(/^Error: the list was refused[^]*\n\n<reminder>/);
    expect(remindedIds(requests)).toEqual(["toolu_refused"]);
  });

  it("a turn that ends counts as a reply; the count goes on into the next turn", async () => {
    const { requests } = await play([
      reply.tools([todoWrite(plan("in_progress", "pending"))]),
      reply.text("Started; tell me when to go on."), // 1
      reply.tools([readNotes()]), // 2, in the next turn
      reply.tools([{ id: "toolu_turn2", ...readNotes() }]), // 3
      reply.text("done"),
    ]);
    expect(remindedIds(requests)).toEqual(["toolu_turn2"]);
  });

  it("due when a turn ends, it waits for the next tool result, and is never added to the person's prompt", async () => {
    const { requests, messages } = await play([
      reply.tools([todoWrite(plan("in_progress", "pending"))]),
      reply.tools([readNotes()]), // 1
      reply.tools([readNotes()]), // 2
      reply.text("I'll stop here for now."), // 3: due, and no result to ride in
      reply.tools([{ id: "toolu_next", ...readNotes() }]),
      reply.text("done"),
    ]);
    // Nothing was sent during the first turn, and the second turn's prompt is as typed.
    expect(requests.slice(0, 4).map((request) => reminderPlaces(request.messages).inResults)).toEqual([[], [], [], []]);
    expect(messages[8]).toEqual({ role: "user", content: "prompt 2" });
    expect(remindedIds(requests)).toEqual(["toolu_next"]);
  });

  it("due when a turn ends, it is dropped if the model's next reply brings the list up to date", async () => {
    const { requests } = await play([
      reply.tools([todoWrite(plan("in_progress", "pending"))]),
      reply.tools([readNotes()]),
      reply.tools([readNotes()]),
      reply.text("Pausing."),
      reply.tools([todoWrite(plan("completed", "in_progress"))]),
      reply.tools([readNotes()]),
      reply.text("done"),
    ]);
    expect(remindedIds(requests)).toEqual([]);
  });

  it("the list survives from one turn to the next of the same session", async () => {
    const { session } = await play([
      reply.tools([todoWrite(plan("completed", "in_progress", "pending"))]),
      reply.text("First step done."),
      reply.tools([todoWrite(plan("in_progress", "in_progress", "pending"))]),
      reply.text("ok"),
    ]);
    expect(resultText(toolResults(session, 3)[0])).toMatch(/The list is unchanged:\n\[x\] 1: Add slugify to strings\.js\n\[>\] 2: Test it\n\[ \] 3: Run the test$/);
  });

  it("a replay starts a new session, with no list and no count", async () => {
    await play([reply.tools([todoWrite(plan("in_progress", "pending"))]), reply.tools([readNotes()]), reply.tools([readNotes()]), reply.text("paused")]);
    stage.prepareReplay();
    const { requests } = await play([reply.tools([readNotes()]), reply.tools([readNotes()]), reply.tools([readNotes()]), reply.text("done")]);
    expect(remindedIds(requests)).toEqual([]);
  });
});

describe("s09's demo", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();

  it("plans three steps, works through them with one reminder, and checks every item off; every request is valid", async () => {
    const scenario = loadScenario("s09");
    const output = new PassThrough();
    const session = await replayScenario(stage, scenario, { workspace: workspace.dir, output });
    expectWholeSession("s09", session, scenario);
    expectEveryRequestValid(session.requests);
    // One reminder, in the result of the write that came third after the plan.
    expect(remindedIds(session.requests)).toEqual(["toolu_s09_demo_04"]);
    expect(readFileSync("strings.js", "utf8")).toContain("export function slugify(text)");
    const ran = session.messages.flatMap(blocksOf).find((b) => b.type === "tool_result" && b.tool_use_id === "toolu_s09_demo_06") as ToolResultBlockParam;
    expect(resultText(ran)).toBe("strings.test.js: 3 checks passed\n");
    expect(printed.join("\n")).toContain("> TodoWrite all 3 items completed\n  [x] Add slugify(text) to strings.js\n  [x] Test it in strings.test.js\n  [x] Run the test");
  });
});
