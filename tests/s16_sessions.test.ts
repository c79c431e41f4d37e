// s16: nothing is lost when the program ends. Each message is appended to the session's file,
// one JSON line, as it enters the history (a program killed during a call leaves the call on
// disk: the one test with a real process); --continue and --resume give a later program the
// history back, repaired where the program ended mid-way, and new messages go to the same
// file; --resume alone lists the sessions. Every repair is checked against what the API
// refuses (lib/course/replay.ts apiProblem), and every file that is not a session, however
// hostile, is refused with its name, at once.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { MessageCreateParams, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { apiProblem } from "../lib/course/replay.ts";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { eventually, reply, resultText, runMain, scenarioOf, stageFile, startStandIn, TSX_LOADER, usePrinted, useReplay, useWorkspace, withTmpdir } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s16");
type Log = MessageParam[] & { id: string | undefined };
type Stage = {
  agentLoop(messages: MessageParam[]): Promise<void>;
  startHistory(args?: string[]): Log;
  repaired(logged: MessageParam[]): { messages: MessageParam[]; notes: string[] };
  newSessionId(now?: Date): string;
  prepareReplay(scenario: object): void;
  INTERRUPTED: string;
};
const stage = (await import(FILE)) as Stage;
const KEY = "sk-ant-test-0123456789abcdef";
const SESSIONS = ".agent/sessions";

// ---- Session files, written and read as the tests need them ----

const header = (id: string) => ({ session: id, version: 1, started: "2025-06-01T09:00:00.000Z" });
/** A session file of `lines` (objects, one JSON line each), then `tail` (a line cut short, say). */
function writeSession(id: string, messages: unknown[], tail = ""): string {
  mkdirSync(SESSIONS, { recursive: true });
  const file = path.join(SESSIONS, `${id}.jsonl`);
  writeFileSync(file, [header(id), ...messages].map((line) => `${JSON.stringify(line)}\n`).join("") + tail);
  return file;
}
/** The one session file of the workspace. */
function onlySession(): string {
  const names = readdirSync(SESSIONS).filter((name) => name.endsWith(".jsonl"));
  expect(names).toHaveLength(1);
  return path.join(SESSIONS, names[0]);
}
const linesOf = (file: string) => readFileSync(file, "utf8").split("\n").slice(0, -1).map((line) => JSON.parse(line));

const call = (id: string, name = "bash", input: object = { command: "make" }) => ({ type: "tool_use", id, name, input });
const result = (id: string, content = "ok") => ({ type: "tool_result", tool_use_id: id, content });
const text = (t: string) => ({ type: "text", text: t });
const user = (content: unknown) => ({ role: "user", content }) as MessageParam;
const assistant = (...content: unknown[]) => ({ role: "assistant", content }) as MessageParam;
const interrupted = (id: string) => ({ type: "tool_result", tool_use_id: id, is_error: true, content: stage.INTERRUPTED });

/** What the API would refuse in a request that sends `messages` with the stage's tools (none: it accepts it). */
const refusal = (messages: MessageParam[]) => apiProblem({ model: "m", max_tokens: 1, tools: [{ name: "bash", input_schema: { type: "object" } }], messages } as MessageCreateParams);

// ---------------------------------------------------------------------------------------

