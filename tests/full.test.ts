// The capstone, agents/s_full.ts: every mechanism of s01 to s20 in one agent. Its demo is
// replayed once, through the real loop and tools, and each mechanism is checked where the
// demo shows it (a large result kept in a file, a todo reminder inside a tool result, a
// subagent whose history stays out of the parent, a skill loaded, memory saved, old results
// cleared, three cache breakpoints on every request). What the demo does not show gets a
// small scenario of its own: compaction keeping every tool_use with its result, the next
// session reading the memory, tools discovered from a command, Part I's tools (glob, ls,
// web_fetch, ask_user) as registry entries, each turn's tokens and /cost, and the parent's
// reply streamed from a provider that can hold it half way (Ctrl-C included); and with
// PROVIDER=openai (s15), every request through the Chat Completions adapter, none streamed.
// (The shared tests find stages by their sNN_ names, so the header and the no-key run are
// checked here too.)
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { http } from "msw/core/http";
import { setupServer } from "msw/node";
import type { Message, MessageCreateParams, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { CAPSTONE } from "../.vitepress/curriculum.ts";
import { regionsOf } from "../lib/course/regions.ts";
import { cacheShare, promptCache } from "../lib/course/cache.ts";
import { apiProblem, eventStream, replayHandlers } from "../lib/course/replay.ts";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario, type ReplayedSession } from "../lib/course/session.ts";
import { eventsOf, splitAt, startStreamProvider, type StreamProvider } from "../lib/course/stream-provider.ts";
import { AGENTS_DIR } from "../lib/course/stages.ts";
import {
  eventually, isRunning, killAll, reply, REPO_ROOT, resultText, runMain, runTurns, scenarioOf, stageFile, stageFiles, stageId, startStandIn, TSX_LOADER, usePrinted, useReplay, useWorkspace, withTmpdir,
} from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";
import { chatProblem } from "../lib/course/chat-replay.ts";
import { compareWithScenario } from "../.vitepress/transcript.ts";

// FULL_FILE: a changed copy of the capstone (agents/.full-*.ts), to see a test fail when a mechanism is broken.
const FILE = process.env.FULL_FILE ?? path.join(AGENTS_DIR, CAPSTONE.file);
const SESSIONS = ".agent/sessions"; // s16: the session log, which is also s11's transcript
type Tool = { name: string; kind: string; execute(params: Record<string, unknown>, signal: AbortSignal): Promise<{ llmContent: unknown }> };
type Full = {
  agentLoop(messages: MessageParam[]): Promise<void>;
  runTurn(messages: MessageParam[]): Promise<void>;
  startHistory(args?: string[]): MessageParam[] & { id: string | undefined };
  prepareReplay(scenario: object): Promise<void>;
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  registry: { getTool(name: string): Tool | undefined; getAllTools(): Tool[] };
  TOOLS: { name: string }[];
  main: unknown;
  sessionTally(): { requests: number; input: number; output: number; cacheRead: number; cacheWrite: number };
};
const full = (await import(FILE)) as Full;
const term = await import("../lib/runtime/terminal.ts"); // the terminal the capstone asks at, loaded with it

