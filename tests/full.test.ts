// The capstone, agents/s_full.ts: every mechanism of s01 to s14 in one agent. Its demo is
// replayed once, through the real loop and tools, and each mechanism is checked where the
// demo shows it (a large result kept in a file, a todo reminder inside a tool result, a
// subagent whose history stays out of the parent, a skill loaded, memory saved, old results
// cleared, three cache breakpoints on every request). What the demo does not show gets a
// small scenario of its own: compaction keeping every tool_use with its result, the next
// session reading the memory, tools discovered from a command, Part I's tools (glob, ls,
// web_fetch, ask_user) as registry entries, each turn's tokens and /cost, and the parent's
// reply streamed from a provider that can hold it half way (Ctrl-C included).
// (The shared tests find stages by their sNN_ names, so the header and the no-key run are
// checked here too.)
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { http } from "msw/core/http";
import { setupServer } from "msw/node";
import type { Message, MessageCreateParams, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { CAPSTONE } from "../.vitepress/curriculum.ts";
import { regionsOf } from "../.vitepress/source.ts";
import { cacheShare, promptCache } from "../lib/course/cache.ts";
import { apiProblem, eventStream, replayHandlers } from "../lib/course/replay.ts";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario, type ReplayedSession } from "../lib/course/session.ts";
import { eventsOf, splitAt, startStreamProvider, type StreamProvider } from "../lib/course/stream-provider.ts";
import { AGENTS_DIR } from "../lib/course/stages.ts";
import { reply, REPO_ROOT, resultText, runMain, runTurns, scenarioOf, stageFile, stageFiles, stageId, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

// FULL_FILE: a changed copy of the capstone (agents/.full-*.ts), to see a test fail when a mechanism is broken.
const FILE = process.env.FULL_FILE ?? path.join(AGENTS_DIR, CAPSTONE.file);
const TRANSCRIPTS = ".agent/transcripts";
type Tool = { name: string; kind: string; execute(params: Record<string, unknown>, signal: AbortSignal): Promise<{ llmContent: unknown }> };
type Full = {
  agentLoop(messages: MessageParam[]): Promise<void>;
  prepareReplay(scenario: object): Promise<void>;
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  registry: { getTool(name: string): Tool | undefined; getAllTools(): Tool[] };
  TOOLS: { name: string }[];
  main: unknown;
  sessionTally(): { requests: number; input: number; output: number; cacheRead: number; cacheWrite: number };
};
const full = (await import(FILE)) as Full;
// The last stage the capstone takes in so far: its header says "every piece of s02 to sNN".
const LAST = /every piece of s02 to s(\d\d)/.exec(readFileSync(FILE, "utf8"))?.[1] ?? "??";

const workspaces: string[] = [];

/** What the person allowed this workspace to start, in their own settings (HOME is a temporary folder: tests/setup.ts). */
function allowInPersonalSettings(project: object): void {
  const file = path.join(os.homedir(), ".agent", "settings.json");
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ trustedProjects: { [process.cwd()]: project } }));
}
afterAll(() => workspaces.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

type Block = { type: string; id?: string; tool_use_id?: string; text?: string; content?: unknown; name?: string };
const blocksOf = (message: MessageParam): Block[] => (typeof message.content === "string" ? [] : (message.content as Block[]));
/** The text of a system prompt or a message as sent: a string, or text blocks (s14's breakpoints make blocks of the system prompt and the newest message). */
const textOf = (content: MessageCreateParams["system"] | MessageParam["content"]) =>
  typeof content === "string" ? content : (content ?? []).map((block) => ("text" in block ? block.text : "")).join("");
const resultIn = (request: MessageCreateParams, id: string) =>
  request.messages.flatMap(blocksOf).find((block) => block.type === "tool_result" && block.tool_use_id === id) as ToolResultBlockParam | undefined;

/** The API's rule, checked on a request: each tool_use is answered by the very next message, and no result is without its call. */
function pairProblems(request: MessageCreateParams): string[] {
  const problems: string[] = [];
  request.messages.forEach((message, i) => {
    const calls = blocksOf(message).filter((b) => b.type === "tool_use").map((b) => b.id);
    const next = request.messages[i + 1];
    const answered = next ? blocksOf(next).filter((b) => b.type === "tool_result").map((b) => b.tool_use_id) : [];
    for (const id of calls) if (!answered.includes(id)) problems.push(`tool_use ${id} is not answered by the next message`);
    const results = blocksOf(message).filter((b) => b.type === "tool_result").map((b) => b.tool_use_id);
    const before = i > 0 ? blocksOf(request.messages[i - 1]).filter((b) => b.type === "tool_use").map((b) => b.id) : [];
    for (const id of results) if (!before.includes(id)) problems.push(`tool_result ${id} has no tool_use just before it`);
  });
  return problems;
}

/** Where a request's breakpoints are (s14): "tool <name>", "system <i>", "messages.<i>.<j>"; a marked message is "message <i>". */
function breakpointsOf(request: MessageCreateParams): string[] {
  const marked = (item: object) => (item as { cache_control?: unknown }).cache_control != null;
  return [
    ...(request.tools ?? []).flatMap((tool) => (marked(tool) ? [`tool ${(tool as { name: string }).name}`] : [])),
    ...(Array.isArray(request.system) ? request.system : []).flatMap((block, i) => (marked(block) ? [`system ${i}`] : [])),
    ...request.messages.flatMap((message, i) => [...(marked(message) ? [`message ${i}`] : []), ...blocksOf(message).flatMap((block, j) => (marked(block) ? [`messages.${i}.${j}`] : []))]),
  ];
}
/** The three breakpoints s14 places: the last tool, the system prompt, the newest message's last block. */
const threeBreakpoints = (request: MessageCreateParams) => [
  `tool ${(request.tools!.at(-1) as { name: string }).name}`,
  "system 0",
  `messages.${request.messages.length - 1}.${blocksOf(request.messages.at(-1)!).length - 1}`,
];

/** The parent's replies stream to stdout (s13): off the test's screen, for a describe whose turns are not watched there. */
function quietStdout(): void {
  beforeEach(() => void vi.spyOn(process.stdout, "write").mockImplementation(() => true));
  afterEach(() => vi.restoreAllMocks());
}

describe("the capstone's file", () => {
  const text = readFileSync(FILE, "utf8");

  it("has a header with its name, motto, diagram, where its pieces come from and its run command", () => {
    const header = text.split("*/")[0];
    expect(header).toContain(`${CAPSTONE.file} - ${CAPSTONE.title.en}`);
    expect(text.split("\n")[3]).toBe(` * "${CAPSTONE.motto.en}": the loop of s01, every piece of s02 to s${LAST} around it.`);
    expect(header).toMatch(/\+-{3,}/);
    expect(header).toMatch(/New:/);
    expect(header).toContain(`npx tsx agents/${CAPSTONE.file}`);
  });

  it("runs the same loop as every stage, and exports what a stage exports", () => {
    const loop = regionsOf(readFileSync(stageFiles()[0], "utf8")).get("agent-loop");
    expect(regionsOf(text).get("agent-loop")).toBe(loop);
    expect(typeof full.agentLoop).toBe("function");
    expect(typeof full.runTool).toBe("function");
    expect(typeof full.main).toBe("function");
    expect(full.registry.getAllTools().map((t) => t.name).sort()).toEqual(full.TOOLS.map((t) => t.name).sort());
  });

  it("has every tool of every stage it takes in (s01 to its header's last) in its registry", () => {
    // Each stage's tools as its file declares them (a schema in TOOLS, or a defineTool), read
    // from the text: importing twelve stages here would cost seconds.
    const declared = (text: string) => [...text.matchAll(/^\s+name: "([a-z_]+)",$/gm)].map((m) => m[1]);
    const mine = full.TOOLS.map((t) => t.name);
    expect(declared(text).sort()).toEqual([...mine].sort());
    for (const file of stageFiles().filter((file) => Number(stageId(file).slice(1)) <= Number(LAST))) {
      const missing = declared(readFileSync(file, "utf8")).filter((name) => !mine.includes(name));
      expect(missing, `${path.basename(file)}'s tools missing from the capstone`).toEqual([]);
    }
  });

  // The capstone has no parent, so the docs tests' "What changed" check passes it by; its
  // page's table says where each region comes from instead, and this holds the table to it.
  const tableRows = (lang: "en" | "ja") => {
    const page = readFileSync(path.join(REPO_ROOT, "docs", lang === "en" ? "full.md" : "ja/full.md"), "utf8");
    const section = page.split("{#what-changed}")[1]?.split(/^## /m)[0] ?? "";
    return section.split("\n").filter((line) => line.startsWith("| `"));
  };

  it("names every one of its regions in the where-it-comes-from table, in both languages", () => {
    for (const lang of ["en", "ja"] as const) {
      const named = tableRows(lang).map((row) => row.split("|")[1]); // the first column: a row's regions
      const unnamed = [...regionsOf(text).keys()].filter((region) => !named.some((cell) => cell.includes(`\`${region}\``)));
      expect(unnamed, `regions docs/${lang === "en" ? "" : "ja/"}full.md does not name`).toEqual([]);
    }
  });

  it("keeps word for word the regions its table says are the same text as their stage's", () => {
    // Rows whose third column is exactly "the same text" and whose second names one stage.
    const mine = regionsOf(text);
    const rows = tableRows("en").map((row) => row.split("|").map((cell) => cell.trim()));
    const same = rows.filter((cells) => cells[3] === "the same text" && /^\[s\d\d\]\(\.\/s\d\d\)$/.test(cells[2]));
    expect(same.map((cells) => cells[1])).toContain("`glob`, `ls`");
    for (const cells of same) {
      const stage = regionsOf(readFileSync(stageFile(cells[2].slice(1, 4)), "utf8"));
      for (const [, region] of cells[1].matchAll(/`([a-z-]+)`/g)) {
        expect(mine.get(region), `region ${region}, said to be ${cells[2].slice(1, 4)}'s text`).toBe(stage.get(region));
      }
    }
  });
});

describe("the capstone's demo", () => {
  const scenario = loadScenario("full");
  let workspace = "";
  let session: ReplayedSession | undefined;
  const printed: string[] = []; // what the demo printed with console.log (its streamed text is written to stdout: kept off the screen)
  const replayed = async () => {
    if (!session) {
      workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-full-")));
      workspaces.push(workspace);
      const spies = [vi.spyOn(console, "log").mockImplementation((...parts) => void printed.push(parts.join(" "))), vi.spyOn(process.stdout, "write").mockImplementation(() => true)];
      session = await replayScenario(full, scenario, { workspace }).finally(() => spies.forEach((spy) => spy.mockRestore()));
    }
    return session;
  };
  const file = (relative: string) => readFileSync(path.join(workspace, relative), "utf8");
  /** The first request that carries the result of `id`. */
  const requestWith = async (id: string) => (await replayed()).requests.find((r) => resultIn(r, id))!;

  it("replays with no problem, every recorded reply used, every request well paired", async () => {
    const session = await replayed();
    expectWholeSession("full", session, scenario);
    const { requests } = session;
    for (const request of requests) expect(pairProblems(request)).toEqual([]);
    expect(file("src/dates.js")).toContain('text.slice(0, 10).split("-")');
    expect(file("CHANGELOG.md")).toMatch(/## Unreleased\n\n- Fixed: `npm run nightly`/);
  });

  it("keeps a large result whole in a file and sends the model its two ends (s07)", async () => {
    const result = resultIn(await requestWith("toolu_full_demo_02"), "toolu_full_demo_02")!;
    const sent = resultText(result);
    expect(sent.length).toBeLessThan(8_000);
    expect(sent).toContain(".agent/tool-results/toolu_full_demo_02.txt");
    expect(sent).toContain("3 of 2500 records failed");
    const saved = file(".agent/tool-results/toolu_full_demo_02.txt").trimEnd().split("\n");
    expect(saved).toHaveLength(2501);
    expect(saved.filter((line) => line.includes("FAILED"))).toHaveLength(3);
  });

  it("adds the todo reminder inside the third reply's last tool result, not as a message (s09)", async () => {
    const request = await requestWith("toolu_full_demo_04");
    const task = resultText(resultIn(request, "toolu_full_demo_04")!);
    expect(task).toContain("<reminder>");
    const reminders = request.messages.flatMap(blocksOf).filter((b) => JSON.stringify(b).includes("<reminder>"));
    expect(reminders).toHaveLength(1);
    expect(reminders[0].type).toBe("tool_result");
  });

  it("gives the parent the subagent's answer and nothing of its history (s10)", async () => {
    const { requests } = await replayed();
    const child = requests.filter((r) => textOf(r.messages[0].content) !== scenario.prompts[0]);
    expect(child).toHaveLength(3);
    // No task (no recursion), and neither the person's plan nor the person's conversation to act on.
    const given = child[0].tools!.map((t) => (t as { name: string }).name);
    expect(given).toContain("bash");
    for (const name of ["task", "todo_write", "compact"]) expect(given).not.toContain(name);
    const after = await requestWith("toolu_full_demo_04");
    const text = JSON.stringify(after.messages);
    expect(resultText(resultIn(after, "toolu_full_demo_04")!)).toContain("Callers of parseDate");
    expect(text).not.toContain("toolu_full_demo_05");
    expect(text).not.toContain("toolu_full_demo_06");
  });

  it("clears old tool results from what the model sees and keeps every message in a transcript (s11)", async () => {
    const { requests, messages } = await replayed();
    const last = requests.at(-1)!;
    expect(resultText(resultIn(last, "toolu_full_demo_02")!)).toMatch(/^\[Old result cleared to save context: bash/);
    expect(messages.flatMap(blocksOf).some((b) => b.tool_use_id === "toolu_full_demo_02" && String(b.content).includes("records failed"))).toBe(true);
    const transcripts = readdirSync(path.join(workspace, TRANSCRIPTS)).filter((name) => name.endsWith(".jsonl"));
    const texts = transcripts.map((name) => file(`${TRANSCRIPTS}/${name}`));
    const parent = texts.find((text) => text.includes(scenario.prompts[0]))!;
    // Every message of the conversation is in it, as it was before anything was cleared: the last reply too.
    const kept = parent.trimEnd().split("\n").map((line) => JSON.parse(line));
    for (const message of messages) expect(kept).toContainEqual(JSON.parse(JSON.stringify(message)));
    // The subagent's conversation has a transcript of its own, which ends with its answer.
    const child = texts.find((text) => !text.includes(scenario.prompts[0]))!.trimEnd().split("\n").map((line) => JSON.parse(line) as MessageParam);
    expect(child[0]).toEqual({ role: "user", content: expect.stringContaining("parseDate") });
    expect(JSON.stringify(child.at(-1))).toContain("Callers of parseDate:");
  });

  it("lists the skill in the system prompt, loads it on demand, and saves the fact to memory (s12)", async () => {
    const { requests } = await replayed();
    expect(textOf(requests[0].system)).toContain("- changelog: How to add an entry to CHANGELOG.md");
    expect(textOf(requests[0].system)).not.toContain("# Changelog entries");
    expect(resultText(resultIn(await requestWith("toolu_full_demo_11"), "toolu_full_demo_11")!)).toContain("# Changelog entries");
    expect(file(".agent/MEMORY.md")).toContain("- The nightly check is `node nightly.js`");
  });

  it("marks each request, the subagent's too, with three breakpoints on a copy: the history and the transcripts have none (s14)", async () => {
    const { requests, messages } = await replayed();
    for (const [i, request] of requests.entries()) expect(breakpointsOf(request), `request ${i + 1}`).toEqual(threeBreakpoints(request));
    expect(JSON.stringify(messages)).not.toContain("cache_control");
    for (const name of readdirSync(path.join(workspace, TRANSCRIPTS))) expect(file(`${TRANSCRIPTS}/${name}`)).not.toContain("cache_control");
  });

  it("ends its turn with one line of the turn's tokens and cost, the one its page quotes (s14)", async () => {
    await replayed();
    const lines = printed.filter((line) => line.startsWith("[this turn:"));
    expect(lines).toEqual(["[this turn: 0 in, 1,375 out, 34,384 cache read, 9,910 cache write; $0.0420]"]);
    for (const page of ["full.md", "ja/full.md"]) expect(readFileSync(path.join(REPO_ROOT, "docs", page), "utf8"), page).toContain(lines[0]);
  });

  it("its breakpoints let a cache serve 90% of what an ideal one would, and its recorded usage is what that cache gives (s14)", async () => {
    const { requests } = await replayed();
    // The bench's target, held here: micro-compaction (s11) clears an old result at each request
    // from the fifth on, so what follows it is written again; the rest is read back.
    expect(cacheShare(requests).ofIdeal).toBeGreaterThanOrEqual(0.9);
    // The demo's usage was written with lib/course/cache.ts from these requests (as s14's demo):
    // it must still be what that rule gives them, within 10%.
    const cache = promptCache();
    requests.forEach((request, i) => {
      const [recorded, rule] = [scenario.replies[i].usage, cache.send(request)];
      for (const field of ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"] as const) {
        expect(Math.abs((recorded[field] ?? 0) - rule[field]), `fixtures/full/demo.json, reply ${i + 1}, ${field}: the rule gives ${rule[field]}`).toBeLessThanOrEqual(Math.max(20, rule[field] * 0.1));
      }
    });
  });
});

describe("the capstone's mechanisms beyond the demo", () => {
  useWorkspace();
  const printed = usePrinted();
  quietStdout();
  const replay = useReplay();

  it("compacts when asked: the summary replaces the history, pairs stay whole, the transcript keeps everything (s11)", async () => {
    writeFileSync("notes.txt", "first note\n");
    const running = replay(
      scenarioOf([
        reply.tools([{ name: "read_file", input: { path: "notes.txt" } }]),
        reply.tools([{ name: "compact", input: {} }]),
        reply.text("Summary: notes.txt was read; it holds one note."), // the summary request
        reply.tools([{ name: "read_file", input: { path: "notes.txt" } }]),
        reply.text("Done."),
      ]),
    );
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    const messages = await runTurns(full.agentLoop, ["Read the notes, then make room."]);
    const requests = running.requests;
    expect(requests).toHaveLength(5);
    expect(requests[2].tool_choice).toEqual({ type: "none" });
    expect(breakpointsOf(requests[2])).toEqual(threeBreakpoints(requests[2])); // s14: the summary request too,
    expect(full.sessionTally().requests).toBe(5); // and its usage is counted
    const after = requests[3];
    expect(JSON.stringify(after.messages)).toContain("Summary: notes.txt was read");
    expect(JSON.stringify(after.messages)).not.toContain("first note");
    for (const request of requests) expect(pairProblems(request)).toEqual([]);
    const transcript = readdirSync(TRANSCRIPTS).map((name) => readFileSync(`${TRANSCRIPTS}/${name}`, "utf8")).join("");
    // Written before each request, and each reply as it arrives: the one that ended the turn too.
    for (const message of messages) expect(transcript).toContain(JSON.stringify(message));
    expect(transcript).not.toContain("cache_control");
  });

  it("compacts the conversation that asked: compact and task in one reply summarise the parent's, never the subagent's", async () => {
    const isSummary = (body: { tool_choice?: unknown }) => JSON.stringify(body.tool_choice) === JSON.stringify({ type: "none" });
    const running = replay(
      scenarioOf([
        reply.tools([
          { id: "toolu_make_room", name: "compact", input: {} },
          { id: "toolu_side", name: "task", input: { description: "look", prompt: "Say hello." } },
        ]),
        reply.text("Hello from the subagent."), // the subagent's one request: it must not be compacted
        reply.text("Summary: the parent asked for room."), // the parent's summary request
        reply.text("Done."),
      ]),
    );
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await runTurns(full.agentLoop, ["Make room, and ask a helper."]);
    const requests = running.requests;
    expect(requests).toHaveLength(4);
    expect(requests.map(isSummary)).toEqual([false, false, true, false]);
    // The subagent's request carries its own one message; the summary is made of the parent's conversation.
    expect(requests[1].messages.map((m) => [m.role, textOf(m.content)])).toEqual([["user", "Say hello."]]);
    expect(JSON.stringify(requests[2].messages)).toContain("Make room, and ask a helper.");
    expect(JSON.stringify(requests[3].messages)).toContain("Summary: the parent asked for room.");
  });

  it("auto-edit: writes to the agent's own files ask (a link does not hide them); an ordinary edit does not; the global memory asks (s06, s12)", async () => {
    vi.stubEnv("APPROVAL_MODE", "auto-edit");
    vi.resetModules();
    try {
      const editing = (await import(FILE)) as Full;
      const { useTerminal, nobody } = await import("../lib/runtime/terminal.ts");
      useTerminal(nobody);
      const call = (name: string, input: object) => ({ type: "tool_use", id: `toolu_${name}`, name, input }) as ToolUseBlock;
      mkdirSync(".agent");
      symlinkSync(".agent", "docs");
      for (const file of [".agent/settings.json", "docs/settings.json", ".mcp.json", ".env"]) {
        expect(resultText(await editing.runTool(call("write_file", { path: file, content: "{}" }))), file).toMatch(/^Not run: write_file needs a person's approval \(approval mode auto-edit\)/);
      }
      expect(readdirSync(".agent")).toEqual([]);
      expect(resultText(await editing.runTool(call("write_file", { path: "notes.txt", content: "n" })))).toBe("Wrote 1 bytes to notes.txt");
      expect(resultText(await editing.runTool(call("save_memory", { fact: "Use pnpm." })))).toMatch(/^Saved to \.agent\/MEMORY\.md/);
      expect(resultText(await editing.runTool(call("save_memory", { fact: "Short answers.", scope: "global" })))).toMatch(/^Not run: save_memory needs a person's approval/);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });

  it("keeps any tool's large result whole in a file, not only bash's (s07 in runTool)", async () => {
    writeFileSync("big.txt", Array.from({ length: 3000 }, (_, i) => `match line ${i + 1}`).join("\n"));
    const result = await full.runTool({ type: "tool_use", id: "toolu_big_grep", name: "grep", input: { pattern: "match", output_mode: "content", head_limit: 0 } } as ToolUseBlock);
    const sent = resultText(result);
    expect(sent.length).toBeLessThan(8_000);
    expect(sent).toContain(".agent/tool-results/toolu_big_grep.txt");
    const saved = readFileSync(".agent/tool-results/toolu_big_grep.txt", "utf8");
    expect(saved).toContain("big.txt:1500: match line 1500");
    expect(saved.trimEnd().split("\n")).toHaveLength(3000);
  });

  it("reads the memory saved in one session into the next session's system prompt (s12)", async () => {
    mkdirSync(".agent");
    writeFileSync(".agent/MEMORY.md", "# Memory\n\n## Saved facts\n\n- Tests run with `npm run check`.\n");
    const running = replay(scenarioOf([reply.text("Noted.")]));
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await runTurns(full.agentLoop, ["hello"]);
    expect(textOf(running.requests[0].system)).toContain("- Tests run with `npm run check`.");
  });

  it("registers the tools a discovery command offers, and runs them through its call command (s08)", async () => {
    const declarations = JSON.stringify([{ name: "shout", description: "Upper-case a text.", parameters: { type: "object", properties: { text: { type: "string" } } } }]);
    mkdirSync(".agent");
    const tools = { toolDiscoveryCommand: `echo '${declarations}'`, toolCallCommand: "f() { tr a-z A-Z; }; f" };
    writeFileSync(".agent/settings.json", JSON.stringify({ tools }));
    allowInPersonalSettings({ tools });
    try {
      await full.prepareReplay({ description: "", prompts: [], replies: [] });
      expect(full.TOOLS.map((t) => t.name)).toContain("shout");
      const shout = full.registry.getTool("shout")!;
      expect(shout.kind).toBe("execute");
      expect((await shout.execute({ text: "quiet" }, new AbortController().signal)).llmContent).toBe('{"TEXT":"QUIET"}');
    } finally {
      rmSync(".agent/settings.json");
      await full.prepareReplay({ description: "", prompts: [], replies: [] }); // drops the found tools again
    }
    expect(full.TOOLS.map((t) => t.name)).not.toContain("shout");
  });

  it("keeps its notes (transcripts, large results) out of git and out of search; skills and memory stay the project's (s07, s11)", async () => {
    execFileSync("git", ["init", "-q"]);
    mkdirSync("skills/notes", { recursive: true });
    writeFileSync("skills/notes/SKILL.md", "---\nname: notes\ndescription: Keep notes.\n---\nWrite them down.\n");
    mkdirSync(".agent");
    writeFileSync(".agent/MEMORY.md", "# Memory\n");
    writeFileSync("big.txt", Array.from({ length: 3000 }, (_, i) => `NEEDLE-77 line ${i + 1}`).join("\n"));
    const run = async (name: string, input: Record<string, unknown>) => resultText(await full.runTool({ type: "tool_use", id: `toolu_${name}`, name, input } as ToolUseBlock));
    // A result too large to send goes to .agent/tool-results; the conversation goes to the transcript.
    expect(await run("grep", { pattern: "NEEDLE-77", output_mode: "content", head_limit: 0 })).toContain(".agent/tool-results/toolu_grep.txt");
    replay(scenarioOf([reply.text("NEEDLE-77 is everywhere.")]));
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await runTurns(full.agentLoop, ["Where is NEEDLE-77?"]);
    for (const folder of [TRANSCRIPTS, ".agent/tool-results"]) expect(readFileSync(`${folder}/.gitignore`, "utf8"), folder).toBe("*\n");
    const untracked = execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { encoding: "utf8" }).trim().split("\n");
    expect(untracked.sort()).toEqual(["?? .agent/MEMORY.md", "?? big.txt", "?? skills/notes/SKILL.md"]);
    // Searches leave the agent's folder out: only the project's own file has the word.
    expect(await run("grep", { pattern: "NEEDLE-77", output_mode: "files_with_matches" })).toBe("big.txt");
    expect(await run("glob", { pattern: "**/*.jsonl" })).toMatch(/^No files/);
  });

  it("one-shot mode: every message, the last reply too, is in the transcript when the program ends (s11)", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef");
    vi.resetModules();
    try {
      replay(scenarioOf([reply.tools([{ name: "read_file", input: { path: "a.txt" } }]), reply.text("FINAL REPORT")]));
      writeFileSync("a.txt", "a");
      const { code, output } = await runMain(FILE, ["read a.txt"]);
      expect(code, output).toBe(0);
      const [name] = readdirSync(TRANSCRIPTS).filter((file) => file.endsWith(".jsonl"));
      const lines = readFileSync(`${TRANSCRIPTS}/${name}`, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line) as MessageParam);
      expect(lines.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(JSON.stringify(lines[3])).toContain("FINAL REPORT");
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });

  it("a failing summary is asked for once, not before every request, until the context has grown (s11)", async () => {
    const isSummary = (body: { tool_choice?: unknown }) => JSON.stringify(body.tool_choice) === JSON.stringify({ type: "none" });
    const over = (tokens: number) => {
      const message = reply.tools([{ name: "read_file", input: { path: "a.txt" } }]);
      message.usage = { ...message.usage, input_tokens: tokens };
      return message;
    };
    writeFileSync("a.txt", "a");
    const { handlers, replay: served } = replayHandlers(scenarioOf([over(6000), over(6100), over(6200), over(6300), reply.text("done")]));
    let summaries = 0;
    const failing = http.post("*/v1/messages", async ({ request }) => {
      if (!isSummary((await request.clone().json()) as { tool_choice?: unknown })) return;
      summaries += 1;
      return Response.json({ type: "error", error: { type: "api_error", message: "overloaded" } }, { status: 500, headers: { "x-should-retry": "false" } });
    });
    const server = setupServer(failing, ...handlers);
    server.listen({ onUnhandledRequest: "error" });
    try {
      await full.prepareReplay({ description: "", prompts: [], replies: [], compactThreshold: 5000 });
      await runTurns(full.agentLoop, ["go"]);
      expect(served.verdict()).toEqual([]);
      expect(summaries).toBe(1);
      expect(printed.filter((line) => line.startsWith("[warning] not compacted"))).toEqual([expect.stringMatching(/the next automatic try waits for a request past 6500 input tokens$/)]);
    } finally {
      server.close();
      await full.prepareReplay({ description: "", prompts: [], replies: [] });
    }
  });

  it("after each turn, one line sums its usage, a subagent's requests included; the subagent's figures count the cache (s14)", async () => {
    const costing = (message: Message, usage: object) => ({ ...message, usage }) as Message;
    const used = (input: number, output: number, read: number, write: number) => ({ input_tokens: input, output_tokens: output, cache_read_input_tokens: read, cache_creation_input_tokens: write });
    const running = replay(
      scenarioOf([
        costing(reply.tools([{ id: "toolu_side", name: "task", input: { description: "count", prompt: "Count the files." } }]), used(10, 1, 1000, 100)),
        costing(reply.text("3 files."), used(2, 20, 0, 2000)), // the subagent's: its first request must not start a new turn
        costing(reply.text("There are 3."), used(5, 300, 1200, 40)),
        costing(reply.text("You are welcome."), used(1, 2, 0, 0)),
      ]),
    );
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await runTurns(full.agentLoop, ["How many files?", "Thanks."]);
    // claude-sonnet-5-5: $2 in, $10 out, $0.10 a cache read, $2.50 a cache write, per million tokens.
    expect(printed.filter((line) => line.startsWith("[this turn:"))).toEqual([
      "[this turn: 17 in, 321 out, 2,200 cache read, 2,140 cache write; $0.0088]",
      "[this turn: 1 in, 2 out, 0 cache read, 0 cache write; $0.0000]",
    ]);
    expect(resultText(resultIn(running.requests[2], "toolu_side")!)).toContain("[subagent: 1 model call, 0 tool calls, 2022 tokens (2002 in, 20 out)]");
    // prepareReplay started the session at zero: the tests before this one are not in it.
    expect(full.sessionTally()).toEqual({ requests: 4, input: 18, output: 323, cacheRead: 2200, cacheWrite: 2140 });
  });

  it("/cost at the prompt gives the session's tokens and cost; a bad MODEL_PRICES stops the start in one line (s14)", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef");
    try {
      vi.stubEnv("MODEL_PRICES", `{"my-model":{"input":3}}`);
      vi.resetModules();
      const refused = await runMain(FILE);
      expect(refused.code).toBe(1);
      expect(refused.output).toMatch(/^\[error\] MODEL_PRICES gives "my-model" no "output" [^\n]*; give JSON such as \{"my-model":.*\(dollars per million tokens\)\n$/);
      vi.stubEnv("MODEL_PRICES", "");
      vi.resetModules();
      const usage = { input_tokens: 20, output_tokens: 100, cache_read_input_tokens: 9000, cache_creation_input_tokens: 1000 };
      replay(scenarioOf([{ ...reply.text("first answer"), usage } as Message]));
      const { code, output } = await runMain(FILE, [], { input: "/cost\nfirst\n/cost\n" });
      expect(code, output).toBe(0);
      expect(output).toContain("[no requests yet in this session]");
      expect(output).toContain("Session: 1 request to claude-sonnet-5-5; 20 in, 100 out, 9,000 cache read, 1,000 cache write.");
      expect(output).toContain("Cost: $0.0044; without the cache $0.0210 (79% saved).");
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });

  it("keeps a large MCP result whole in a file, as any large result (s07 with s08)", async () => {
    const docs = { command: process.execPath, args: [path.join(REPO_ROOT, "fixtures", "s08", "docs-server.mjs"), "--test-tools"], trust: true };
    mkdirSync(".agent");
    writeFileSync(".agent/settings.json", JSON.stringify({ mcpServers: { docs } }));
    allowInPersonalSettings({ mcpServers: { docs } });
    try {
      await full.prepareReplay({ description: "", prompts: [], replies: [] });
      const result = await full.runTool({ type: "tool_use", id: "toolu_big_mcp", name: "docs__big", input: {} } as ToolUseBlock);
      const sent = resultText(result);
      expect(sent.length).toBeLessThan(8_000);
      expect(sent).toContain("The whole result is in .agent/tool-results/toolu_big_mcp.txt, 10000 lines");
      const saved = readFileSync(".agent/tool-results/toolu_big_mcp.txt", "utf8");
      expect(saved.length).toBe(199_999);
      expect(saved.split("\n")[4999]).toBe("line 05000 zzzzzzzz");
    } finally {
      rmSync(".agent/settings.json");
      await full.prepareReplay({ description: "", prompts: [], replies: [] }); // ends the server again
    }
  });

  it("lists skills within 12,000 characters, with a note for the rest, and skips a frontmatter too long to parse (s12)", async () => {
    const skill = (name: string, description: string, more = "") => {
      mkdirSync(`skills/${name}`, { recursive: true });
      writeFileSync(`skills/${name}/SKILL.md`, `---\nname: ${name}\ndescription: ${description}\n${more}---\nSteps.\n`);
    };
    for (let i = 10; i < 40; i++) skill(`skill-${i}`, "A long description. ".repeat(50).trim());
    skill("keys", "Many keys.", Array.from({ length: 100_000 }, (_, i) => `key${i}: v\n`).join(""));
    const running = replay(scenarioOf([reply.text("ok")]));
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    const started = performance.now();
    await runTurns(full.agentLoop, ["hello"]);
    expect(performance.now() - started).toBeLessThan(1000);
    const system = textOf(running.requests[0].system);
    const list = system.slice(system.indexOf("Skills (load_skill"), system.indexOf("\n\nMemory,"));
    expect(list.length).toBeLessThan(12_000);
    expect(list).toMatch(/\(\d+ more skills are not listed here, to keep this prompt small\. Each is a folder skills\/<name>\/ with a SKILL\.md/);
    expect(system).not.toContain("- keys:");
    expect(printed.join("\n")).toContain("[skills] skipped skills/keys/SKILL.md: its frontmatter is");
  });

  it("has Part I's glob, ls, web_fetch and ask_user as registry tools that run through runTool", async () => {
    mkdirSync("src");
    writeFileSync("src/a.ts", "");
    writeFileSync("src/b.js", "");
    writeFileSync(".gitignore", "dist/\n");
    mkdirSync("dist");
    writeFileSync("dist/c.ts", "");
    const run = async (name: string, input: Record<string, unknown>) => full.runTool({ type: "tool_use", id: `toolu_${name}`, name, input } as ToolUseBlock);
    expect(resultText(await run("glob", { pattern: "**/*.ts" }))).toBe("src/a.ts");
    expect(resultText(await run("ls", { path: "src" }))).toBe("a.ts\nb.js");
    const missing = await run("ls", { path: "nowhere" });
    expect(missing.is_error).toBe(true);
    expect(resultText(missing)).toContain("nowhere does not exist");
    const local = await run("web_fetch", { url: "http://127.0.0.1:9/" });
    expect(local.is_error).toBe(true);
    expect(resultText(local)).toContain("refused");
    expect(resultText(await run("ask_user", { question: "Which one?" }))).toContain("No one answered");
    expect(printed.join("\n")).toContain("> Glob **/*.ts");
  });
});

describe("the capstone's bounds on a plan and on subagents (s09, s10)", () => {
  useWorkspace();
  usePrinted();
  quietStdout();
  const replay = useReplay();
  const todoWrite = (todos: object[]) => full.runTool({ type: "tool_use", id: "toolu_plan", name: "todo_write", input: { todos } } as ToolUseBlock);
  const items = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `t${i + 1}`, content: `Step ${i + 1}`, status: "pending" }));
  const task = (id: string, prompt: string) => ({ id, name: "task", input: { description: id, prompt } });
  const isChild = (body: MessageCreateParams) => textOf(body.system).includes("You are a subagent");

  /** A model that answers each request as `answer` says, for subagents running at the same time; the parent's as a stream (s13). */
  function model(answer: (body: MessageCreateParams) => Promise<Message>): MessageCreateParams[] {
    const requests: MessageCreateParams[] = [];
    const server = setupServer(
      http.post("*/v1/messages", async ({ request }) => {
        const body = (await request.clone().json()) as MessageCreateParams;
        requests.push(body);
        const message = await answer(body);
        return body.stream ? new Response(eventStream(message), { headers: { "content-type": "text/event-stream" } }) : Response.json(message);
      }),
    );
    server.listen({ onUnhandledRequest: "error" });
    onTestFinished(() => server.close());
    return requests;
  }

  it("refuses a todo list of 100,000 items at once, by its length; a duplicate id is still named", async () => {
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await todoWrite([]); // the validator is made at a tool's first call: not part of what is timed
    const begun = performance.now();
    const huge = await todoWrite(items(100_000));
    expect(performance.now() - begun).toBeLessThan(1000); // was 17 s: each id looked for in the whole list
    expect(huge.is_error).toBe(true);
    expect(resultText(huge)).toBe('Error: the list was refused: it breaks the rule "at most 20 items" (the list has 100000). The list is unchanged:\n(the todo list is empty)');
    const twice = await todoWrite([...items(19), { id: "t19", content: "Again", status: "pending" }]);
    expect(resultText(twice)).toMatch(/^Error: the list was refused: it breaks the rule "ids unique" \(the id "t19" is used more than once\)\./);
  });

  it("runs at most 4 subagents at once: of 10 tasks in one reply the others wait, and the results go back in call order", async () => {
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    const tasks = Array.from({ length: 10 }, (_, i) => task(`toolu_${i}`, `Survey part ${i}.`));
    const seen = { now: 0, most: 0 };
    const requests = model(async (body) => {
      if (!isChild(body)) return body.messages.length === 1 ? reply.tools(tasks) : reply.text("All surveyed.");
      seen.most = Math.max(seen.most, ++seen.now);
      await new Promise((resolve) => setTimeout(resolve, 60));
      seen.now -= 1;
      return reply.text(`${textOf(body.messages[0].content)} done`);
    });
    await runTurns(full.agentLoop, ["Survey the ten parts."]);
    expect(seen.most).toBe(4);
    expect(requests.filter(isChild)).toHaveLength(10);
    const results = requests.at(-1)!.messages.at(-1)!.content as ToolResultBlockParam[];
    expect(results.map((result) => result.tool_use_id)).toEqual(tasks.map((call) => call.id));
    expect(results.map((result) => resultText(result).split("\n")[0])).toEqual(tasks.map((call) => `${call.input.prompt} done`));
  });

  it.each([
    ["model_context_window_exceeded", reply.text("The modules are", "model_context_window_exceeded"), "its last reply was cut off: its context window was full; give it a smaller task"],
    ["pause_turn at its 30th model call", reply.text("Still searching; so far", "pause_turn"), "it reached its limit of 30 model calls without finishing; give it a smaller task"],
  ])("a subagent whose last reply stops with %s gives the parent an error, not a half answer", async (reason, last, why) => {
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    const before = reason.startsWith("pause") ? Array.from({ length: 29 }, () => reply.tools([{ name: "ls", input: { path: "." } }])) : [];
    const running = replay({ ...scenarioOf([reply.tools([task("toolu_side", "Survey.")]), ...before, last, reply.text("I will do it myself.")]), prompts: ["go"], sideTurns: 1 });
    await runTurns(full.agentLoop, ["go"]);
    const result = resultIn(running.requests.at(-1)!, "toolu_side")!;
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toMatch(new RegExp(`^Error: the subagent \\[toolu_side\\] stopped: ${why.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\. Nothing it found came back\\.`));
  });
});

describe("the capstone's large results stay bounded (s07)", () => {
  useWorkspace();
  usePrinted();
  const { RESULT_FILE } = full as unknown as { RESULT_FILE: { maxBytes: number } };
  type WithId = { execute(params: object, signal: AbortSignal, callId: string): Promise<{ llmContent: unknown }> };

  it("keeps a command's first RESULT_FILE.maxBytes and its end in the file, with a note of what was left out", async () => {
    const limit = RESULT_FILE.maxBytes;
    RESULT_FILE.maxBytes = 64 * 1024; // lowered, so the test writes little
    try {
      const bash = full.registry.getTool("bash") as unknown as WithId;
      const result = await bash.execute({ command: "seq 1 100000" }, new AbortController().signal, "toolu_capped");
      expect(String(result.llmContent)).toMatch(/The result, but for [\d,]+ bytes \([\d,]+ lines\) in the middle, is in \.agent\/tool-results\/toolu_capped\.txt, \d+ lines/);
    } finally {
      RESULT_FILE.maxBytes = limit;
    }
    const saved = readFileSync(".agent/tool-results/toolu_capped.txt", "utf8");
    expect(saved.length).toBeLessThan(64 * 1024 + 13_000);
    expect(saved.startsWith("1\n2\n3\n")).toBe(true);
    expect(saved).toMatch(/\n\[\.\.\. [\d,]+ bytes \([\d,]+ lines\) left out here: a saved result keeps its first 0\.0625 MB and its end \.\.\.\]\n/);
    expect(saved.endsWith("\n99999\n100000\n")).toBe(true);
  });

  it("reads a page of a 64 GB file at once, and its footer says the file has at least the lines seen", async (context) => {
    const { truncateSync } = await import("node:fs");
    writeFileSync("huge.log", "text\n".repeat(2000));
    try {
      truncateSync("huge.log", 64 * 1024 ** 3); // sparse: no room on disk
    } catch (error) {
      context.skip(`this file system refuses a 64 GB sparse file (${(error as Error).message})`);
    }
    const started = Date.now();
    const page = await full.runTool({ type: "tool_use", id: "toolu_huge_page", name: "read_file", input: { path: "huge.log", limit: 5 } } as ToolUseBlock);
    expect(Date.now() - started, "ms").toBeLessThan(2000);
    expect(resultText(page).endsWith("[lines 1-5 of at least 2001. Next page: offset 6, limit 5]")).toBe(true);
  });
});

describe("the capstone's stream: the parent's replies arrive as they are written (s13)", () => {
  useWorkspace();
  let provider: StreamProvider;
  let streaming: Full & { term: typeof import("../lib/runtime/terminal.ts") };
  beforeAll(async () => {
    // A copy of the capstone pointed at a provider on 127.0.0.1 that streams, and can hold a reply half way.
    provider = await startStreamProvider();
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef");
    vi.stubEnv("ANTHROPIC_BASE_URL", provider.url);
    vi.stubEnv("APPROVAL_MODE", "yolo");
    vi.resetModules();
    try {
      streaming = { ...((await import(FILE)) as Full), term: await import("../lib/runtime/terminal.ts") };
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
  afterAll(() => provider.close());
  afterEach(() => provider.reset());

  /** One turn on `messages`, with what reaches the screen (console.log and stdout's writes) watched as it grows. */
  function turn(messages: MessageParam[], prompt: string) {
    let shown = "";
    const spies = [
      vi.spyOn(console, "log").mockImplementation((...parts) => void (shown += `${parts.join(" ")}\n`)),
      vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => ((shown += String(chunk)), true)),
    ];
    messages.push({ role: "user", content: prompt });
    const running = streaming.agentLoop(messages).finally(() => spies.forEach((spy) => spy.mockRestore()));
    return { running, screen: () => shown };
  }
  async function until(check: () => boolean, what: string): Promise<void> {
    for (const started = Date.now(); !check(); await new Promise((resolve) => setTimeout(resolve, 5))) {
      if (Date.now() - started > 5000) throw new Error(`waited in vain for ${what}`);
    }
  }
  const texts = (...parts: string[]) => ({ ...reply.text(parts[0]), content: parts.map((text) => ({ type: "text", text, citations: null })) }) as Message;
  const transcript = () => readdirSync(TRANSCRIPTS).filter((name) => name.endsWith(".jsonl")).map((name) => readFileSync(`${TRANSCRIPTS}/${name}`, "utf8")).join("");

  it("shows the text while the provider still holds the rest of the reply, and only once", async () => {
    const [first, rest] = splitAt(await eventsOf(texts("Reading the files now, then I will explain.")), /text_delta/);
    provider.scripts = [[...first, "wait", ...rest]];
    const { running, screen } = turn([], "explain");
    await until(() => screen().includes("Reading the "), "the first piece of text");
    expect(provider.requests[0].stream).toBe(true);
    provider.release();
    await running;
    expect(screen().split("Reading the files now, then I will explain.")).toHaveLength(2); // showText prints the context line only
    expect(screen()).toMatch(/\[context: [\d,]+ of 200,000 tokens/);
  });

  it("shows a call's line once its block is whole, before the reply ends; runTool does not print it again", async () => {
    writeFileSync("a.txt", "A");
    const [toTheStop, rest] = splitAt(await eventsOf(reply.tools([{ name: "read_file", input: { path: "a.txt" } }])), /content_block_stop/);
    provider.scripts = [[...toTheStop, "wait", ...rest], await eventsOf(reply.text("It says A."))];
    const { running, screen } = turn([], "read a.txt");
    await until(() => screen().includes("> ReadFile a.txt"), "the call's line, while the provider holds the reply's end");
    expect(provider.isWaiting()).toBe(true);
    provider.release();
    await running;
    expect(screen().match(/> ReadFile a\.txt/g)).toHaveLength(1);
  });

  it("Ctrl-C mid-text: the turn ends at once, the history and the transcript keep the complete block only, the next prompt works", async () => {
    const [upToHalf, rest] = splitAt(await eventsOf(texts("First, the plan.", "Then a long explanation the person will not wait for.")), /"index":1,"delta"/, 2);
    provider.scripts = [[...upToHalf, "wait", ...rest], await eventsOf(reply.text("Shorter, then."))];
    const messages: MessageParam[] = [];
    const { running, screen } = turn(messages, "explain");
    await until(() => screen().includes("Then a long explana"), "the second block, half shown");
    const pressed = Date.now();
    streaming.term.interrupt();
    await running;
    expect(Date.now() - pressed).toBeLessThan(500);
    await until(() => provider.hungUp[0] === true, "the request to be aborted");
    expect(screen()).toContain("[the reply was interrupted (Ctrl-C); what was complete of it is kept]");
    const kept: MessageParam = { role: "assistant", content: [{ type: "text", text: "First, the plan.", citations: null }] };
    expect(messages).toEqual([{ role: "user", content: "explain" }, kept]);
    expect(transcript().trimEnd().split("\n").at(-1)).toBe(JSON.stringify(kept));
    await turn(messages, "keep it short").running;
    expect(apiProblem(provider.requests[1])).toBeUndefined();
  });

  it("Ctrl-C mid-call: the complete call is kept and answered as not run, in the history and the transcript; nothing runs", async () => {
    const calls = reply.tools([
      { id: "toolu_whole", name: "write_file", input: { path: "whole.txt", content: "x" } },
      { id: "toolu_half", name: "write_file", input: { path: "half.txt", content: "a long content the model is still writing" } },
    ]);
    const [upToHalf, rest] = splitAt(await eventsOf(calls), /"index":1,"delta"/, 2);
    provider.scripts = [[...upToHalf, "wait", ...rest], await eventsOf(reply.text("As you wish."))];
    const messages: MessageParam[] = [];
    const { running, screen } = turn(messages, "write two files");
    await until(() => screen().includes("> WriteFile whole.txt"), "the first call on the screen");
    streaming.term.interrupt();
    await running;
    const notRun = { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_whole", is_error: true, content: "Not run: the person interrupted your reply (Ctrl-C) before this call could run." }] };
    expect(messages.slice(1)).toEqual([{ role: "assistant", content: [calls.content[0]] }, notRun]);
    expect(transcript()).toContain(JSON.stringify(notRun));
    expect(existsSync("whole.txt") || existsSync("half.txt")).toBe(false);
    await turn(messages, "never mind").running;
    expect(apiProblem(provider.requests[1])).toBeUndefined();
  });

  it("a subagent's requests are not streamed: its replies come whole, its lines stay under its label, its calls shown once", async () => {
    const whole = (message: Message) => [{ status: 200, body: message }];
    provider.scripts = [
      await eventsOf(reply.tools([{ id: "toolu_side", name: "task", input: { description: "look", prompt: "List the folder." } }])),
      whole(reply.tools([{ name: "ls", input: { path: "." } }])),
      whole(reply.text("The folder is empty.")),
      await eventsOf(reply.text("Nothing there.")),
    ];
    const { running, screen } = turn([], "what is here?");
    await running;
    expect(provider.requests.map((request) => request.stream === true)).toEqual([true, false, false, true]);
    expect(screen().match(/> Task look/g)).toHaveLength(1);
    expect(screen()).toContain("  [look] > List .");
    expect(screen()).toContain("  [look] The folder is empty.");
  });
});