describe("s16 appends each message to the session's file as it enters the history", () => {
  useWorkspace();
  const printed = usePrinted();

  it("a new session: no file until the first message; then a header and one JSON line per message, in order, always the whole history", () => {
    const log = stage.startHistory();
    expect(existsSync(SESSIONS)).toBe(false); // starting and quitting leaves nothing behind
    log.push(user("first"));
    const file = onlySession();
    expect(path.basename(file)).toBe(`${log.id}.jsonl`);
    expect(linesOf(file)).toEqual([expect.objectContaining({ session: log.id, version: 1 }), user("first")]);
    log.push(assistant(call("toolu_1")), user([result("toolu_1")]));
    expect(linesOf(file).slice(1)).toEqual([...log]);
    expect(readFileSync(file, "utf8").split("\n")).toHaveLength(5); // 4 lines, each ended
    expect(printed.join("\n")).toContain(`[session ${log.id}: each message is saved to ${SESSIONS}/${log.id}.jsonl as it comes; --continue resumes it]`);
    // The agent's notes, not the project's files; and only the person may read what the agent read.
    expect(readFileSync(path.join(SESSIONS, ".gitignore"), "utf8")).toBe("*\n");
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("a copy of the history (slice, map, filter) is a plain array that writes nothing", () => {
    const log = stage.startHistory();
    log.push(user("first"));
    const copy = log.slice();
    copy.push(user("not logged"));
    log.filter(() => true).push(user("nor this"));
    expect(copy.constructor).toBe(Array);
    expect(linesOf(onlySession())).toHaveLength(2);
  });

  it("a write that fails loses nothing: the person is told once, the session goes on, and the next write that works adds what was missed, in order", () => {
    writeFileSync(".agent", "a file where the folder would go");
    const log = stage.startHistory();
    log.push(user("one"));
    log.push(assistant(text("two")));
    expect(log).toHaveLength(2);
    expect(printed.filter((line) => line.startsWith("[warning] the session cannot be saved"))).toHaveLength(1);
    rmSync(".agent");
    log.push(user("three"));
    expect(linesOf(onlySession()).slice(1)).toEqual([user("one"), assistant(text("two")), user("three")]);
  });

  it("a file not as this program left it (another program on the same session, a write cut short, the file removed): the session goes on in a new file, whole, and both files resume", () => {
    const sessions = () => readdirSync(SESSIONS).filter((name) => name.endsWith(".jsonl")).sort();
    const mine = stage.startHistory();
    mine.push(user("one"));
    const first = mine.id!;
    // A second program resumes the same session and answers first: its lines are in the file now.
    const other = stage.startHistory(["--resume", first]);
    other.push(user("from the other program"));
    mine.push(assistant(call("toolu_1")), user([result("toolu_1")]));
    expect(mine.id).not.toBe(first);
    expect(printed.join("\n")).toContain(`[warning] ${SESSIONS}/${first}.jsonl is not as this program left it (another program wrote to it, a write was cut short, or it was removed): the session goes on in ${SESSIONS}/${mine.id}.jsonl, whole`);
    for (const id of [first, mine.id!]) expect(refusal([...stage.startHistory(["--resume", id])])).toBeUndefined();
    expect([...stage.startHistory(["--resume", mine.id!])]).toEqual([...mine]);
    expect([...stage.startHistory(["--resume", first])]).toEqual([user("one"), user("from the other program")]);
    // Removed (the model ran git clean -xdf): the next message makes a new file with everything.
    rmSync(".agent", { recursive: true });
    mine.push(assistant(text("done")));
    expect(sessions()).toEqual([`${mine.id}.jsonl`]);
    expect(linesOf(onlySession()).slice(1)).toEqual([...mine]);
    // Half a line at the end (a write a full disk cut short): nothing is glued to it.
    const cut = mine.id!;
    appendFileSync(onlySession(), '{"role":"user","cont');
    mine.push(user("again"));
    expect(mine.id).not.toBe(cut);
    expect([...stage.startHistory(["--resume", mine.id!])]).toEqual([...mine]);
  });

  it("ids sort by time and differ within one second", () => {
    const now = new Date("2025-06-01T14:22:33.456Z");
    const [a, b] = [stage.newSessionId(now), stage.newSessionId(now)];
    expect(a).toMatch(/^20250601-142233-[0-9a-f]{6}$/);
    expect(a).not.toBe(b);
    expect(stage.newSessionId(new Date("2025-06-01T14:22:34Z")) > a).toBe(true);
  });

  it("the demo: the whole session is in the file, and the call the model made to look at it was its last line, written before it ran", async () => {
    const scenario = loadScenario("s16");
    const session = await replayScenario(stage, scenario, { workspace: process.cwd() });
    expectWholeSession("s16", session, scenario);
    expect(linesOf(onlySession()).slice(1)).toEqual(JSON.parse(JSON.stringify(session.messages)));
    const look = session.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((b) => b.type === "tool_result" && b.tool_use_id === "toolu_s16_demo_05");
    const [count, last] = resultText(look as ToolResultBlockParam).split("\n");
    expect(count).toMatch(/^11 \d{8}-\d{6}-[0-9a-f]{6}\.jsonl$/);
    expect(last).toContain('{"role":"assistant","content":[{"type":"text","text":"The session file, counted');
    expect(readFileSync("cli.mjs", "utf8")).toContain('if (args.includes("--version"))');
  });
});

describe("s16 resumes a session: the earlier messages, then the new prompt, into the same file", () => {
  useWorkspace();
  const printed = usePrinted();
  const replay = useReplay();
  const earlier = [user("Add a test."), assistant(call("toolu_a", "write_file", { path: "t.js", content: "x" })), user([result("toolu_a", "Wrote 1 bytes")]), assistant(text("Added t.js."))];

  it("--continue: the first request holds the earlier messages and the prompt; the new messages are appended to the same file", async () => {
    const file = writeSession("20250601-090000-aaaaaa", earlier);
    const before = readFileSync(file, "utf8");
    const served = replay(scenarioOf([reply.text("Run it with node t.js.")]));
    const history = stage.startHistory(["--continue"]);
    history.push(user("How do I run it?"));
    await stage.agentLoop(history);
    expect(served.requests[0].messages).toEqual([...earlier, user("How do I run it?")]);
    const after = readFileSync(file, "utf8");
    expect(after.startsWith(before)).toBe(true); // appended, never rewritten
    expect(linesOf(file).slice(1)).toEqual(JSON.parse(JSON.stringify([...history])));
    expect(history.slice(-2)).toEqual([user("How do I run it?"), { role: "assistant", content: served.requests.length > 0 ? history.at(-1)!.content : [] }]);
    expect(readdirSync(SESSIONS).filter((name) => name.endsWith(".jsonl"))).toHaveLength(1);
    expect(printed[0]).toBe(`[resumed session 20250601-090000-aaaaaa: 4 messages; new ones are added to ${SESSIONS}/20250601-090000-aaaaaa.jsonl]`);
  });

  it("--continue takes the session written to last (the one just left), not the one started last", () => {
    writeSession("20250601-090000-aaaaaa", [user("older, but resumed yesterday")]);
    writeSession("20250602-090000-bbbbbb", [user("started later")]);
    const hour = Date.now() / 1000 - 3600;
    utimesSync(path.join(SESSIONS, "20250602-090000-bbbbbb.jsonl"), hour, hour);
    expect(stage.startHistory(["--continue"]).id).toBe("20250601-090000-aaaaaa");
    expect(stage.startHistory(["--resume", "20250602-090000-bbbbbb"])).toEqual([user("started later")]);
  });

  it("--continue with no session, --resume with what is no id or no session, or both flags: one line each, naming it", () => {
    const problem = (args: string[]) => {
      try {
        stage.startHistory(args);
      } catch (error) {
        return (error as Error).message;
      }
      return "resumed";
    };
    expect(problem(["--continue"])).toBe(`there is no session to continue in this workspace (${SESSIONS}/ has none); start one without --continue`);
    expect(problem(["--resume", "../../etc/passwd"])).toBe('"../../etc/passwd" is not a session id (ids look like 20250601-142233-a1b2c3); --resume alone lists the sessions');
    expect(problem(["--resume", "20990101-000000-abcdef"])).toBe(`${SESSIONS}/20990101-000000-abcdef.jsonl does not exist; --resume alone lists the sessions of this workspace`);
    expect(problem(["--continue", "--resume", "20990101-000000-abcdef"])).toMatch(/^--continue resumes the newest session and --resume <id> a given one: give only one of them$/);
  });
});

describe("s16 as a program: --continue, --resume <id>, --resume alone, --help", () => {
  useWorkspace();
  const replay = useReplay();
  // A stage reads its key when it loads: the stage loaded afresh with one, for runMain.
  beforeAll(async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", KEY);
    vi.resetModules();
    await import(FILE);
    vi.unstubAllEnvs();
  });
  afterAll(() => vi.resetModules());

  it("--continue and a prompt: the earlier messages, then the prompt, in one request; the reply joins the same file", async () => {
    writeSession("20250601-090000-aaaaaa", [user("Remember the number 7."), assistant(text("I will."))]);
    const served = replay(scenarioOf([reply.text("It was 7.")]));
    const run = await runMain(FILE, ["--continue", "Which number?"]);
    expect(run.code, run.output).toBe(0);
    expect(served.requests[0].messages).toEqual([user("Remember the number 7."), assistant(text("I will.")), user("Which number?")]);
    expect(linesOf(onlySession()).slice(1).map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("--resume <id> and a prompt resumes that session; a bad id is one line and exit 1, and no request", async () => {
    writeSession("20250601-090000-aaaaaa", [user("in a"), assistant(text("a"))]);
    writeSession("20250602-090000-bbbbbb", [user("in b"), assistant(text("b"))]);
    const served = replay(scenarioOf([reply.text("b it is")]));
    expect((await runMain(FILE, ["--resume", "20250601-090000-aaaaaa", "which one?"])).code).toBe(0);
    expect(served.requests[0].messages[0]).toEqual(user("in a"));
    const bad = await runMain(FILE, ["--resume", "nope", "which one?"]);
    expect(bad).toEqual({ code: 1, output: '[error] "nope" is not a session id (ids look like 20250601-142233-a1b2c3); --resume alone lists the sessions\n' });
    expect(served.requests).toHaveLength(1);
  });

  it("--resume alone lists the sessions, the one written to last first, at most 20, each with its time, messages and first prompt, and exits 0", async () => {
    for (let n = 0; n < 23; n++) writeSession(`20250601-0900${String(n).padStart(2, "0")}-aaaaaa`, [user(`task ${n}\nin two lines`), assistant(text("done"))]);
    writeFileSync(path.join(SESSIONS, "20250601-095959-bbbbbb.jsonl"), "not a session\n");
    writeFileSync(path.join(SESSIONS, "notes.jsonl"), "not a session's name: not listed\n");
    const run = await runMain(FILE, ["--resume"]);
    expect(run.code).toBe(0);
    const lines = run.output.trimEnd().split("\n");
    expect(lines[0]).toBe(`Sessions in ${SESSIONS}/, the one written to last first (--resume <id> resumes one):`);
    expect(lines).toHaveLength(22);
    expect(lines[1]).toMatch(/^ {2}20250601-095959-bbbbbb {2}\d{4}-\d\d-\d\d \d\d:\d\d {2}\(cannot be resumed: .*is not a session: its first line is not a session header\)$/);
    expect(lines[2]).toMatch(/^ {2}20250601-090022-aaaaaa {2}\d{4}-\d\d-\d\d \d\d:\d\d {2}2 messages {2}"task 22 in two lines"$/);
    expect(lines[21]).toBe(`  ... and 4 older (ls ${SESSIONS})`);
  });

  it("--resume with no session lists none; --help names both flags; a misspelt flag still exits 2", async () => {
    expect(await runMain(FILE, ["--resume"])).toEqual({ code: 0, output: `No sessions in this workspace yet (${SESSIONS}/ has none).\n` });
    const help = await runMain(FILE, ["--help"]);
    expect(help.output).toContain("--continue              resume the session of this workspace written to last");
    expect(help.output).toContain("--resume <id>           resume that session; --resume alone lists the sessions");
    expect((await runMain(FILE, ["--contineu"])).code).toBe(2);
  });
});

describe("s16 with no key", () => {
  useWorkspace();
  usePrinted();

  it("--continue says it needs a model rather than replaying the demo; the resumed demo replays offline", async () => {
    const run = await runMain(FILE, ["--continue"]);
    expect(run).toEqual({ code: 1, output: "[error] resuming a session needs a real model, and no key is set (see --help); without one, --replay resume shows a session resumed offline\n" });
  });
});

describe("s16 repairs a session on load, and the API takes the history it gives", () => {
  useWorkspace();
  const printed = usePrinted();

  it("a last line cut short: left out with a warning, and cut off the file, so the next line starts on a line of its own", () => {
    const file = writeSession("20250601-090000-aaaaaa", [user("one"), assistant(text("two"))], '{"role":"user","content":"thr');
    const history = stage.startHistory(["--continue"]);
    expect([...history]).toEqual([user("one"), assistant(text("two"))]);
    expect(printed).toContain("[warning] line 4 (29 bytes) was cut short when the program ended: it is left out");
    history.push(user("three, again"));
    expect(linesOf(file).slice(1)).toEqual([user("one"), assistant(text("two")), user("three, again")]);
    printed.length = 0;
    stage.startHistory(["--continue"]);
    expect(printed.filter((line) => line.startsWith("[warning]"))).toEqual([]);
  });

  it("a tool_use whose result never came gets an is_error result right after it, saying it was interrupted: at the end, and in the middle after an earlier resume", () => {
    const ended = [user("build"), assistant(text("Building."), call("toolu_1"))];
    const { messages, notes } = stage.repaired(ended);
    expect(messages).toEqual([...ended, user([interrupted("toolu_1")])]);
    expect(notes).toEqual(["the call toolu_1 (bash) had no result, as the program ended during it: it gets one saying it was interrupted"]);
    // Resumed once already: the file goes on with a prompt after the call; the same repair, in the same place.
    const later = stage.repaired([...ended, user("go on"), assistant(text("ok"))]).messages;
    expect(later).toEqual([...ended, user([interrupted("toolu_1")]), user("go on"), assistant(text("ok"))]);
    expect(refusal([...later, user("next")])).toBeUndefined();
    expect(refusal([...ended, user("go on")])).toMatch(/tool_use ids were found without tool_result blocks/); // what it prevents
  });

  it("of two calls, the one whose result is missing gets it first in the message holding the other's", () => {
    const { messages } = stage.repaired([user("go"), assistant(call("toolu_1"), call("toolu_2")), user([result("toolu_2")])]);
    expect(messages.at(-1)).toEqual(user([interrupted("toolu_1"), result("toolu_2")]));
    expect(refusal(messages)).toBeUndefined();
  });

  it("an empty message or empty text block is left out, and the logged messages are never changed", () => {
    const logged = [user("go"), assistant(), user("again"), assistant(text("  "), text("fine"))];
    const copy = JSON.parse(JSON.stringify(logged));
    const { messages, notes } = stage.repaired(logged);
    expect(messages).toEqual([user("go"), user("again"), assistant(text("fine"))]);
    expect(notes).toEqual(["line 3 is an empty assistant message: it is left out"]);
    expect(logged).toEqual(copy);
    expect(refusal(messages)).toBeUndefined();
    expect(refusal(logged)).toMatch(/non-empty content/);
  });

  it("many repairs: the first 10 are listed, the rest counted", () => {
    writeSession("20250601-090000-aaaaaa", [user("go"), ...Array.from({ length: 25 }, () => assistant()), user("on")]);
    expect([...stage.startHistory(["--continue"])]).toEqual([user("go"), user("on")]);
    const notes = printed.filter((line) => line.startsWith("[repaired]"));
    expect(notes).toHaveLength(11);
    expect(notes.at(-1)).toBe("[repaired] ... and 15 more like these");
  });

  it("loading never rewrites a line: the same file gives the same history each time", () => {
    const file = writeSession("20250601-090000-aaaaaa", [user("build"), assistant(call("toolu_1")), user("hello?"), assistant(text("   "))]);
    const before = readFileSync(file, "utf8");
    const first = [...stage.startHistory(["--continue"])];
    expect([...stage.startHistory(["--continue"])]).toEqual(first);
    expect(readFileSync(file, "utf8")).toBe(before);
    expect(printed).toContain("[repaired] the call toolu_1 (bash) had no result, as the program ended during it: it gets one saying it was interrupted");
  });

  it("a history the repair cannot make true is refused: a result that answers no call, a first message from the model", () => {
    expect(() => stage.repaired([user("go"), assistant(text("hm")), user([result("toolu_x")])])).toThrow("the result for toolu_x answers no call in the message before it (was the file edited?)");
    expect(() => stage.repaired([assistant(text("hello")), user("hi")])).toThrow("its first message is not the person's");
  });

  it("the resumed demo (fixtures/s16/resume.json) replays as recorded: the API's rules hold for every request, and the file grows by the new messages", async () => {
    const scenario = loadScenario("s16", "resume");
    const session = await replayScenario(stage, scenario, { workspace: process.cwd() });
    expect(session.problems).toEqual([]);
    const [first] = session.requests;
    expect(first.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "user"]);
    expect(first.messages[4]).toEqual(user([interrupted("toolu_s16_earlier_02")]));
    expect(first.messages[5]).toEqual(user("Carry on where we stopped."));
    const lines = linesOf(onlySession());
    expect(lines).toHaveLength(1 + 4 + 1 + 7); // header, the earlier 4, the prompt, 4 replies and 3 results
    expect(lines.slice(5).map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]);
    expect(readFileSync("cli.mjs", "utf8").match(/--version/g)).toHaveLength(1); // the edit, made once
  });
});

describe("s16 refuses what is not a session, naming it, at once", () => {
  useWorkspace();
  const printed = usePrinted();
  const refusedFor = (id: string) => {
    try {
      stage.startHistory(["--resume", id]);
    } catch (error) {
      return (error as Error).message;
    }
    return "resumed";
  };
  const id = "20250601-090000-aaaaaa";
  const given = `${SESSIONS}/${id}.jsonl`;

  it("lines that are not JSON, JSON that is not a session, a line that is not a message", () => {
    mkdirSync(SESSIONS, { recursive: true });
    writeFileSync(given, "PK\u0003\u0004 some zip\n");
    expect(refusedFor(id)).toBe(`${given} is not a session: its first line is not a session header`);
    writeFileSync(given, `${JSON.stringify(user("no header"))}\n`);
    expect(refusedFor(id)).toBe(`${given} is not a session: its first line is not a session header`);
    writeSession(id, [user("fine"), { role: "system", content: "no" }, user("fine")]);
    expect(refusedFor(id)).toBe(`${given} is not a session: line 3 is not a message (a JSON object with a role and content)`);
    writeSession(id, [user("fine"), assistant({ type: "tool_use", name: "bash", input: {} })]);
    expect(refusedFor(id)).toMatch(/line 3 is not a message/);
  });

  it("a FIFO, a symlink to /dev/zero, binary bytes, a file over 10 MB: refused without being read", () => {
    mkdirSync(SESSIONS, { recursive: true });
    execFileSync("mkfifo", [given]);
    expect(refusedFor(id)).toBe(`${given} is a FIFO (named pipe), not a regular file; only regular files are read`);
    rmSync(given);
    symlinkSync("/dev/zero", given);
    expect(refusedFor(id)).toBe(`${given} is a symlink, not a session: it is not followed`);
    rmSync(given);
    writeFileSync(given, Buffer.from([0x7b, 0, 0x7d, 10]));
    expect(refusedFor(id)).toMatch(/looks binary/);
    writeFileSync(given, `${JSON.stringify(header(id))}\n${"x".repeat(10 * 1024 * 1024)}\n`);
    expect(refusedFor(id)).toBe(`${given} is 10.0 MB, over the 10 MB limit; a history that large could not be sent to the model anyway`);
  });

  it("a huge line: one that is not JSON is refused, one cut short is left out", () => {
    const huge = "y".repeat(5 * 1024 * 1024);
    writeSession(id, [user("fine")], `${huge}\n`);
    expect(refusedFor(id)).toMatch(/line 3 is not a message/);
    writeSession(id, [user("fine")], `{"role":"user","content":"${huge}`);
    expect(refusedFor(id)).toBe("resumed");
  });

  it("a block that is not what its type says (a text block without text, a tool_use without input, a result whose content is a number) refuses the file by line, never a crash", () => {
    writeSession(id, [user("fine"), user([{ type: "text" }])]);
    expect(refusedFor(id)).toBe(`${given} is not a session: line 3 is not a message (a JSON object with a role and content)`);
    writeSession(id, [user("fine"), assistant({ type: "text", text: 5 })]);
    expect(refusedFor(id)).toMatch(/line 3 is not a message/);
    writeSession(id, [user("fine"), assistant({ type: "tool_use", id: "toolu_1", name: "bash" })]);
    expect(refusedFor(id)).toMatch(/line 3 is not a message/);
    writeSession(id, [user("fine"), assistant(call("toolu_1")), user([{ type: "tool_result", tool_use_id: "toolu_1", content: 5 }])]);
    expect(refusedFor(id)).toMatch(/line 4 is not a message/);
  });

  it("a sessions folder that is a link inside the workspace is refused too: the project does not choose where the sessions go; a folder the project shipped gets its .gitignore", () => {
    mkdirSync("docs");
    mkdirSync(".agent");
    symlinkSync("../docs", SESSIONS);
    const log = stage.startHistory();
    log.push(user("secret plans"));
    expect(readdirSync("docs")).toEqual([]);
    expect(printed.join("\n")).toContain(`the session cannot be saved (${SESSIONS} is a symlink: sessions are kept only in the workspace's own ${SESSIONS}/)`);
    rmSync(SESSIONS);
    mkdirSync(SESSIONS);
    writeFileSync(path.join(SESSIONS, "README"), "shipped by the project\n");
    stage.startHistory().push(user("plans"));
    expect(readFileSync(path.join(SESSIONS, ".gitignore"), "utf8")).toBe("*\n");
  });

  it("a sessions folder that is a link out of the workspace: nothing is written there, nothing is read from there", () => {
    const outside = path.join(process.cwd(), "..", `${path.basename(process.cwd())}-outside`);
    mkdirSync(outside);
    try {
      mkdirSync(".agent");
      symlinkSync(outside, SESSIONS);
      const log = stage.startHistory();
      log.push(user("secret plans"));
      expect(readdirSync(outside)).toEqual([]);
      writeFileSync(path.join(outside, `${id}.jsonl`), `${JSON.stringify(header(id))}\n`);
      expect(refusedFor(id)).toBe(`${SESSIONS} is a symlink: sessions are kept only in the workspace's own ${SESSIONS}/`);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

describe("s16 in a real process, killed during a call", () => {
  const workspace = useWorkspace();
  usePrinted();

  it("the file holds the prompt and the call, written before the call ran; --continue gives the call a result saying it was interrupted", async () => {
    const command = "echo $$ > sleeper.pid; exec sleep 30";
    const standIn = await startStandIn(scenarioOf([reply.tools([{ id: "toolu_s16_killed", name: "bash", input: { command } }]), reply.text("never sent")]));
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
    const lines = linesOf(onlySession());
    expect(lines.slice(1)).toEqual([user("Wait for the build."), assistant({ type: "tool_use", id: "toolu_s16_killed", name: "bash", input: { command } })]);
    const history = stage.startHistory(["--continue"]);
    history.push(user("Did it finish?"));
    expect(history.slice(-2)).toEqual([user([interrupted("toolu_s16_killed")]), user("Did it finish?")]);
    expect(refusal([...history])).toBeUndefined();
  });
});