/** The lines of the workspace's one session log (s16), each parsed: its header first. */
function sessionLines(root = "."): Record<string, unknown>[] {
  const names = readdirSync(path.join(root, SESSIONS)).filter((name) => name.endsWith(".jsonl"));
  expect(names, "session logs").toHaveLength(1);
  return readFileSync(path.join(root, SESSIONS, names[0]), "utf8").split("\n").slice(0, -1).map((line) => JSON.parse(line));
}
/** A session as the program runs one: a new session log, each prompt pushed, then the loop. */
async function inSession(loop: (messages: MessageParam[]) => Promise<void>, prompts: string[], history: MessageParam[] = full.startHistory()): Promise<MessageParam[]> {
  for (const prompt of prompts) {
    history.push({ role: "user", content: prompt });
    await loop(history);
  }
  return history;
}
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
    // Each stage's tools as its file declares them (a schema in TOOLS, a defineTool, or s19's
    // teamTool), read from the text: importing twelve stages here would cost seconds.
    const declared = (text: string) => [...text.matchAll(/^\s+name: "([a-z_]+)",$|\bteamTool\(\s*"([a-z_]+)"/gm)].map((m) => m[1] ?? m[2]);
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

  it("clears old tool results from what the model sees; every message is in the session log, the transcript it points to (s11, s16)", async () => {
    const { requests, messages } = await replayed();
    const last = requests.at(-1)!;
    const [name] = readdirSync(path.join(workspace, SESSIONS)).filter((entry) => entry.endsWith(".jsonl"));
    const placeholder = resultText(resultIn(last, "toolu_full_demo_02")!);
    expect(placeholder).toMatch(/^\[Old result cleared to save context: bash/);
    expect(placeholder).toContain(`grep -F 'toolu_full_demo_02' ${SESSIONS}/${name}`);
    expect(messages.flatMap(blocksOf).some((b) => b.tool_use_id === "toolu_full_demo_02" && String(b.content).includes("records failed"))).toBe(true);
    // One file: the header, then every message as it entered the history, the last reply too. The
    // subagent's conversation is no session: it ends with its run, and only its answer is logged.
    const [header, ...logged] = sessionLines(workspace);
    expect(header).toMatchObject({ session: name.slice(0, -6), version: 1 });
    expect(logged).toEqual(JSON.parse(JSON.stringify(messages)));
    for (const id of ["toolu_full_demo_05", "toolu_full_demo_06"]) expect(JSON.stringify(logged)).not.toContain(id);
  });

  it("lists the skill in the system prompt, loads it on demand, and saves the fact to memory (s12)", async () => {
    const { requests } = await replayed();
    expect(textOf(requests[0].system)).toContain("- changelog: How to add an entry to CHANGELOG.md");
    expect(textOf(requests[0].system)).not.toContain("# Changelog entries");
    expect(resultText(resultIn(await requestWith("toolu_full_demo_11"), "toolu_full_demo_11")!)).toContain("# Changelog entries");
    expect(file(".agent/MEMORY.md")).toContain("- The nightly check is `node nightly.js`");
  });

  it("marks each request, the subagent's too, with three breakpoints on a copy: the history and the session log have none (s14)", async () => {
    const { requests, messages } = await replayed();
    for (const [i, request] of requests.entries()) expect(breakpointsOf(request), `request ${i + 1}`).toEqual(threeBreakpoints(request));
    expect(JSON.stringify(messages)).not.toContain("cache_control");
    expect(JSON.stringify(sessionLines(workspace))).not.toContain("cache_control");
  });

  it("ends its turn with one line of the turn's tokens and cost, the one its page quotes (s14)", async () => {
    await replayed();
    const lines = printed.filter((line) => line.startsWith("[this turn:"));
    expect(lines).toEqual(["[this turn: 0 in, 1,375 out, 52,459 cache read, 12,420 cache write; $0.0500]"]);
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

  it("compacts when asked: the summary replaces the history, pairs stay whole, the session log keeps everything and the compaction (s11, s16)", async () => {
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
    const messages = await inSession(full.agentLoop, ["Read the notes, then make room."]);
    const requests = running.requests;
    expect(requests).toHaveLength(5);
    expect(requests[2].tool_choice).toEqual({ type: "none" });
    expect(breakpointsOf(requests[2])).toEqual(threeBreakpoints(requests[2])); // s14: the summary request too,
    expect(full.sessionTally().requests).toBe(5); // and its usage is counted
    const after = requests[3];
    expect(JSON.stringify(after.messages)).toContain("Summary: notes.txt was read");
    expect(JSON.stringify(after.messages)).not.toContain("first note");
    for (const request of requests) expect(pairProblems(request)).toEqual([]);
    // Each message as it entered the history, and the compaction where it happened: after the five it replaced.
    const [, ...logged] = sessionLines();
    const summary = { role: "user", content: [{ type: "text", text: textOf(after.messages[0].content) }] }; // as sent, but for its breakpoint
    expect(logged).toEqual(JSON.parse(JSON.stringify([...messages.slice(0, 5), { compaction: { cut: 5, summary } }, ...messages.slice(5)])));
    expect(JSON.stringify(logged)).not.toContain("cache_control");
  });

  it("a compacted session resumed (--continue) sends the summary and what came after, not the whole history again (s11, s16)", async () => {
    writeFileSync("notes.txt", "first note\n");
    const running = replay(
      scenarioOf([
        reply.tools([{ name: "read_file", input: { path: "notes.txt" } }]),
        reply.tools([{ name: "compact", input: {} }]),
        reply.text("Summary: notes.txt holds one note."), // the summary request
        reply.text("Room made."),
        reply.text("It holds one note."), // the resumed session's first request
      ]),
    );
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await inSession(full.agentLoop, ["Read the notes, then make room."]);
    // The program ends here; a new one resumes the session written to last.
    await inSession(full.agentLoop, ["What did the notes say?"], full.startHistory(["--continue"]));
    const resumed = running.requests[4];
    expect(JSON.stringify(resumed.messages)).toContain("Summary: notes.txt holds one note.");
    expect(JSON.stringify(resumed.messages)).not.toContain("first note");
    expect(resumed.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]); // the summary, "Room made.", the new prompt
    expect(pairProblems(resumed)).toEqual([]);
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

  it("keeps its notes (session logs, large results) out of git and out of search; skills and memory stay the project's (s07, s16)", async () => {
    execFileSync("git", ["init", "-q"]);
    mkdirSync("skills/notes", { recursive: true });
    writeFileSync("skills/notes/SKILL.md", "---\nname: notes\ndescription: Keep notes.\n---\nWrite them down.\n");
    mkdirSync(".agent");
    writeFileSync(".agent/MEMORY.md", "# Memory\n");
    writeFileSync("big.txt", Array.from({ length: 3000 }, (_, i) => `NEEDLE-77 line ${i + 1}`).join("\n"));
    const run = async (name: string, input: Record<string, unknown>) => resultText(await full.runTool({ type: "tool_use", id: `toolu_${name}`, name, input } as ToolUseBlock));
    // A result too large to send goes to .agent/tool-results; the conversation goes to the session log.
    expect(await run("grep", { pattern: "NEEDLE-77", output_mode: "content", head_limit: 0 })).toContain(".agent/tool-results/toolu_grep.txt");
    replay(scenarioOf([reply.text("NEEDLE-77 is everywhere.")]));
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await inSession(full.agentLoop, ["Where is NEEDLE-77?"]);
    for (const folder of [SESSIONS, ".agent/tool-results"]) expect(readFileSync(`${folder}/.gitignore`, "utf8"), folder).toBe("*\n");
    const untracked = execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { encoding: "utf8" }).trim().split("\n");
    expect(untracked.sort()).toEqual(["?? .agent/MEMORY.md", "?? big.txt", "?? skills/notes/SKILL.md"]);
    // Searches leave the agent's folder out: only the project's own file has the word.
    expect(await run("grep", { pattern: "NEEDLE-77", output_mode: "files_with_matches" })).toBe("big.txt");
    expect(await run("glob", { pattern: "**/*.jsonl" })).toMatch(/^No files/);
  });

  it("one-shot mode: every message, the last reply too, is in the session log when the program ends (s11, s16)", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef");
    vi.resetModules();
    try {
      replay(scenarioOf([reply.tools([{ name: "read_file", input: { path: "a.txt" } }]), reply.text("FINAL REPORT")]));
      writeFileSync("a.txt", "a");
      const { code, output } = await runMain(FILE, ["read a.txt"]);
      expect(code, output).toBe(0);
      const lines = sessionLines().slice(1) as unknown as MessageParam[];
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
    await runTurns(full.runTurn, ["How many files?", "Thanks."]); // the program's turn, which tallies it (s14 with s17)
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

describe("the capstone's sessions: each message on disk as it enters the history, --continue and --resume (s16)", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  quietStdout();
  const replay = useReplay();
  type Stage16 = Full & { repaired(logged: MessageParam[]): { messages: MessageParam[]; notes: string[] }; INTERRUPTED: string };
  const stage16 = full as unknown as Stage16;
  const header = (id: string) => ({ session: id, version: 1, started: "2025-06-01T09:00:00.000Z" });
  function writeSession(id: string, lines: unknown[], tail = ""): string {
    mkdirSync(SESSIONS, { recursive: true });
    const file = path.join(SESSIONS, `${id}.jsonl`);
    writeFileSync(file, [header(id), ...lines].map((line) => `${JSON.stringify(line)}\n`).join("") + tail);
    return file;
  }
  const user = (content: unknown) => ({ role: "user", content }) as MessageParam;
  const assistant = (...content: unknown[]) => ({ role: "assistant", content }) as MessageParam;
  const call = (id: string) => ({ type: "tool_use", id, name: "bash", input: { command: "make" } });
  const interrupted = (id: string) => ({ type: "tool_result", tool_use_id: id, is_error: true, content: stage16.INTERRUPTED });
  const refused = (args: string[]) => {
    try {
      full.startHistory(args);
    } catch (error) {
      return (error as Error).message;
    }
    return "resumed";
  };
  const KEY = "sk-ant-test-0123456789abcdef";
  /** The capstone loaded afresh with a key, for runMain; its modules are reset afterwards. */
  async function withKey<T>(work: () => Promise<T>): Promise<T> {
    vi.stubEnv("ANTHROPIC_API_KEY", KEY);
    vi.resetModules();
    try {
      return await work();
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  }

  it("no file until the first message; then a header and a line per message, 0600, in a folder git ignores; a copy writes nothing; a failed write is caught up", () => {
    writeFileSync(".agent", "a file where the folder would go");
    const log = full.startHistory();
    log.push(user("one"));
    expect(printed.filter((line) => line.startsWith("[warning] the session cannot be saved"))).toHaveLength(1);
    rmSync(".agent");
    log.push(assistant({ type: "text", text: "two" }));
    log.slice().push(user("a copy: not logged"));
    const [first, ...logged] = sessionLines();
    expect(first).toMatchObject({ session: log.id, version: 1 });
    expect(logged).toEqual([user("one"), assistant({ type: "text", text: "two" })]);
    expect(statSync(path.join(SESSIONS, `${log.id}.jsonl`)).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(SESSIONS, ".gitignore"), "utf8")).toBe("*\n");
  });

  it("a file another program wrote to (the same session resumed twice): the session goes on in a new file, whole, and a prompt a hook takes back is not cut from the other's lines", () => {
    const mine = full.startHistory();
    mine.push(user("one"));
    const first = mine.id!;
    mine.push(user("taken back"));
    const other = full.startHistory(["--resume", first]);
    other.push(user("from the other program"));
    // pop (s17's hook taking a prompt back) must not cut the other program's line off the file.
    mine.pop();
    expect([...full.startHistory(["--resume", first])]).toEqual([user("one"), user("taken back"), user("from the other program")]);
    mine.push(assistant({ type: "text", text: "two" }));
    expect(mine.id).not.toBe(first);
    expect(printed.join("\n")).toContain(`[warning] ${SESSIONS}/${first}.jsonl is not as this program left it (another program wrote to it, a write was cut short, or it was removed): the session goes on in ${SESSIONS}/${mine.id}.jsonl, whole`);
    expect([...full.startHistory(["--resume", mine.id!])]).toEqual([user("one"), assistant({ type: "text", text: "two" })]);
    // As this program left it, pop takes the line back from the file too.
    mine.push(user("three"));
    mine.pop();
    expect([...full.startHistory(["--resume", mine.id!])]).toEqual([user("one"), assistant({ type: "text", text: "two" })]);
  });

  it("as a program: --continue and --resume <id> carry on a session in its own file; --resume alone lists them; --help names both; a misspelt flag exits 2", async () => {
    writeSession("20250601-090000-aaaaaa", [user("Remember the number 7."), assistant({ type: "text", text: "I will." })]);
    writeSession("20250602-090000-bbbbbb", [user("in b"), assistant({ type: "text", text: "b" })]);
    utimesSync(path.join(SESSIONS, "20250602-090000-bbbbbb.jsonl"), Date.now() / 1000 - 3600, Date.now() / 1000 - 3600);
    const served = replay(scenarioOf([reply.text("It was 7."), reply.text("b it is")]));
    await withKey(async () => {
      expect((await runMain(FILE, ["--continue", "Which number?"])).code).toBe(0);
      expect(served.requests[0].messages.map((m) => textOf(m.content))).toEqual(["Remember the number 7.", "I will.", "Which number?"]);
      expect((await runMain(FILE, ["--resume", "20250602-090000-bbbbbb", "which one?"])).code).toBe(0);
      expect(textOf(served.requests[1].messages[0].content)).toBe("in b");
      const list = await runMain(FILE, ["--resume"]);
      expect(list.code).toBe(0);
      expect(list.output).toMatch(/^Sessions in \.agent\/sessions\/, the one written to last first \(--resume <id> resumes one\):\n {2}20250602-090000-bbbbbb {2}[\d-]+ [\d:]+ {2}4 messages {2}"in b"\n {2}20250601-090000-aaaaaa /);
      const help = await runMain(FILE, ["--help"]);
      expect(help.output).toContain("--continue              resume the session of this workspace written to last");
      expect(help.output).toContain("--resume <id>           resume that session; --resume alone lists the sessions");
      expect((await runMain(FILE, ["--contineu"])).code).toBe(2);
      expect(await runMain(FILE, ["--resume", "nope", "hi"])).toEqual({ code: 1, output: '[error] "nope" is not a session id (ids look like 20250601-142233-a1b2c3); --resume alone lists the sessions\n' });
    });
    expect(readFileSync(path.join(SESSIONS, "20250601-090000-aaaaaa.jsonl"), "utf8").trimEnd().split("\n")).toHaveLength(5); // appended to, never rewritten
    expect(await runMain(FILE, ["--continue"])).toEqual({ code: 1, output: "[error] resuming a session needs a real model, and no key is set (see --help); without one, --replay resume shows a session resumed offline\n" });
  });

  it("repairs on load what the program's end left: a cut last line, a call with no result (alone or beside another's), an empty message; and never rewrites a line", () => {
    const file = writeSession("20250601-090000-aaaaaa", [user("build"), assistant(call("toolu_1"), call("toolu_2")), user([{ type: "tool_result", tool_use_id: "toolu_2", content: "ok" }]), assistant()], '{"role":"user","content":"thr');
    const history = full.startHistory(["--continue"]);
    expect([...history]).toEqual([user("build"), assistant(call("toolu_1"), call("toolu_2")), user([interrupted("toolu_1"), { type: "tool_result", tool_use_id: "toolu_2", content: "ok" }])]);
    expect(printed).toContain("[warning] line 6 (29 bytes) was cut short when the program ended: it is left out");
    expect(printed).toContain("[repaired] line 5 is an empty assistant message: it is left out");
    const before = readFileSync(file, "utf8");
    expect([...full.startHistory(["--continue"])]).toEqual([...history]);
    expect(readFileSync(file, "utf8")).toBe(before);
    const ended = stage16.repaired([user("go"), assistant(call("toolu_3"))]).messages;
    expect(ended.at(-1)).toEqual(user([interrupted("toolu_3")]));
    expect(() => stage16.repaired([user("go"), assistant({ type: "text", text: "hm" }), user([{ type: "tool_result", tool_use_id: "toolu_x", content: "" }])])).toThrow("answers no call");
    expect(() => stage16.repaired([assistant({ type: "text", text: "hello" })])).toThrow("its first message is not the person's");
  });

  it("refuses what is not a session, naming it: not JSON, no header, a line that is neither a message nor a compaction, a FIFO, a link, binary, over 10 MB, a folder that leads out", () => {
    const id = "20250601-090000-aaaaaa";
    const given = `${SESSIONS}/${id}.jsonl`;
    mkdirSync(SESSIONS, { recursive: true });
    writeFileSync(given, "PK\u0003\u0004 some zip\n");
    expect(refused(["--resume", id])).toBe(`${given} is not a session: its first line is not a session header`);
    writeSession(id, [user("fine"), { role: "system", content: "no" }]);
    expect(refused(["--resume", id])).toBe(`${given} is not a session: line 3 is not a message (a JSON object with a role and content) nor a compaction`);
    writeSession(id, [user("fine"), { compaction: { cut: 5, summary: user("more than there is") } }]);
    expect(refused(["--resume", id])).toMatch(/line 3 is not a message/);
    rmSync(given);
    execFileSync("mkfifo", [given]);
    expect(refused(["--resume", id])).toBe(`${given} is a FIFO (named pipe), not a regular file; only regular files are read`);
    rmSync(given);
    symlinkSync("/dev/zero", given);
    expect(refused(["--resume", id])).toBe(`${given} is a symlink, not a session: it is not followed`);
    rmSync(given);
    writeFileSync(given, Buffer.from([0x7b, 0, 0x7d, 10]));
    expect(refused(["--resume", id])).toMatch(/looks binary/);
    writeFileSync(given, `${JSON.stringify(header(id))}\n${"x".repeat(10 * 1024 * 1024)}\n`);
    expect(refused(["--resume", id])).toBe(`${given} is 10.0 MB, over the 10 MB limit; a history that large could not be sent to the model anyway`);
    rmSync(SESSIONS, { recursive: true });
    const outside = `${workspace.dir}-outside`;
    mkdirSync(outside);
    try {
      symlinkSync(outside, SESSIONS);
      full.startHistory().push(user("secret plans"));
      expect(readdirSync(outside)).toEqual([]);
      expect(refused(["--continue"])).toBe(`${SESSIONS} is a symlink: sessions are kept only in the workspace's own ${SESSIONS}/`);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("replays s16's resumed session (its sessionFlags, the earlier session in its files): the interrupted call answered, every request one the API takes", async () => {
    const scenario = loadScenario("s16", "resume");
    const session = await replayScenario(full, scenario, { workspace: workspace.dir });
    expect(session.problems).toEqual([]);
    expect(session.requests[0].messages[4]).toEqual(user([interrupted("toolu_s16_earlier_02")]));
    for (const request of session.requests) expect(apiProblem(request)).toBeUndefined();
    expect(sessionLines()).toHaveLength(1 + 4 + 1 + 7); // the header, the earlier 4, the prompt, 4 replies and 3 results
  });

  it("a program killed during a call leaves the prompt and the call on disk; --continue answers the call as interrupted (a real process)", async () => {
    const command = "echo $$ > sleeper.pid; exec sleep 30";
    const standIn = await startStandIn(scenarioOf([reply.tools([{ id: "toolu_killed", name: "bash", input: { command } }]), reply.text("never sent")]));
    const env = { ...withTmpdir(process.env, workspace.dir), ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standIn.url, APPROVAL_MODE: "yolo" };
    const child = spawn(process.execPath, ["--import", TSX_LOADER, FILE, "Wait for the build."], { cwd: workspace.dir, env, stdio: "ignore" });
    const pidFile = path.join(workspace.dir, "sleeper.pid");
    try {
      expect(await eventually(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").endsWith("\n"), 20_000)).toBe(true);
      child.kill("SIGKILL");
      await once(child, "close");
    } finally {
      child.kill("SIGKILL");
      const pid = Number(readFileSync(pidFile, "utf8"));
      if (pid > 0) process.kill(pid, "SIGKILL");
      await standIn.close();
    }
    expect(sessionLines().slice(1)).toEqual([user("Wait for the build."), assistant({ type: "tool_use", id: "toolu_killed", name: "bash", input: { command } })]);
    const history = full.startHistory(["--continue"]);
    history.push(user("Did it finish?"));
    expect(history.slice(-2)).toEqual([user([interrupted("toolu_killed")]), user("Did it finish?")]);
  });
});

describe("the capstone's rules and hooks: the person's, and the project's once trusted (s17)", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  quietStdout();
  const replay = useReplay();
  type Stage17 = Full & { loadSettings(): Promise<string[]>; ruleFor(tool: string, params: object): { list: string; rule: { text: string } } | undefined };
  const PERSONAL = () => path.join(os.homedir(), ".agent", "settings.json");
  const writeJson = (file: string, data: unknown) => (mkdirSync(path.dirname(file), { recursive: true }), writeFileSync(file, JSON.stringify(data)));
  /** The person's own settings, then the settings loaded as a session starts (after discovery, as prepareReplay does). */
  const mine = async (settings: unknown, stage: Full = full) => (writeJson(PERSONAL(), settings), (stage as Stage17).loadSettings());
  const listOf = (tool: string, params: object, stage: Full = full) => (stage as Stage17).ruleFor(tool, params)?.list;
  let ids = 0;
  const run = async (name: string, input: object, stage: Full = full) => {
    const result = await stage.runTool({ type: "tool_use", id: `toolu_s17_${++ids}`, name, input } as ToolUseBlock);
    return { text: resultText(result), isError: result.is_error === true };
  };
  /** The capstone loaded afresh in an approval mode (read at load), with the terminal module it uses. */
  async function fullIn(mode: string): Promise<Full & { term: typeof term }> {
    vi.stubEnv("APPROVAL_MODE", mode);
    vi.resetModules();
    try {
      return { ...((await import(FILE)) as Full), term: await import("../lib/runtime/terminal.ts") };
    } finally {
      vi.unstubAllEnvs();
    }
  }
  afterEach(async () => {
    rmSync(PERSONAL(), { force: true });
    await (full as Stage17).loadSettings(); // no rule or hook left for the next test
    term.useTerminal(term.nobody);
  });
  afterAll(() => vi.resetModules());

  it("each rule form matches what it says; read_file's deny and ask rules hold for grep, glob and ls, and grep's walk leaves denied files out", async () => {
    mkdirSync("secrets");
    writeFileSync("secrets/key", "NEEDLE sk-secret\n");
    writeFileSync("notes.txt", "NEEDLE in the notes\n");
    expect(await mine({ permissions: { allow: ["bash(git status:*)", "edit_file(src/**)"], deny: ["read_file(secrets/**)", "web_fetch(domain:example.com)"], ask: ["ls(docs)"] } })).toEqual([]);
    expect(["git status", "git status --short", "git stash", "git status && rm x"].map((command) => listOf("bash", { command }))).toEqual(["allow", "allow", undefined, undefined]);
    expect([listOf("edit_file", { path: "src/a.ts" }), listOf("edit_file", { path: "lib/a.ts" })]).toEqual(["allow", undefined]);
    expect(["https://EXAMPLE.com./a", "https://www.example.com/", "https://example.com.evil.io/"].map((url) => listOf("web_fetch", { url }))).toEqual(["deny", undefined, undefined]);
    expect([listOf("grep", { pattern: "x", path: "secrets" }), listOf("glob", { pattern: "*", path: "secrets" }), listOf("ls", { path: "./secrets" }), listOf("ls", { path: "docs" })]).toEqual(["deny", "deny", "deny", "ask"]);
    expect(await run("grep", { pattern: "NEEDLE", output_mode: "content" })).toEqual({ text: "notes.txt:1: NEEDLE in the notes", isError: false });
    expect(await run("read_file", { path: "secrets/key" })).toEqual({ text: "Not run: the rule deny read_file(secrets/**) (permissions.deny[0] in ~/.agent/settings.json) forbids it.", isError: true });
    expect(printed.join("\n")).not.toContain("sk-secret");
  });

  it("deny before ask before allow; an allowed call runs with no one there; ask asks every time; deny holds in yolo, plan refuses an allowed command; no allow covers .agent/", async () => {
    await mine({ permissions: { allow: ["bash(echo allowed)", "write_file", "read_file"], ask: ["read_file(notes.txt)"], deny: ["bash(rm:*)"] } });
    expect(await run("bash", { command: "echo allowed" })).toEqual({ text: "allowed\n", isError: false });
    expect(printed.join("\n")).toContain("[allowed by bash(echo allowed) (permissions.allow[0] in ~/.agent/settings.json)]");
    expect((await run("bash", { command: "echo other" })).text).toMatch(/^Not run: bash needs a person's approval .* no one is at the terminal/);
    expect((await run("write_file", { path: ".agent/settings.json", content: "{}" })).text).toMatch(/no one is at the terminal/);
    writeFileSync("notes.txt", "hello\n");
    term.useTerminal(term.scriptedTerminal(["a", "y"], new PassThrough() as unknown as NodeJS.WriteStream));
    expect(await run("read_file", { path: "notes.txt" })).toEqual({ text: "     1\thello", isError: false });
    expect(await run("read_file", { path: "notes.txt" })).toEqual({ text: "     1\thello", isError: false }); // "a" did not cover it: asked again
    expect(printed.filter((line) => line.includes("(the rule ask read_file(notes.txt), permissions.ask[0]"))).toHaveLength(2);
    const yolo = await fullIn("yolo");
    await mine({ permissions: { deny: ["bash(rm:*)"] } }, yolo);
    expect(await run("bash", { command: "touch x && FOO=1 rm -f notes.txt" }, yolo)).toMatchObject({ isError: true, text: expect.stringContaining("deny bash(rm:*)") });
    expect(existsSync("notes.txt")).toBe(true);
    const plan = await fullIn("plan");
    await mine({ permissions: { allow: ["bash(touch made)"] } }, plan);
    expect(await run("bash", { command: "touch made" }, plan)).toMatchObject({ isError: true, text: expect.stringContaining("plan mode") });
    expect(existsSync("made")).toBe(false);
  });

  it("one settings file for s08 and s17: tools and servers beside permissions and hooks; a rule may name a tool found outside; trust is one record", async () => {
    const declarations = JSON.stringify([{ name: "shout", description: "Upper-case a text.", parameters: { type: "object", properties: { text: { type: "string" } } } }]);
    const tools = { toolDiscoveryCommand: `echo '${declarations}'`, toolCallCommand: "f() { tr a-z A-Z; }; f" };
    const project = { tools, permissions: { allow: ["shout"], deny: ["bash(touch denied)"], ask: ["Bash"] }, hooks: { PreToolUse: [{ matcher: "shout", command: "touch hook-ran" }] } };
    writeJson(".agent/settings.json", project);
    writeJson(PERSONAL(), { theme: "dark", trustedProjects: { [workspace.dir]: { tools } } }); // s08's yes, from an earlier session
    term.useTerminal(term.scriptedTerminal(["a"], new PassThrough() as unknown as NodeJS.WriteStream));
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    expect(full.TOOLS.map((t) => t.name)).toContain("shout"); // s08 read the file whole: permissions and hooks are no unknown setting
    expect(printed.filter((line) => line.startsWith("[tools]") || line.startsWith("[settings]"))).toEqual([
      "[tools] discovery command: shout",
      expect.stringMatching(/^\[settings\] \.agent\/settings\.json: permissions\.ask\[0\] "Bash" cannot be read: this agent has no tool "Bash" \(its tools: bash, read_file, .*, shout; names are case-sensitive\); it is ignored$/),
    ]);
    expect(await run("shout", { text: "hi" })).toEqual({ text: '{"TEXT":"HI"}', isError: false });
    expect(existsSync("hook-ran")).toBe(true);
    expect(listOf("bash", { command: "touch denied" })).toBe("deny");
    expect(JSON.parse(readFileSync(PERSONAL(), "utf8"))).toEqual({
      theme: "dark",
      trustedProjects: { [workspace.dir]: { tools, permissions: { allow: ["shout"] }, hooks: { PreToolUse: project.hooks.PreToolUse, PostToolUse: [], UserPromptSubmit: [], Stop: [] } } },
    });
    rmSync(".agent/settings.json");
    await full.prepareReplay({ description: "", prompts: [], replies: [] }); // drops the found tool again
  });

  it("with no one to trust them, the project's deny rules count and its allow rules and hooks do not", async () => {
    writeJson(".agent/settings.json", { permissions: { allow: ["bash(touch allowed)"], deny: ["bash(touch denied)"] }, hooks: { PreToolUse: [{ command: "touch hook-ran" }] } });
    expect(await (full as Stage17).loadSettings()).toEqual([
      "not used: permissions.allow[0], hooks.PreToolUse[0] (no one is at the terminal to trust them: start the agent at a terminal once, or list them under trustedProjects in ~/.agent/settings.json)",
    ]);
    expect(await run("bash", { command: "touch denied" })).toMatchObject({ isError: true, text: expect.stringContaining("deny bash(touch denied)") });
    expect(await run("bash", { command: "touch allowed" })).toMatchObject({ isError: true, text: expect.stringContaining("no one is at the terminal") });
    expect(["allowed", "denied", "hook-ran"].filter((name) => existsSync(name))).toEqual([]);
  });

  it("PreToolUse gets the call on stdin and exit 2 blocks it; PostToolUse's words follow a large result's preview, so the model reads them", async () => {
    await mine({
      permissions: { allow: ["bash"] },
      hooks: { PreToolUse: [{ matcher: "bash", command: "cat > seen.json; grep -q forbidden seen.json && { echo 'not that' >&2; exit 2; }; exit 0" }], PostToolUse: [{ matcher: "bash", command: "echo 'lint: clean'" }] },
    });
    expect(await run("bash", { command: "echo forbidden > f" })).toEqual({ text: "Not run: a PreToolUse hook blocked it: not that", isError: true });
    expect(existsSync("f")).toBe(false);
    const big = await run("bash", { command: "seq 1 20000" });
    expect(JSON.parse(readFileSync("seen.json", "utf8"))).toEqual({ hook_event_name: "PreToolUse", cwd: workspace.dir, tool_name: "bash", tool_input: { command: "seq 1 20000" } });
    expect(big.text).toMatch(/The whole result is in \.agent\/tool-results\/toolu_s17_\d+\.txt[^]*\n20000\n\n\n<post-tool-use-hook>\nlint: clean\n<\/post-tool-use-hook>$/);
    expect(big.text.length).toBeLessThan(8_000);
  });

  it("UserPromptSubmit: its words join the prompt, in the history and the session log; exit 2 takes the prompt back, from the log too", async () => {
    await mine({ hooks: { UserPromptSubmit: [{ command: "grep -q key && { echo 'no secrets in prompts' >&2; exit 2; }; echo 'branch: main'" }] } });
    const served = replay(scenarioOf([reply.text("On main.")], { prompts: ["Which branch?"] }));
    const history = await inSession(full.runTurn, ["Which branch?", "my key is sk-123"]);
    const hooked = { role: "user", content: "Which branch?\n\n<user-prompt-submit-hook>\nbranch: main\n</user-prompt-submit-hook>" };
    expect(textOf(served.requests[0].messages[0].content)).toBe(hooked.content);
    expect([...history]).toEqual([hooked, { role: "assistant", content: expect.any(Array) }]);
    expect(sessionLines().slice(1)).toEqual(JSON.parse(JSON.stringify([...history])));
    expect(printed).toContain("[not sent: a UserPromptSubmit hook blocked the prompt: no secrets in prompts]");
  });

  it("Stop exit 2 sends the model back, at most 3 more times, in one turn with one line of its tokens", async () => {
    await mine({ hooks: { Stop: [{ command: "echo 'tests still fail' >&2; exit 2" }] } });
    const served = replay(scenarioOf([reply.text("Done."), reply.text("Really done."), reply.text("Done now."), reply.text("Truly.")], { prompts: ["Fix it."] }));
    await full.prepareReplay({ description: "", prompts: [], replies: [] }); // the tallies at zero; the settings read again
    await inSession(full.runTurn, ["Fix it."]);
    expect(served.requests).toHaveLength(4);
    expect(textOf(served.requests[1].messages.at(-1)!.content)).toBe("<stop-hook>\nA Stop hook did not let the turn end yet:\ntests still fail\n</stop-hook>");
    expect(printed).toContain("[a Stop hook still objects after 3 more rounds; the turn ends: tests still fail]");
    expect(printed.filter((line) => line.startsWith("[this turn:"))).toEqual([expect.stringMatching(/^\[this turn: \d+ in/)]);
    expect(full.sessionTally().requests).toBe(4);
  });

  it("a subagent's calls meet the same rules and hooks as the parent's", async () => {
    await mine({ permissions: { deny: ["bash(rm:*)"] }, hooks: { PreToolUse: [{ command: "cat >> calls.jsonl; echo >> calls.jsonl" }] } });
    const served = replay(
      scenarioOf([
        reply.tools([{ id: "toolu_side", name: "task", input: { description: "clean", prompt: "Remove build/." } }]),
        reply.tools([{ id: "toolu_child_rm", name: "bash", input: { command: "rm -rf build" } }]),
        reply.text("I could not remove it: a rule forbids rm."),
        reply.text("The subagent was refused."),
      ]),
    );
    mkdirSync("build");
    await inSession(full.runTurn, ["Clean up."]);
    const refusal = served.requests[2].messages.at(-1)!.content as ToolResultBlockParam[];
    expect(resultText(refusal[0])).toBe("Not run: the rule deny bash(rm:*) (permissions.deny[0] in ~/.agent/settings.json) forbids it.");
    expect(existsSync("build")).toBe(true);
    expect(readFileSync("calls.jsonl", "utf8").trim().split("\n").map((line) => JSON.parse(line).tool_name)).toEqual(["task"]); // a denied call reaches no hook
  });
});

describe("the capstone's background tasks: bash run_in_background, bash_output, kill_task, and their notices (s18)", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  quietStdout();
  const replay = useReplay();
  type Stage18 = Full & {
    loadSettings(): Promise<string[]>;
    taskList(): { id: string; status: string }[];
    TASK_LIMITS: { running: number; timeLimitMs: number; finishedKept: number; noticeLines: number };
  };
  const stage18 = full as unknown as Stage18;
  const limits = { ...stage18.TASK_LIMITS };
  const PERSONAL = () => path.join(os.homedir(), ".agent", "settings.json");
  beforeEach(async () => {
    // The person allows every command (s17): the approval itself is tested in s18's own tests.
    mkdirSync(path.dirname(PERSONAL()), { recursive: true });
    writeFileSync(PERSONAL(), JSON.stringify({ permissions: { allow: ["bash"] } }));
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
  });
  afterEach(async () => {
    Object.assign(stage18.TASK_LIMITS, limits);
    rmSync(PERSONAL(), { force: true });
    await full.prepareReplay({ description: "", prompts: [], replies: [] }); // ends what a test left running
  });
  let ids = 0;
  const run = async (name: string, input: object) => full.runTool({ type: "tool_use", id: `toolu_s18_${++ids}`, name, input } as ToolUseBlock);
  const background = (command: string) => run("bash", { command, run_in_background: true });
  const statusOf = (id: string) => stage18.taskList().find((task) => task.id === id)?.status;
  async function pidsIn(file: string, count: number): Promise<number[]> {
    const read = () => (existsSync(file) ? readFileSync(file, "utf8").trim().split(/\s+/).filter(Boolean).map(Number) : []);
    await eventually(() => read().length >= count, 3000);
    return read();
  }
  /** Where the notices are in a request: the tool_use ids of the results holding one, and "prompt N" for a text message. */
  const noticePlaces = (request: MessageCreateParams) =>
    request.messages.flatMap((message, i) =>
      blocksOf(message).length === 0 || typeof message.content === "string"
        ? (textOf(message.content).includes("<notice>") ? [`prompt ${i}`] : [])
        : blocksOf(message).flatMap((block) => (block.type === "tool_result" && resultText(block as ToolResultBlockParam).includes("<notice>") ? [block.tool_use_id!] : block.type === "text" && block.text?.includes("<notice>") ? [`prompt ${i}`] : [])),
    );

  it("answers at once with bg_1 while the command runs on; bash_output gives what is new and the status; kill_task ends it and all it started", async () => {
    const first = await background("echo one; while [ ! -e go ]; do sleep 0.02; done; echo two; exit 3");
    expect(resultText(first)).toBe('Started bg_1 in the background. Read its output with bash_output ("bg_1"), end it with kill_task; you will be told when it ends.');
    expect(statusOf("bg_1")).toBe("running");
    // bash_output reads what is new, so read until "one" has come (it may take a few reads).
    let seen = "";
    for (let i = 0; i < 100 && !seen.includes("one\n"); i++) {
      seen += resultText(await run("bash_output", { task_id: "bg_1" })).split("\n").slice(2).join("\n");
      if (!seen.includes("one\n")) await new Promise((done) => setTimeout(done, 20));
    }
    expect(seen).toContain("one\n");
    writeFileSync("go", "");
    expect(await eventually(() => statusOf("bg_1") !== "running")).toBe(true);
    expect(resultText(await run("bash_output", { task_id: "bg_1" }))).toMatch(/^bg_1 \(.*\): exit code 3\.\nOutput since the last read:\ntwo\n$/);
    await background("echo $$ > pids; sleep 30 & echo $! >> pids; setsid sleep 30 > /dev/null 2>&1 & echo $! >> pids; wait");
    const pids = await pidsIn("pids", 3);
    try {
      expect(resultText(await run("kill_task", { task_id: "bg_2" }))).toMatch(/^Ended bg_2 and everything it started\.\nbg_2 \(.*\): ended by kill_task\./);
      expect(await eventually(() => pids.every((pid) => !isRunning(pid)), 1500), `still running: ${pids.filter(isRunning)}`).toBe(true);
    } finally {
      killAll(pids);
    }
  });

  it("runs at most 8 at once: the ninth is an error naming the eight", async () => {
    for (let i = 1; i <= 8; i++) await background(`sleep 30 # task ${i}`);
    const ninth = await background("echo nine");
    expect(ninth.is_error).toBe(true);
    expect(resultText(ninth)).toMatch(/^Error: 8 background tasks are running, the most at once: bg_1 \(sleep 30 # task 1\), .*bg_8 \(sleep 30 # task 8\)\. Read them with bash_output/);
  });

  it("a notice rides in the last result of the next reply, once, after s09's reminder (both there, in that order), its is_error kept", async () => {
    const todo = (status: string) => ({ name: "todo_write", input: { todos: [{ id: "a", content: "Build and test", status }] } });
    const meanwhile = { name: "bash", input: { command: "while [ ! -e built ]; do sleep 0.02; done; sleep 0.1; echo tests ok" } };
    const session = replay(
      scenarioOf([
        reply.tools([todo("in_progress"), { name: "bash", input: { command: "echo compiling; touch built", run_in_background: true } }]),
        reply.tools([{ name: "ls", input: {} }]),
        reply.tools([{ name: "ls", input: {} }]),
        reply.tools([meanwhile, { id: "toolu_missing", name: "read_file", input: { path: "missing.txt" } }]),
        reply.tools([{ name: "ls", input: {} }]),
        reply.text("done"),
      ]),
    );
    await inSession(full.runTurn, ["build, and test meanwhile"]);
    for (const request of session.requests) expect(pairProblems(request)).toEqual([]);
    expect(noticePlaces(session.requests.at(-1)!)).toEqual(["toolu_missing"]);
    const missing = resultIn(session.requests[4], "toolu_missing")!;
    expect(missing.is_error).toBe(true);
    expect(resultText(missing)).toMatch(/^Error: .*missing\.txt[^]*\n\n<reminder>From the harness, not the tool: [^]*<\/reminder>\n\n<notice>From the harness, not the tool:\nbg_1 \(echo compiling; touch built\) ended: exit code 0\.\nIts last lines:\n {2}compiling\nbash_output\("bg_1"\) gives all it printed since your last read\.\n<\/notice>$/);
  });

  it("a task that ends after the turn: its notice goes in front of the next prompt, as the session log keeps it; a Stop hook and UserPromptSubmit see the prompt as typed", async () => {
    writeFileSync(PERSONAL(), JSON.stringify({ permissions: { allow: ["bash"] }, hooks: { UserPromptSubmit: [{ command: "cat >> prompts.jsonl; echo >> prompts.jsonl" }] } }));
    await stage18.loadSettings();
    const session = replay(scenarioOf([reply.tools([{ name: "bash", input: { command: "echo built app", run_in_background: true } }]), reply.text("Building."), reply.text("It built.")]));
    const history = await inSession(full.runTurn, ["start the build"]);
    expect(await eventually(() => statusOf("bg_1") === "exit code 0")).toBe(true);
    await inSession(full.runTurn, ["how did it go?"], history);
    const prompt = session.requests[2].messages[4];
    expect(textOf(prompt.content)).toMatch(/^<notice>From the harness, not the person:\nbg_1 \(echo built app\) ended: exit code 0\.\nIts last lines:\n {2}built app\nbash_output\("bg_1"\) gives all it printed since your last read\.\n<\/notice>\n\nhow did it go\?$/);
    expect(noticePlaces(session.requests[2])).toEqual(["prompt 4"]);
    expect(sessionLines().slice(1)).toEqual(JSON.parse(JSON.stringify([...history])));
    expect(readFileSync("prompts.jsonl", "utf8").trim().split("\n").map((line) => JSON.parse(line).prompt)).toEqual(["start the build", "how did it go?"]);
  });

  it("a subagent starts no background task, has no bash_output or kill_task, and its results carry no notice: the parent's does", async () => {
    // The task ends while the subagent works: the child's own command lets it go, then waits until it has.
    await background("while [ ! -e go ]; do sleep 0.02; done; echo early; touch gone");
    const session = replay(
      scenarioOf([
        reply.tools([{ id: "toolu_side", name: "task", input: { description: "serve", prompt: "Start the server." } }]),
        reply.tools([
          { id: "toolu_child_bg", name: "bash", input: { command: "sleep 30", run_in_background: true } },
          { id: "toolu_child_go", name: "bash", input: { command: "touch go; until [ -e gone ]; do sleep 0.02; done; sleep 0.3" } },
        ]),
        reply.text("I could not start it in the background."),
        reply.text("The subagent could not."),
      ]),
    );
    await inSession(full.runTurn, ["Start the server with a helper."]);
    const child = session.requests[1];
    const given = child.tools!.map((tool) => (tool as { name: string }).name);
    for (const name of ["bash_output", "kill_task", "task"]) expect(given).not.toContain(name);
    const refused = resultIn(session.requests[2], "toolu_child_bg")!;
    expect(resultText(refused)).toBe("Error: background tasks belong to the main agent: run the command in the foreground, or report back and let the main agent start it");
    expect(stage18.taskList().map((task) => task.id)).toEqual(["bg_1"]);
    expect(statusOf("bg_1")).toBe("exit code 0");
    expect(noticePlaces(session.requests[0])).toEqual([]);
    expect(noticePlaces(session.requests[2])).toEqual([]);
    expect(noticePlaces(session.requests[3])).toEqual(["toolu_side"]);
  });

  it("every task, and what it started, ends when the program ends (a real program)", async () => {
    const standIn = await startStandIn(
      scenarioOf([
        reply.tools([{ name: "bash", input: { command: "echo $$ > pids; sleep 30 & echo $! >> pids; setsid sleep 30 > /dev/null 2>&1 & echo $! >> pids; wait", run_in_background: true } }]),
        reply.tools([{ name: "bash", input: { command: "until [ -s pids ] && [ $(wc -l < pids) -ge 3 ]; do sleep 0.02; done; cat pids" } }]),
        reply.text("The server runs in the background."),
      ]),
    );
    let pids: number[] = [];
    try {
      const env = { ...withTmpdir(process.env, workspace.dir), ANTHROPIC_API_KEY: "sk-ant-test-0123456789abcdef", ANTHROPIC_BASE_URL: standIn.url, APPROVAL_MODE: "yolo" };
      const child = spawn(process.execPath, ["--import", TSX_LOADER, FILE, "start the server"], { cwd: workspace.dir, env, stdio: ["ignore", "pipe", "ignore"] });
      let stdout = "";
      child.stdout.on("data", (chunk) => (stdout += chunk));
      const [code] = await once(child, "close");
      expect(code).toBe(0);
      // The person hears that it ends with the program: the model last said it runs on.
      expect(stdout).toMatch(/^\[bg_1 \(echo \$\$ > pids; sleep 30 .*\) was still running: it ends with the program\]$/m);
      pids = readFileSync(path.join(workspace.dir, "pids"), "utf8").trim().split(/\s+/).map(Number);
      expect(pids).toHaveLength(3);
      expect(await eventually(() => pids.every((pid) => !isRunning(pid)), 1500), `still running: ${pids.filter(isRunning)}`).toBe(true);
    } finally {
      killAll(pids);
      await standIn.close();
    }
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
  const logged = () => sessionLines().slice(1);

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

  it("Ctrl-C mid-text: the turn ends at once, the history and the session log keep the complete block only, the next prompt works", async () => {
    const [upToHalf, rest] = splitAt(await eventsOf(texts("First, the plan.", "Then a long explanation the person will not wait for.")), /"index":1,"delta"/, 2);
    provider.scripts = [[...upToHalf, "wait", ...rest], await eventsOf(reply.text("Shorter, then."))];
    const messages = streaming.startHistory();
    const { running, screen } = turn(messages, "explain");
    await until(() => screen().includes("Then a long explana"), "the second block, half shown");
    const pressed = Date.now();
    streaming.term.interrupt();
    await running;
    expect(Date.now() - pressed).toBeLessThan(500);
    await until(() => provider.hungUp[0] === true, "the request to be aborted");
    expect(screen()).toContain("[the reply was interrupted (Ctrl-C); what was complete of it is kept]");
    const kept: MessageParam = { role: "assistant", content: [{ type: "text", text: "First, the plan.", citations: null }] };
    expect([...messages]).toEqual([{ role: "user", content: "explain" }, kept]);
    expect(logged()).toEqual([{ role: "user", content: "explain" }, kept]);
    await turn(messages, "keep it short").running;
    expect(apiProblem(provider.requests[1])).toBeUndefined();
  });

  it("Ctrl-C mid-call: the complete call is kept and answered as not run, in the history and the session log; nothing runs", async () => {
    const calls = reply.tools([
      { id: "toolu_whole", name: "write_file", input: { path: "whole.txt", content: "x" } },
      { id: "toolu_half", name: "write_file", input: { path: "half.txt", content: "a long content the model is still writing" } },
    ]);
    const [upToHalf, rest] = splitAt(await eventsOf(calls), /"index":1,"delta"/, 2);
    provider.scripts = [[...upToHalf, "wait", ...rest], await eventsOf(reply.text("As you wish."))];
    const messages = streaming.startHistory();
    const { running, screen } = turn(messages, "write two files");
    await until(() => screen().includes("> WriteFile whole.txt"), "the first call on the screen");
    streaming.term.interrupt();
    await running;
    const notRun = { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_whole", is_error: true, content: "Not run: the person interrupted your reply (Ctrl-C) before this call could run." }] };
    expect(messages.slice(1)).toEqual([{ role: "assistant", content: [calls.content[0]] }, notRun]);
    expect(logged().at(-1)).toEqual(notRun);
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

describe("the capstone with PROVIDER=openai: s15's adapter is its provider, every reply whole (s15)", () => {
  useWorkspace();
  const printed = usePrinted();
  quietStdout();
  type Chat = { model: string; messages: Record<string, unknown>[]; tools?: { type: string; function: { name: string } }[]; tool_choice?: unknown };
  type Openai = Full & { NOT_JSON: string; main(args?: string[]): Promise<never> };

  /** The capstone (and the replay, from the same fresh copy of lib) loaded with these settings, which it reads when it loads. */
  async function fullWith(settings: Record<string, string>) {
    for (const [name, value] of Object.entries(settings)) vi.stubEnv(name, value);
    vi.resetModules();
    try {
      return { openai: (await import(FILE)) as Openai, replayIn: (await import("../lib/course/session.ts")).replayScenario };
    } finally {
      vi.unstubAllEnvs();
    }
  }
  /** The program, loaded afresh with these settings, run with `args`. */
  async function runWith(settings: Record<string, string>, args: string[]) {
    for (const [name, value] of Object.entries(settings)) vi.stubEnv(name, value);
    vi.resetModules();
    try {
      return await runMain(FILE, args);
    } finally {
      vi.unstubAllEnvs();
    }
  }
  afterAll(() => vi.resetModules());

  // A Chat Completions server on 127.0.0.1: each request gets the next answer. ANTHROPIC_BASE_URL
  // points here too, so a request that went over the Messages API instead (a stream) is seen.
  const received: { url: string; authorization?: string; body: Chat }[] = [];
  const answers: object[] = [];
  let server: import("node:http").Server;
  let url = "";
  beforeAll(async () => {
    const { createServer } = await import("node:http");
    server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as Chat;
      received.push({ url: req.url ?? "", authorization: req.headers.authorization, body });
      const problem = req.url === "/v1/chat/completions" ? chatProblem(body) : `no such path ${req.url}`;
      const answer = problem ? undefined : answers.shift();
      res.writeHead(answer ? 200 : 400, { "content-type": "application/json" });
      res.end(JSON.stringify(answer ?? { error: { message: problem ?? "no answer left" } }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));
  beforeEach(() => void (received.length = answers.length = 0));
  const WIRE = () => ({ PROVIDER: "openai", OPENAI_BASE_URL: url, OPENAI_API_KEY: "sk-test-123", MODEL_ID: "gpt-test", ANTHROPIC_BASE_URL: url, APPROVAL_MODE: "yolo" });
  const chatReply = (message: object, finish_reason = "stop") => ({ id: "chatcmpl-1", object: "chat.completion", model: "gpt-test", choices: [{ index: 0, message: { role: "assistant", content: null, ...message }, finish_reason }] });
  const callOf = (id: string, name: string, args: string) => ({ id, type: "function", function: { name, arguments: args } });

  it("replays the capstone's demo through the adapter: every request, the subagent's too, is Chat Completions, none streamed; the parent's text is shown once", async () => {
    const { openai, replayIn } = await fullWith({ PROVIDER: "openai" });
    const scenario = loadScenario("full");
    const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-full-openai-")));
    workspaces.push(workspace);
    const session = await replayIn(openai, scenario, { workspace });
    expect(session.problems).toEqual([]);
    expect(session.turnErrors).toEqual([]);
    expect(session.requests).toEqual([]); // nothing went to /v1/messages, streamed or whole
    expect(session.chatRequests).toHaveLength(scenario.replies.length);
    expect(compareWithScenario(session.messages, scenario)).toEqual([]);
    expect((session.chatRequests as Chat[]).filter((chat) => String(chat.messages[0].content).includes("You are a subagent"))).toHaveLength(3);
    // Not streamed, so showText prints the text (s13's stream would have written it to stdout).
    const first = (scenario.replies[0].content.find((block) => block.type === "text") as { text: string }).text;
    expect(printed.filter((line) => line === first)).toHaveLength(1);
    expect(printed.filter((line) => /\[callers of parseDate\] +\[chat\/completions: /.test(line))).toHaveLength(3); // a subagent's lines under its label
  });

  it("POSTs {OPENAI_BASE_URL}/chat/completions with the bearer key, MODEL_ID and the capstone's tools as functions; broken arguments are refused and the corrected call runs", async () => {
    const { openai } = await fullWith(WIRE());
    answers.push(
      chatReply({ tool_calls: [callOf("call_bad", "write_file", '{"path": "a.txt", "content": "A')] }, "tool_calls"),
      chatReply({ content: "Sorry, again:", tool_calls: [callOf("call_good", "write_file", '{"path":"a.txt","content":"A"}')] }, "tool_calls"),
      chatReply({ content: "Wrote a.txt." }),
    );
    await inSession(openai.agentLoop, ["Write a.txt"], openai.startHistory());
    expect(received.map((r) => r.url)).toEqual(Array(3).fill("/v1/chat/completions")); // never /v1/messages: no stream
    expect(received[0].authorization).toBe("Bearer sk-test-123");
    expect(received[0].body).toMatchObject({ model: "gpt-test", max_completion_tokens: 8000 });
    expect(received[0].body.tools!.map((tool) => [tool.type, tool.function.name])).toEqual(openai.TOOLS.map((tool) => ["function", tool.name]));
    expect(received[1].body.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_bad",
      content: 'Error: write_file was not run: its arguments are not a JSON object ("{\\"path\\": \\"a.txt\\", \\"content\\": \\"A"). Send the call again with valid JSON arguments.',
    });
    expect(received[2].body.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_good", content: expect.stringMatching(/^Wrote 1 byte/) });
    expect(readFileSync("a.txt", "utf8")).toBe("A");
    expect(printed.filter((line) => line === "Sorry, again:" || line === "Wrote a.txt.")).toEqual(["Sorry, again:", "Wrote a.txt."]);
  });

  it("a compaction's summary request goes through the adapter with tool_choice none", async () => {
    const { openai } = await fullWith(WIRE());
    writeFileSync("notes.txt", "first note\n");
    answers.push(
      chatReply({ tool_calls: [callOf("c1", "compact", "{}")] }, "tool_calls"),
      chatReply({ content: "Summary: nothing yet." }),
      chatReply({ content: "Done." }),
    );
    await openai.prepareReplay({ description: "", prompts: [], replies: [] });
    await inSession(openai.agentLoop, ["make room"], openai.startHistory());
    expect(received.map((r) => r.url)).toEqual(Array(3).fill("/v1/chat/completions"));
    expect(received[1].body.tool_choice).toBe("none");
    expect(JSON.stringify(received[2].body.messages)).toContain("Summary: nothing yet.");
  });

  it("settings: an unknown PROVIDER stops the start in one line; --record is refused; no key names OPENAI_API_KEY; --help lists them; --continue counts OPENAI_API_KEY as a key", async () => {
    expect(await runWith({ PROVIDER: "gemini" }, ["hello"])).toEqual({ code: 1, output: '[error] PROVIDER "gemini" is not one this stage speaks: anthropic (the default, the Messages API) or openai (Chat Completions)\n' });
    expect(await runWith({ PROVIDER: "openai" }, ["--record", "x"])).toEqual({ code: 1, output: "[error] --record saves Messages API replies: record with PROVIDER=anthropic\n" });
    expect((await runWith({ PROVIDER: "openai" }, ["a prompt"])).output).toMatch(/^\[error\] Your prompt needs a real model, and no key is set\. To use a real model with PROVIDER=openai: set OPENAI_API_KEY and MODEL_ID/);
    expect((await runWith({}, ["--help"])).output).toContain("PROVIDER=openai         speak Chat Completions instead of the Messages API");
    mkdirSync(SESSIONS, { recursive: true });
    const lines = [{ session: "20250601-090000-aaaaaa", version: 1, started: "2025-06-01T09:00:00.000Z" }, { role: "user", content: "Remember 7." }, { role: "assistant", content: [{ type: "text", text: "I will." }] }];
    writeFileSync(path.join(SESSIONS, "20250601-090000-aaaaaa.jsonl"), lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
    answers.push(chatReply({ content: "It was 7." }));
    expect((await runWith(WIRE(), ["--continue", "Which number?"])).code).toBe(0);
    expect(received[0].body.messages.map((m) => m.content)).toEqual([expect.any(String), "Remember 7.", "I will.", "Which number?"]);
  });
});

describe("the capstone's task board and team: teammates run the same loop, with the lead's rules and without its notices (s19)", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  quietStdout();
  const serve = useReplay();
  type Stage19 = Stage18Like & {
    teamList(): { name: string; state: string }[];
    updateTask(root: string, id: string, by: string, change: { status: string; owner?: string }): Promise<unknown>;
  };
  type Stage18Like = Full & { loadSettings(): Promise<string[]>; taskList(): { id: string; status: string }[] };
  const stage19 = full as unknown as Stage19;
  const PERSONAL = () => path.join(os.homedir(), ".agent", "settings.json");
  const settings = async (permissions: object) => {
    mkdirSync(path.dirname(PERSONAL()), { recursive: true });
    writeFileSync(PERSONAL(), JSON.stringify({ permissions }));
    await stage19.loadSettings();
  };
  beforeEach(async () => {
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await settings({ allow: ["bash", "write_file"] }); // the approval itself is tested in s19's own tests
  });
  afterEach(async () => {
    rmSync(PERSONAL(), { force: true });
    await full.prepareReplay({ description: "", prompts: [], replies: [] }); // stops the team a test left
  });
  let ids = 0;
  const run = async (name: string, input: object) => full.runTool({ type: "tool_use", id: `toolu_s19_${++ids}`, name, input } as ToolUseBlock);
  const stateOf = (name: string) => stage19.teamList().find((mate) => mate.name === name)?.state;
  const as = (agent: string, message: ReturnType<typeof reply.text>) => ({ ...message, agent });
  const ofAgent = (requests: MessageCreateParams[], name: string) => requests.filter((request) => textOf(request.system).includes(`Your name is ${name}.`));

  it("a teammate's request names it and the roster, offers its tools only (not spawn_teammate, task, todo_write, compact, bash_output, kill_task) and is not streamed; its lines carry [name]", async () => {
    const replay = serve(scenarioOf([as("alice", reply.tools([{ name: "task_list", input: {} }], "Looking.")), as("alice", reply.text("Nothing to do."))]));
    expect(resultText(await run("spawn_teammate", { name: "alice", prompt: "Check the board." }))).toMatch(/^alice has joined the team[^]*The team: lead, alice\./);
    expect(await eventually(() => stateOf("alice") === "idle")).toBe(true);
    const [first] = ofAgent(replay.requests, "alice");
    expect(first.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Check the board.", cache_control: { type: "ephemeral" } }] }]);
    expect(textOf(first.system)).toMatch(/The team: lead \(who leads it\), alice \(you\)\./);
    expect((first as { stream?: boolean }).stream).toBeFalsy();
    const tools = first.tools!.map((tool) => (tool as { name: string }).name);
    expect(tools).toEqual(expect.arrayContaining(["bash", "read_file", "grep", "task_create", "task_update", "task_list", "task_get", "send_message", "read_inbox"]));
    for (const name of ["spawn_teammate", "task", "todo_write", "compact", "bash_output", "kill_task"]) expect(tools).not.toContain(name);
    expect(printed).toEqual(expect.arrayContaining(["[alice] Looking.", "[alice] Nothing to do."]));
  });

  it("a claimed task is refused to another, naming the owner (the board region is s19's text, whose real-process race s19's tests hold)", async () => {
    expect(resultText(await run("task_create", { subject: "a", description: "" }))).toBe("Created task 1: a.");
    await stage19.updateTask(workspace.dir, "1", "alice", { status: "in_progress", owner: "alice" });
    await expect(stage19.updateTask(workspace.dir, "1", "bob", { status: "in_progress", owner: "bob" })).rejects.toThrow("task 1 is claimed by alice: only alice or the lead may change it");
  });

  it("the lead's turn waits while a teammate works, then the lead is woken with the notices, in a message the session log keeps; the teammate's history is not logged", async () => {
    const replay = serve(
      scenarioOf([
        reply.tools([{ name: "spawn_teammate", input: { name: "alice", prompt: "Check the board." } }]),
        reply.text("Waiting for alice."),
        as("alice", reply.text("Nothing to do.")),
        reply.text("alice is idle; done."),
      ]),
    );
    const history = await inSession(full.runTurn, ["split the work"]);
    expect(history.at(-2)).toEqual({ role: "user", content: [{ type: "text", text: expect.stringMatching(/^<notice>From the harness, not the person:\nalice is idle: no task on the board is free for it\. Its last words: "Nothing to do\."/) }] });
    expect(history.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: "alice is idle; done." }] });
    expect(ofAgent(replay.requests, "alice")).toHaveLength(1);
    const logged = sessionLines().slice(1);
    expect(logged).toEqual(JSON.parse(JSON.stringify([...history])));
    expect(logged).not.toContainEqual({ role: "user", content: "Check the board." });
    expect(printed.filter((line) => line.startsWith("[this turn:"))).toHaveLength(1); // s14: one line for the whole turn, the wake-up included
  });

  it("a teammate's call goes through the person's deny rule (s17), as the lead's does", async () => {
    await settings({ allow: ["bash"], deny: ["write_file"] });
    const replay = serve(scenarioOf([as("alice", reply.tools([{ id: "toolu_alice_write", name: "write_file", input: { path: "x.txt", content: "x" } }])), as("alice", reply.text("I may not write."))]));
    await run("spawn_teammate", { name: "alice", prompt: "Write x.txt." });
    expect(await eventually(() => stateOf("alice") === "idle")).toBe(true);
    const result = resultIn(ofAgent(replay.requests, "alice")[1], "toolu_alice_write")!;
    expect(resultText(result)).toMatch(/^Not run: the rule deny write_file \(.*\) forbids it\.$/);
    expect(existsSync("x.txt")).toBe(false);
  });

  it("a teammate starts no background task, and the notices ride in none of its results: they wait for the lead", async () => {
    expect(resultText(await run("bash", { command: "echo built", run_in_background: true }))).toMatch(/^Started bg_1/);
    expect(await eventually(() => stage19.taskList()[0]?.status === "exit code 0")).toBe(true);
    const replay = serve(
      scenarioOf([
        as("alice", reply.tools([{ id: "toolu_alice_bg", name: "bash", input: { command: "sleep 30", run_in_background: true } }, { id: "toolu_alice_ls", name: "ls", input: {} }])),
        as("alice", reply.text("Could not.")),
      ]),
    );
    await run("spawn_teammate", { name: "alice", prompt: "Start the server." });
    expect(await eventually(() => stateOf("alice") === "idle")).toBe(true);
    const second = ofAgent(replay.requests, "alice")[1];
    expect(resultText(resultIn(second, "toolu_alice_bg")!)).toBe("Error: background tasks are the lead's: run the command in the foreground.");
    expect(JSON.stringify(second.messages)).not.toContain("<notice>");
    expect(stage19.taskList().map((task) => task.id)).toEqual(["bg_1"]);
    const messages: MessageParam[] = [{ role: "user", content: "how did it go?" }];
    serve(scenarioOf([reply.text("Built.")]));
    await full.runTurn(messages);
    expect(textOf(messages[0].content)).toMatch(/^<notice>From the harness, not the person:\n[^]*bg_1 \(echo built\) ended: exit code 0\./);
  });

  it("Ctrl-C stops every teammate, and the lead hears it", async () => {
    serve(scenarioOf([as("alice", reply.text("Idle now.")), as("bob", reply.text("Idle too."))]));
    await run("spawn_teammate", { name: "alice", prompt: "Wait." });
    await run("spawn_teammate", { name: "bob", prompt: "Wait." });
    expect(await eventually(() => stateOf("alice") === "idle" && stateOf("bob") === "idle")).toBe(true);
    const exit = vi.spyOn(process, "exit").mockImplementation((() => undefined) as never);
    term.interrupt();
    expect(exit).not.toHaveBeenCalled();
    expect(await eventually(() => stateOf("alice") === "stopped" && stateOf("bob") === "stopped")).toBe(true);
    const messages: MessageParam[] = [{ role: "user", content: "what happened?" }];
    serve(scenarioOf([reply.text("They stopped.")]));
    await full.runTurn(messages);
    expect(textOf(messages[0].content)).toMatch(/alice has stopped: Ctrl-C stopped the team\.[^]*bob has stopped: Ctrl-C stopped the team\./);
  });
});

describe("the capstone's worktrees: a checkout per task, the core tools inside one, teammates in their task's, the agent's notes in the main workspace (s20)", () => {
  const workspace = useWorkspace();
  usePrinted();
  quietStdout();
  const serve = useReplay();
  const stage20 = full as unknown as Full & { loadSettings(): Promise<string[]>; teamList(): { name: string; state: string }[] };
  const PERSONAL = () => path.join(os.homedir(), ".agent", "settings.json");
  const settings = async (permissions: object) => {
    mkdirSync(path.dirname(PERSONAL()), { recursive: true });
    writeFileSync(PERSONAL(), JSON.stringify({ permissions }));
    await stage20.loadSettings();
  };
  /** git as the test runs it, reading no one's configuration. */
  const gitIn = (dir: string, ...args: string[]) =>
    execFileSync("git", args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" } }).trim();
  // A repository with one commit, made once and copied into each test's workspace: git init costs more than a copy.
  let template = "";
  beforeAll(() => {
    template = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-full-repo-")));
    for (const args of [["init", "-q", "--initial-branch=main"], ["config", "user.name", "Test"], ["config", "user.email", "test@example.com"]]) gitIn(template, ...args);
    writeFileSync(path.join(template, "hello.txt"), "hello\n");
    mkdirSync(path.join(template, "secrets"));
    writeFileSync(path.join(template, "secrets", "key.txt"), "sk-secret\n");
    gitIn(template, "add", "-A");
    gitIn(template, "commit", "-q", "-m", "start");
  });
  afterAll(() => rmSync(template, { recursive: true, force: true }));
  beforeEach(async () => {
    cpSync(template, workspace.dir, { recursive: true });
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
    await settings({ allow: ["bash", "write_file", "save_memory", "worktree_create", "worktree_remove"], deny: ["read_file(secrets/**)"] });
  });
  afterEach(async () => {
    rmSync(PERSONAL(), { force: true });
    await full.prepareReplay({ description: "", prompts: [], replies: [] });
  });
  let ids = 0;
  const run = async (name: string, input: object = {}) => {
    const result = await full.runTool({ type: "tool_use", id: `toolu_s20_${++ids}`, name, input } as ToolUseBlock);
    return (result.is_error ? "Error! " : "") + resultText(result);
  };
  const wt = (name: string) => path.join(workspace.dir, ".agent", "worktrees", name);
  const as = (agent: string, message: ReturnType<typeof reply.text>) => ({ ...message, agent });

  it("worktree_create, worktree_list and worktree_remove, with s20's guards: a name checked before git runs, uncommitted changes kept, a folder that is no repository told what to do", async () => {
    await run("task_create", { subject: "Greet", description: "" });
    expect(await run("worktree_create", { name: "../x" })).toMatch(/^Error! Error: "\.\.\/x" cannot be a worktree's name/);
    expect(gitIn(workspace.dir, "branch", "--format=%(refname:short)")).toBe("main");
    expect(await run("worktree_create", { name: "a", task_id: "1" })).toMatch(/^Created the worktree a at \.agent\/worktrees\/a, on the new branch wt\/a, bound to task 1/);
    expect(gitIn(wt("a"), "branch", "--show-current")).toBe("wt/a");
    writeFileSync(path.join(wt("a"), "new.txt"), "x");
    expect(await run("worktree_list")).toBe("a  branch wt/a  task 1  1 uncommitted change(s): ?? new.txt");
    expect(await run("worktree_remove", { name: "a" })).toMatch(/^Error! Error: the worktree a has uncommitted changes, so it was not removed:\n\?\? new\.txt/);
    expect(existsSync(path.join(wt("a"), "new.txt"))).toBe(true);
    expect(await run("worktree_remove", { name: "a", force: true })).toMatch(/^Removed the worktree a, throwing away its uncommitted changes:\n\?\? new\.txt\nDeleted the branch wt\/a/);
    rmSync(path.join(workspace.dir, ".git"), { recursive: true });
    expect(await run("worktree_create", { name: "b" })).toMatch(/is not a git repository, so it can have no worktrees\. Make it one with `git init`/);
  });

  it("read_file, write_file and bash with worktree work inside it, the main checkout untouched; ../ out of it is refused, and s17's path rules see the path as the sandbox resolves it there", async () => {
    await run("worktree_create", { name: "a" });
    expect(await run("write_file", { path: "notes.md", content: "in a\n", worktree: "a" })).toBe("Wrote 5 bytes to notes.md");
    expect(await run("read_file", { path: "notes.md", worktree: "a" })).toBe("     1\tin a");
    expect(await run("bash", { command: "pwd; git branch --show-current", worktree: "a" })).toBe(`${wt("a")}\nwt/a\n`);
    expect(existsSync(path.join(workspace.dir, "notes.md"))).toBe(false);
    expect(await run("read_file", { path: "../../../hello.txt", worktree: "a" })).toBe(`Error! Error: ../../../hello.txt is outside the workspace (${wt("a")})`);
    expect(await run("read_file", { path: "x", worktree: "nope" })).toBe('Error! Error: there is no worktree "nope". The worktrees: a.');
    // A link in the worktree alone: docs/key.txt is secrets/key.txt there, and the deny rule holds.
    symlinkSync("secrets", path.join(wt("a"), "docs"));
    expect(await run("read_file", { path: "docs/key.txt", worktree: "a" })).toMatch(/^Error! Not run: the rule deny read_file\(secrets\/\*\*\)/);
    // A saved result is the main workspace's from a worktree too (safePath), and the rules see the same path.
    mkdirSync(path.join(workspace.dir, ".agent", "tool-results"), { recursive: true });
    writeFileSync(path.join(workspace.dir, ".agent", "tool-results", "x.txt"), "saved\n");
    expect(await run("read_file", { path: ".agent/tool-results/x.txt", worktree: "a" })).toBe("     1\tsaved");
    await settings({ allow: ["bash"], deny: ["read_file(.agent/**)"] });
    expect(await run("read_file", { path: ".agent/tool-results/x.txt", worktree: "a" })).toMatch(/^Error! Not run: the rule deny read_file\(\.agent\/\*\*\)/);
  });

  it("a teammate whose task has a worktree works in it; its large results, memory and skills stay the main workspace's, so the worktree is removed without force", async () => {
    mkdirSync(path.join(workspace.dir, "skills", "notes"), { recursive: true });
    writeFileSync(path.join(workspace.dir, "skills", "notes", "SKILL.md"), "---\nname: notes\ndescription: How notes are written here.\n---\n# Notes, the house style\n");
    await run("task_create", { subject: "In a worktree", description: "" });
    await run("worktree_create", { name: "w", task_id: "1" });
    await run("worktree_create", { name: "v" }); // not alice's
    const replay = serve(
      scenarioOf([
        as("alice", reply.tools([{ name: "task_update", input: { task_id: "1", status: "in_progress", owner: "alice" } }])),
        as("alice", reply.tools([
          { name: "write_file", input: { path: "done.txt", content: "alice" } },
          { name: "bash", input: { command: "pwd" } },
          { id: "toolu_alice_big", name: "bash", input: { command: "seq 1 20000" } },
          { name: "save_memory", input: { fact: "Notes go in done.txt." } },
          { name: "load_skill", input: { name: "notes" } },
        ])),
        // The preview names .agent/tool-results/…: read where it says, from inside the worktree.
        as("alice", reply.tools([
          { name: "read_file", input: { path: ".agent/tool-results/toolu_alice_big.txt", offset: 19999 } },
          { name: "read_file", input: { path: "hello.txt", worktree: "w" } },
          { name: "read_file", input: { path: "hello.txt", worktree: "v" } },
        ])),
        as("alice", reply.text("Done.")),
      ]),
    );
    expect(await run("spawn_teammate", { name: "alice", prompt: "Take task 1." })).toContain("When it works on a task that has a worktree, it works in that worktree.");
    expect(await eventually(() => stage20.teamList().find((mate) => mate.name === "alice")?.state === "idle")).toBe(true);
    const alices = replay.requests.filter((request) => textOf(request.system).includes("Your name is alice."));
    expect(textOf(alices[0].system)).toContain(`working in ${workspace.dir}.`); // no task yet: the main checkout
    expect(textOf(alices[1].system)).toContain(`working in ${wt("w")}.`);
    expect(alices[0].tools!.map((tool) => (tool as { name: string }).name).filter((name) => name.startsWith("worktree_"))).toEqual([]); // the lead plans the worktrees
    expect(readFileSync(path.join(wt("w"), "done.txt"), "utf8")).toBe("alice");
    expect(existsSync(path.join(workspace.dir, "done.txt"))).toBe(false);
    const results = alices[2].messages.at(-1)!.content as ToolResultBlockParam[];
    expect(resultText(results[1])).toBe(`${wt("w")}\n`);
    expect(resultText(results[2])).toContain(".agent/tool-results/toolu_alice_big.txt");
    expect(resultText(results[4])).toContain("# Notes, the house style");
    expect(readFileSync(path.join(workspace.dir, ".agent/tool-results/toolu_alice_big.txt"), "utf8")).toMatch(/^1\n2\n[^]*\n20000\n$/);
    const readBack = (alices[3].messages.at(-1)!.content as ToolResultBlockParam[])[0];
    expect(readBack.is_error, resultText(readBack)).toBeFalsy();
    expect(resultText(readBack)).toMatch(/\b19999\b[^]*\b20000\b/);
    // A teammate names no worktree, its own or another's: it works where its task is already.
    for (const named of (alices[3].messages.at(-1)!.content as ToolResultBlockParam[]).slice(1)) {
      expect(named.is_error).toBe(true);
      expect(resultText(named)).toBe("Error: alice works where its task is (a task's worktree is its root already): a teammate names no worktree");
    }
    expect(readFileSync(path.join(workspace.dir, ".agent/MEMORY.md"), "utf8")).toContain("- Notes go in done.txt.");
    expect(existsSync(path.join(wt("w"), ".agent"))).toBe(false);
    expect(gitIn(wt("w"), "status", "--porcelain")).toBe("?? done.txt");
    gitIn(wt("w"), "add", "-A");
    gitIn(wt("w"), "commit", "-q", "-m", "alice's work");
    // Task 1 is still alice's, in progress: removed, her next call would land in the main checkout.
    expect(await run("worktree_remove", { name: "w" })).toMatch(/^Error! Error: the worktree w is task 1's, which alice has in_progress: removed, that work would go on in the main checkout/);
    expect(await run("task_update", { task_id: "1", status: "completed" })).not.toMatch(/^Error!/);
    expect(await run("worktree_remove", { name: "w" })).toMatch(/^Removed the worktree w\./);
  });
});
