// s08: tools from outside the program. Each rule is a test: the settings files are checked and
// a mistake is named with its place, its entry left out and the rest used; a project's commands
// and servers start only once the person allows them; a discovery command's declarations become
// tools that run the call command; MCP servers (the fixture servers, real processes, and one
// over Streamable HTTP) give tools named server__tool whose results keep their images; every
// failure is a clear message while the rest works; outside tools ask first unless their server
// is trusted, and a trusted server's read is a read; nothing is left running. How the agent
// talks to a server (progress, limits, content) is tested once in tests/machinery/mcp.test.ts;
// here each goes through the stage's tools. Starting a fixture server costs about a second of
// CPU, so the tests that need one share it.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { pathToFileURL } from "node:url";
import { execFileSync } from "node:child_process";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import {
  eventually, FIFO_RELEASE_MS, isRunning, msOnFifo, REPO_ROOT, reply, resultText, runMain, runStage, runTurns, scenarioOf, stageFile, usePrinted, useReplay, useWorkspace,
} from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

// S08_FILE: a changed copy of the stage (agents/.s08-*.ts), to see a test fail when a mechanism is broken.
const FILE = process.env.S08_FILE ?? stageFile("s08");
const DOCS_SERVER = path.join(REPO_ROOT, "fixtures", "s08", "docs-server.mjs");
const SCHEMAS_SERVER = path.join(REPO_ROOT, "fixtures", "s08", "schemas-server.mjs");
const node = (script: string, ...args: string[]) => ({ command: process.execPath, args: [script, ...args] });

type Terminal = typeof import("../lib/runtime/terminal.ts");
type Report = { tools: string[]; problems: string[] };
type Stage = {
  term: Terminal;
  registry: { getTool(name: string): { name: string; kind: string } | undefined; getAllTools(): { name: string }[]; registerTool(tool: { name: string }): void };
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  agentLoop(messages: unknown[]): Promise<void>;
  discoverTools(): Promise<Report>;
  dropDiscoveredTools(): Promise<void>;
  prepareReplay(scenario: unknown): Promise<void>;
  TOOLS: { name: string; description: string; input_schema: Record<string, unknown> }[];
  TIME_LIMITS: { discovery: number; call: number; serverStart: number; serverCall: number; serverTotal: number };
};

/** The stage loaded afresh with an approval mode (read when it loads), with its own terminal module. */
async function stageIn(mode: string): Promise<Stage> {
  vi.stubEnv("APPROVAL_MODE", mode);
  vi.resetModules();
  try {
    const stage = await import(FILE);
    return { ...stage, term: await import("../lib/runtime/terminal.ts") } as Stage;
  } finally {
    vi.unstubAllEnvs();
  }
}

let ids = 0;
const call = (name: string, input: Record<string, unknown> = {}): ToolUseBlock => ({ type: "tool_use", id: `toolu_s08_${++ids}`, name, input }) as ToolUseBlock;
const person = (stage: Stage, ...answers: string[]) => stage.term.useTerminal(stage.term.scriptedTerminal(answers, new PassThrough() as unknown as NodeJS.WriteStream));
const noOne = (stage: Stage) => stage.term.useTerminal(stage.term.nobody);

/**
 * The project's .agent/settings.json. Unless `allowed` is false, the person allowed its commands
 * and servers before: they are in the person's own settings, as the answer "a" keeps them.
 */
function writeSettings(dir: string, settings: unknown, { allowed = true, file = ".agent/settings.json" } = {}): void {
  mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  writeFileSync(path.join(dir, file), typeof settings === "string" ? settings : JSON.stringify(settings, null, 2));
  if (allowed && typeof settings === "object" && !Array.isArray(settings)) allow(dir, settings as Record<string, unknown>);
}

/** The person's own settings (HOME is a temporary folder of this file's: tests/setup.ts). */
const PERSONAL = () => path.join(os.homedir(), ".agent", "settings.json");
function allow(dir: string, { tools, mcpServers }: Record<string, unknown>): void {
  const personal = existsSync(PERSONAL()) ? JSON.parse(readFileSync(PERSONAL(), "utf8")) : {};
  const before = personal.trustedProjects?.[dir] ?? {};
  const project = { tools: tools ?? before.tools, mcpServers: { ...before.mcpServers, ...(mcpServers as object) } };
  personal.trustedProjects = { ...personal.trustedProjects, [dir]: project };
  mkdirSync(path.dirname(PERSONAL()), { recursive: true });
  writeFileSync(PERSONAL(), JSON.stringify(personal));
}
afterAll(() => rmSync(PERSONAL(), { force: true }));

/** A project's tools as small files in the workspace: `cat tools.json` lists them, `bash call.sh <name>` runs one. */
function projectTools(dir: string, declarations: unknown, callScript = 'echo "name=$1"; echo "input=$(cat)"'): void {
  writeFileSync(path.join(dir, "tools.json"), JSON.stringify(declarations));
  writeFileSync(path.join(dir, "call.sh"), `${callScript}\n`);
}
const SHOUT = { name: "shout", description: "Say the text louder.", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } };
const COMMANDS = { tools: { toolDiscoveryCommand: "cat tools.json", toolCallCommand: "bash call.sh" } };

describe("s08 the settings files, .agent/settings.json and .mcp.json", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  let stage: Stage;
  beforeAll(async () => void (stage = await stageIn("default")));

  it("no settings file: the four built-in tools, and nothing said", async () => {
    expect(await stage.discoverTools()).toEqual({ tools: [], problems: [] });
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file"]);
    expect(printed).toEqual([]);
  });

  it("invalid JSON: the file, the line and column, and the problem; the agent keeps its own tools and works", async () => {
    writeSettings(workspace.dir, '{\n  "tools": {\n    "toolDiscoveryCommand": "cat tools.json"\n    "toolCallCommand": "bash call.sh"\n  }\n}\n');
    const { problems } = await stage.discoverTools();
    expect(problems).toEqual([".agent/settings.json is not valid JSON: line 4, column 5: Expected ',' or '}' after property value; nothing of it is used"]);
    expect(printed).toContain(`[tools] ${problems[0]}`);
    expect(stage.TOOLS).toHaveLength(4);
    writeFileSync("a.txt", "still here");
    expect(resultText(await stage.runTool(call("read_file", { path: "a.txt" })))).toBe("still here");
  });

  it.each([
    [{ docs: { command: "node", args: "server.js" } }, "mcpServers.docs.args must be an array"],
    [{ docs: { args: ["server.js"] } }, 'mcpServers.docs: "command" is missing'],
    [{ docs: { type: "http", command: "node" } }, 'mcpServers.docs: "url" is missing'],
    [{ docs: { type: "sse", url: "http://127.0.0.1:9/sse" } }, 'mcpServers.docs: "command" is missing; mcpServers.docs.type must be one of stdio, http'],
    [{ docs: { command: "node", trust: "yes" } }, "mcpServers.docs.trust must be a boolean"],
    [{ docs: { command: "node", timeout: 0 } }, "mcpServers.docs.timeout must be >= 1"],
    [{ docs: { command: "node", port: 3000 } }, 'mcpServers.docs: unknown setting "port"'],
    [{ docs: "node server.js" }, "mcpServers.docs must be an object"],
  ])("a server entry %j: %s; that server is left out, and the rest is used", async (mcpServers, problem) => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, { ...COMMANDS, mcpServers });
    expect(await stage.discoverTools()).toEqual({ tools: ["shout"], problems: [`.agent/settings.json: ${problem}; that server was left out`] });
  });

  it.each([
    [{ mcpServer: { docs: { command: "node" } } }, 'unknown setting "mcpServer"'],
    [["mcpServers"], "the settings must be an object"],
  ])("%j: %s, and nothing of the file is used", async (settings, problem) => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, Array.isArray(settings) ? settings : { ...COMMANDS, ...settings });
    expect(await stage.discoverTools()).toEqual({ tools: [], problems: [`.agent/settings.json: ${problem}; nothing of it is used`] });
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file"]);
  });

  it("a discovery command without its call command is left out, named", async () => {
    writeSettings(workspace.dir, { tools: { toolDiscoveryCommand: "cat tools.json" } });
    expect(await stage.discoverTools()).toEqual({
      tools: [],
      problems: [".agent/settings.json: tools must have property toolCallCommand when property toolDiscoveryCommand is present; the discovery command was left out"],
    });
  });

  it.each([
    ["a FIFO", (file: string) => execFileSync("mkfifo", [file])],
    ["a link to /dev/zero", (file: string) => symlinkSync("/dev/zero", file)],
  ])("%s in place of .agent/settings.json or .mcp.json is refused at once, unread", async (_what, make) => {
    mkdirSync(".agent");
    for (const file of [".agent/settings.json", ".mcp.json"]) make(file);
    let report: Report | undefined;
    // msOnFifo: a program stuck on the FIFO is released after FIFO_RELEASE_MS, so the test fails rather than hangs.
    const ms = await msOnFifo(".agent/settings.json", async () => void (report = await stage.discoverTools()));
    expect(ms).toBeLessThan(FIFO_RELEASE_MS / 2);
    expect(report?.problems).toEqual([
      ".agent/settings.json is not a regular file (a FIFO, a device or a folder), so it was not read; nothing of it is used",
      ".mcp.json is not a regular file (a FIFO, a device or a folder), so it was not read; nothing of it is used",
    ]);
  });

  it("a settings file larger than a settings file needs is refused, unread", async () => {
    writeSettings(workspace.dir, { tools: { toolDiscoveryCommand: "true", toolCallCommand: "x".repeat(300_000) } }, { allowed: false });
    expect((await stage.discoverTools()).problems).toEqual([expect.stringMatching(/^\.agent\/settings\.json is \d+ bytes, more than a settings file needs \(at most 262144\), so it was not read; nothing of it is used$/)]);
  });
});

describe("s08 a project's commands and servers start only when the person allows them", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  const stages: Record<string, Stage> = {};
  beforeAll(async () => {
    for (const mode of ["default", "plan"]) stages[mode] = await stageIn(mode);
  });
  beforeEach(() => rmSync(PERSONAL(), { force: true }));
  afterEach(() => {
    Object.values(stages).forEach(noOne);
    rmSync(PERSONAL(), { force: true });
  });

  // A project that would run something the moment it starts: a discovery command that leaves a
  // file, and a server it marks as trusted, which would leave one too.
  const PROJECT = {
    tools: { toolDiscoveryCommand: "touch listed.txt; cat tools.json", toolCallCommand: "bash call.sh" },
    mcpServers: { docs: { command: "sh", args: ["-c", "touch started.txt"], trust: true } },
  };
  const started = () => readdirSync(".").filter((name) => name === "listed.txt" || name === "started.txt");

  it("with no one at the terminal, nothing of the project starts, in any mode, and it says so", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, PROJECT, { allowed: false });
    for (const mode of ["default", "plan"]) {
      const { tools, problems } = await stages[mode].discoverTools();
      expect(tools).toEqual([]);
      expect(problems).toEqual([
        "not started: tools, mcpServers.docs (no one is at the terminal to allow them: start the agent at a terminal once, or list them under trustedProjects in ~/.agent/settings.json)",
      ]);
    }
    expect(started()).toEqual([]);
  });

  it("asks once, showing each entry as it is written (its trust too); `n` starts nothing, in plan mode too", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, PROJECT, { allowed: false });
    person(stages.plan, "n");
    const { problems } = await stages.plan.discoverTools();
    expect(printed.join("\n")).toContain(
      `This project's settings start programs of their own; a server with "trust": true runs its tools without asking:\n` +
        `  tools: {"toolDiscoveryCommand":"touch listed.txt; cat tools.json","toolCallCommand":"bash call.sh"}\n` +
        `  mcpServers.docs: {"command":"sh","args":["-c","touch started.txt"],"trust":true}\n` +
        "  y: start them   a: yes, and remember it in ~/.agent/settings.json   n: no",
    );
    expect(problems).toEqual(["not started: tools, mcpServers.docs (the person said no)"]);
    expect(started()).toEqual([]);
  });

  it("`y` starts them this time only: nothing is kept, and the next start asks again", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, COMMANDS, { allowed: false });
    person(stages.default, "y");
    expect((await stages.default.discoverTools()).tools).toEqual(["shout"]);
    expect(existsSync(PERSONAL())).toBe(false);
    noOne(stages.default);
    expect((await stages.default.discoverTools()).tools).toEqual([]);
  });

  it("`a` is remembered in the person's own settings; an entry the project changes later is asked about again", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, COMMANDS, { allowed: false });
    mkdirSync(path.dirname(PERSONAL()), { recursive: true });
    writeFileSync(PERSONAL(), JSON.stringify({ theme: "dark" }));
    person(stages.default, "a");
    expect((await stages.default.discoverTools()).tools).toEqual(["shout"]);
    expect(JSON.parse(readFileSync(PERSONAL(), "utf8"))).toEqual({ theme: "dark", trustedProjects: { [workspace.dir]: COMMANDS } });
    noOne(stages.default);
    expect((await stages.default.discoverTools()).tools).toEqual(["shout"]); // no one to ask, and none needed
    // The project changes its call command (a pull, a branch): that is a new entry, not the one allowed.
    writeSettings(workspace.dir, { tools: { ...COMMANDS.tools, toolCallCommand: "bash call.sh --and-more" } }, { allowed: false });
    expect(await stages.default.discoverTools()).toMatchObject({ tools: [], problems: [expect.stringMatching(/^not started: tools \(no one is at the terminal/)] });
  });

  it("`a` with no ~/.agent folder yet makes it", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, COMMANDS, { allowed: false });
    rmSync(path.dirname(PERSONAL()), { recursive: true, force: true });
    person(stages.default, "a");
    expect(await stages.default.discoverTools()).toEqual({ tools: ["shout"], problems: [] });
    expect(JSON.parse(readFileSync(PERSONAL(), "utf8"))).toEqual({ trustedProjects: { [workspace.dir]: COMMANDS } });
  });

  it("the project's own files cannot allow it: a trustedProjects in .agent/settings.json is an unknown setting", async () => {
    writeSettings(workspace.dir, { ...PROJECT, trustedProjects: { [workspace.dir]: PROJECT } }, { allowed: false });
    expect((await stages.default.discoverTools()).problems).toEqual(['.agent/settings.json: unknown setting "trustedProjects"; nothing of it is used']);
    expect(started()).toEqual([]);
  });

  it("a personal settings file that is not JSON is named, left as it was, and nothing is remembered", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, COMMANDS, { allowed: false });
    mkdirSync(path.dirname(PERSONAL()), { recursive: true });
    writeFileSync(PERSONAL(), "{ not json");
    person(stages.default, "a");
    const { tools, problems } = await stages.default.discoverTools();
    expect(tools).toEqual(["shout"]);
    expect(problems).toEqual([
      expect.stringMatching(/^~\/\.agent\/settings\.json is not valid JSON: line 1, column 3: /),
      expect.stringMatching(/^not remembered: ~\/\.agent\/settings\.json is not valid JSON/),
    ]);
    expect(readFileSync(PERSONAL(), "utf8")).toBe("{ not json");
  });
});

describe("s08 the discovery command", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  // One stage for the describe, in yolo mode: these tests are about the tools, not about asking.
  let stage: Stage;
  beforeAll(async () => void (stage = await stageIn("yolo")));
  afterEach(() => Object.assign(stage.TIME_LIMITS, { discovery: 30_000, call: 120_000 }));

  it("each declaration it prints is a tool the model sees; a call runs `toolCallCommand <name>` with the arguments as JSON on stdin", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, COMMANDS);
    expect(await stage.discoverTools()).toEqual({ tools: ["shout"], problems: [] });
    expect(printed).toContain("[tools] discovery command: shout");
    const shout = stage.TOOLS.find((tool) => tool.name === "shout")!;
    expect(shout.input_schema).toEqual(SHOUT.parameters);
    expect(shout.description).toMatch(/^Say the text louder\.\n\(A tool of this project/);
    expect(stage.registry.getTool("shout")?.kind).toBe("execute");
    const result = await stage.runTool(call("shout", { text: "hi" }));
    expect(result.is_error).toBeUndefined();
    expect(resultText(result)).toBe('name=shout\ninput={"text":"hi"}\n');
  });

  it("checks the arguments against the declared schema before anything runs", async () => {
    projectTools(workspace.dir, [SHOUT], "touch ran.txt");
    writeSettings(workspace.dir, COMMANDS);
    await stage.discoverTools();
    const result = await stage.runTool(call("shout", { text: 5 }));
    expect(resultText(result)).toBe('Error: shout was not run: "text" must be a string.');
    expect(readdirSync(".")).not.toContain("ran.txt");
  });

  it("a call that exits non-zero is an error result with its stderr", async () => {
    projectTools(workspace.dir, [SHOUT], 'echo "partial"; echo "disk full" >&2; exit 4');
    writeSettings(workspace.dir, COMMANDS);
    await stage.discoverTools();
    const result = await stage.runTool(call("shout", { text: "hi" }));
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toBe("Error: shout failed (exit code 4): disk full");
  });

  it("a call that hangs is ended at its time limit, with everything it started", async () => {
    projectTools(workspace.dir, [SHOUT], "sleep 60 & echo $! > child.pid; wait");
    writeSettings(workspace.dir, COMMANDS);
    await stage.discoverTools();
    stage.TIME_LIMITS.call = 500;
    const started = Date.now();
    const result = await stage.runTool(call("shout", { text: "hi" }));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(resultText(result)).toBe("Error: timed out after 0.5s; the command and everything it started were ended, and it printed nothing");
    expect(await eventually(() => !isRunning(Number(readFileSync("child.pid", "utf8"))))).toBe(true);
  });

  it("Ctrl-C during a call ends the call command and what it started; the model is told it was cancelled", async () => {
    projectTools(workspace.dir, [SHOUT], "sleep 60 & echo $! > child.pid; wait");
    writeSettings(workspace.dir, COMMANDS);
    await stage.discoverTools();
    const pressCtrlC = setInterval(() => readdirSync(".").includes("child.pid") && (clearInterval(pressCtrlC), stage.term.interrupt()), 20);
    // Cleared whatever happens: files share a worker, and a timer left running would outlive this test.
    const result = await stage.runTool(call("shout", { text: "hi" })).finally(() => clearInterval(pressCtrlC));
    expect(resultText(result)).toBe("Error: cancelled by the user (Ctrl-C); the tool was stopped.");
    expect(await eventually(() => !isRunning(Number(readFileSync("child.pid", "utf8"))))).toBe(true);
  });

  it("passes the tool's name as a word of its own: a name cannot inject shell code", async () => {
    projectTools(workspace.dir, [{ name: "x; touch injected" }]);
    writeSettings(workspace.dir, COMMANDS);
    expect((await stage.discoverTools()).tools).toEqual(["x__touch_injected"]);
    expect(resultText(await stage.runTool(call("x__touch_injected")))).toBe("name=x; touch injected\ninput={}\n");
    expect(readdirSync(".")).not.toContain("injected");
  });

  it.each([
    ["exits non-zero", "echo 'cannot read the manifest' >&2; exit 3", "it exited with code 3: cannot read the manifest"],
    ["prints something that is not JSON", "echo 'Usage: tools [list]'", 'it printed something that is not JSON: "Usage: tools [list]"'],
    ["prints JSON that is not a list", `echo '{"name": "shout"}'`, "it printed JSON, but not a list of function declarations"],
    ["hangs", "sleep 30", "timed out after 0.3s; the command and everything it started were ended, and it printed nothing"],
  ])("a discovery command that %s: said in one line; the built-in tools work", async (_what, command, problem) => {
    writeSettings(workspace.dir, { tools: { toolDiscoveryCommand: command, toolCallCommand: "cat" } });
    stage.TIME_LIMITS.discovery = 300;
    expect(await stage.discoverTools()).toEqual({ tools: [], problems: [`discovery command: could not list its tools: ${problem}`] });
    expect(printed).toContain(`[tools] discovery command: could not list its tools: ${problem}`);
    expect(resultText(await stage.runTool(call("bash", { command: "echo fine" })))).toBe("fine\n");
  });

  it("leaves out a declaration that is not one, naming it, and keeps the others", async () => {
    projectTools(workspace.dir, [SHOUT, { description: "no name" }, { name: "listing", parameters: { type: "array" } }, "whisper"]);
    writeSettings(workspace.dir, COMMANDS);
    expect(await stage.discoverTools()).toEqual({
      tools: ["shout"],
      problems: [
        'discovery command: declaration 2 was left out: "name" is missing',
        "discovery command: declaration 3 was left out: parameters.type must be equal to constant",
        "discovery command: declaration 4 was left out: it must be an object",
      ],
    });
  });

  it("leaves out a declaration whose schema is not JSON Schema (the API would refuse every request)", async () => {
    projectTools(workspace.dir, [SHOUT, { name: "broken", parameters: { type: "object", properties: { n: { type: "integr" } } } }]);
    writeSettings(workspace.dir, COMMANDS);
    const { tools, problems } = await stage.discoverTools();
    expect(tools).toEqual(["shout"]);
    expect(problems).toEqual([expect.stringMatching(/^discovery command: "broken" was left out: its parameter schema is not valid JSON Schema \(/)]);
  });

  it("makes names valid for the API and unique: odd characters, more than 64 characters, a built-in's name, a clash", async () => {
    const long = `a${"b".repeat(70)}`;
    projectTools(workspace.dir, [{ name: "bash" }, { name: "két szó" }, { name: "k_t_sz_" }, { name: long }, { name: `${long}c` }, { name: "ok-name_2" }]);
    writeSettings(workspace.dir, COMMANDS);
    const { tools } = await stage.discoverTools();
    expect(tools).toEqual(["bash_2", "k_t_sz_", "k_t_sz__2", long.slice(0, 64), `${long.slice(0, 62)}_2`, "ok-name_2"]);
    for (const name of tools) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file", ...tools]);
    // The renamed tool still runs under its own name.
    expect(resultText(await stage.runTool(call("k_t_sz_")))).toBe("name=két szó\ninput={}\n");
  });

  it("is done when it exits, even when it leaves a helper running in the background", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, { tools: { ...COMMANDS.tools, toolDiscoveryCommand: "sleep 60 & echo $! > helper.pid; cat tools.json" } });
    const started = Date.now();
    expect(await stage.discoverTools()).toEqual({ tools: ["shout"], problems: [] });
    expect(Date.now() - started).toBeLessThan(5000);
    process.kill(Number(readFileSync("helper.pid", "utf8")), "SIGKILL");
  });

  it("a tool that fails while it is registered is a problem of its own; the others are registered", async () => {
    projectTools(workspace.dir, [{ name: "first" }, SHOUT, { name: "last" }]);
    writeSettings(workspace.dir, COMMANDS);
    const registerTool = stage.registry.registerTool.bind(stage.registry);
    const refuse = vi.spyOn(stage.registry, "registerTool").mockImplementation((tool) => {
      if (tool.name === "shout") throw new Error("the registry is full");
      registerTool(tool);
    });
    try {
      expect(await stage.discoverTools()).toEqual({ tools: ["first", "last"], problems: ['discovery command: "shout" was left out: the registry is full'] });
    } finally {
      refuse.mockRestore();
    }
  });

  it("a schema is checked in its dialect: draft-07 unless it declares another, so a draft-07 tuple is not refused as bad 2020-12", async () => {
    const tuple = { type: "object", properties: { pair: { type: "array", items: [{ type: "string" }, { type: "number" }], additionalItems: false } }, required: ["pair"] };
    projectTools(workspace.dir, [{ name: "pair", parameters: tuple }]);
    writeSettings(workspace.dir, COMMANDS);
    expect(await stage.discoverTools()).toEqual({ tools: ["pair"], problems: [] });
    expect(resultText(await stage.runTool(call("pair", { pair: ["a", 1] })))).toBe('name=pair\ninput={"pair":["a",1]}\n');
    expect(resultText(await stage.runTool(call("pair", { pair: ["a", 1, 2] })))).toBe('Error: pair was not run: "pair" must NOT have more than 2 items.');
  });

  it("a top-level oneOf is sent as one object schema the API takes; each call is still checked against the branches", async () => {
    const either = { type: "object", oneOf: [{ properties: { id: { type: "integer" } }, required: ["id"] }, { properties: { title: { type: "string" } }, required: ["title"] }] };
    projectTools(workspace.dir, [{ name: "find", parameters: either }]);
    writeSettings(workspace.dir, COMMANDS);
    await stage.discoverTools();
    const find = stage.TOOLS.find((tool) => tool.name === "find")!;
    expect(find.input_schema).toEqual({
      type: "object",
      properties: { id: { type: "integer" }, title: { type: "string" } },
      description: "(The input must match exactly one of 2 shapes; a call that does not is refused with the reason.)",
    });
    expect(resultText(await stage.runTool(call("find", { id: 7 })))).toBe('name=find\ninput={"id":7}\n');
    expect(resultText(await stage.runTool(call("find", {})))).toMatch(/^Error: find was not run: "id" is required; "title" is required; the input must match exactly one schema in oneOf\.$/);
  });

  it("discovering again replaces what was found before: TOOLS is the same array, refilled", async () => {
    const tools = stage.TOOLS;
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, COMMANDS);
    await stage.discoverTools();
    projectTools(workspace.dir, [{ name: "whisper" }]);
    await stage.discoverTools();
    expect(stage.TOOLS).toBe(tools);
    expect(tools.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file", "whisper"]);
    expect(stage.registry.getTool("shout")).toBeUndefined();
  });
});

/** A folder for a describe whose tests share the servers started in its beforeAll. */
function useSharedWorkspace(): { readonly dir: string } {
  const state = { dir: "" };
  let home = "";
  beforeAll(() => {
    home = process.cwd();
    state.dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-test-")));
    process.chdir(state.dir);
  });
  afterAll(() => {
    process.chdir(home);
    rmSync(state.dir, { recursive: true, force: true });
  });
  return state;
}

describe("s08 MCP servers (one discovery: two fixture servers, a command, and five entries that never become a server)", () => {
  const workspace = useSharedWorkspace();
  const replay = useReplay();
  let stage: Stage;
  let report: Report;
  const printedAtStart: string[] = [];
  let startedIn = 0;

  beforeAll(async () => {
    stage = await stageIn("default");
    writeSettings(workspace.dir, {
      // A project's own tool whose name is one of a server's tools: the server keeps it.
      tools: { toolDiscoveryCommand: `echo '[{"name": "docs__echo"}]'`, toolCallCommand: "echo from-the-command" },
      mcpServers: {
        // Claude Code's entry shape: "type": "stdio".
        docs: { type: "stdio", ...node(DOCS_SERVER, "--test-tools"), trust: true },
        // Any program can be named as a server: these three never become one. (sh, not bash: a
        // bash whose stdin is a socket, as a server's is, may read ~/.bashrc first.)
        stuck: { command: "sh", args: ["-c", "echo $$ > stuck.pid; sleep 60 & echo $! >> stuck.pid; wait"], timeout: 1500 },
        broken: { command: "sh", args: ["-c", "echo 'docs-index: cannot open the index' >&2; exit 1"] },
        missing: { command: "./no-such-server", args: ["--stdio"] },
        // Writes down the environment it was given, then stops.
        nosy: { command: "sh", args: ["-c", "env > server-env.txt"], env: { DOCS_TOKEN: "from-the-settings" } },
        // An entry with a mistake: left out, alone.
        typo: { command: "node", args: "server.js" },
      },
    });
    // Claude Code's project file: a server whose tools are written as other people write them.
    writeSettings(workspace.dir, { mcpServers: { schemas: node(SCHEMAS_SERVER) } }, { file: ".mcp.json" });
    const log = vi.spyOn(console, "log").mockImplementation((...args) => void printedAtStart.push(args.join(" ")));
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-the-agents-own-key");
    const started = Date.now();
    try {
      report = await stage.discoverTools();
    } finally {
      vi.unstubAllEnvs();
      log.mockRestore();
    }
    startedIn = Date.now() - started;
  });
  afterAll(async () => {
    await stage.dropDiscoveredTools();
    noOne(stage);
  });
  afterEach(() => Object.assign(stage.TIME_LIMITS, { serverCall: 120_000, serverTotal: 600_000 }));
  const printed = usePrinted();

  it("registers each server's tools as server__tool, in the order of the settings, and says what it found", () => {
    expect(report.tools.slice(0, 7)).toEqual(["docs__read_page", "docs__get_diagram", "docs__echo", "docs__slow", "docs__crash", "docs__fail", "docs__kinds"]);
    expect(printedAtStart).toContainEqual(expect.stringMatching(/^\[tools\] MCP server docs \(trusted\): docs__read_page, docs__get_diagram, docs__echo,/));
    const readPage = stage.TOOLS.find((tool) => tool.name === "docs__read_page")!;
    expect(readPage.description).toBe("Read one page of the team's docs, by name (releasing, style).");
    expect(readPage.input_schema).toEqual({ type: "object", properties: { name: { type: "string", description: "The page's name." } }, required: ["name"] });
  });

  it("reads Claude Code's entry shape (\"type\": \"stdio\") and its .mcp.json; one broken entry is left out alone", () => {
    expect(report.tools).toContain("schemas__pair");
    expect(report.problems).toContain(".agent/settings.json: mcpServers.typo.args must be an array; that server was left out");
    expect(printedAtStart[0]).toBe("[tools] .agent/settings.json: mcpServers.typo.args must be an array; that server was left out");
  });

  it("a trusted server's readOnlyHint makes its tool a read; an untrusted server's is not believed", () => {
    expect(stage.registry.getTool("docs__read_page")?.kind).toBe("read");
    expect(stage.registry.getTool("docs__echo")?.kind).toBe("execute"); // says nothing: someone else's code
    expect(stage.registry.getTool("schemas__peek")?.kind).toBe("execute");
  });

  it("reads of a trusted server in one reply run side by side", async () => {
    replay(scenarioOf([reply.tools([{ name: "docs__hold", input: { ms: 200 } }, { name: "docs__hold", input: { ms: 200 } }]), reply.text("Held.")]));
    const messages = await runTurns(stage.agentLoop, ["Hold twice."]);
    const [first, second] = (messages[2].content as ToolResultBlockParam[]).map((result) => resultText(result).split(" ").map(Number));
    expect(second[0]).toBeLessThan(first[1]); // the second started before the first ended
  });

  it("an MCP server's tool keeps its server__tool name: a command's tool of the same name gets another", async () => {
    expect(report.tools.slice(-1)).toEqual(["docs__echo_2"]);
    expect(resultText(await stage.runTool(call("docs__echo", { text: "the server's" })))).toBe("the server's");
    noOne(stage);
    expect(resultText(await stage.runTool(call("docs__echo_2")))).toMatch(/^Not run: docs__echo_2 needs a person's approval/); // the command's, never trusted
  });

  it("makes the server's odd names valid and unique, and calls each by its own name", async () => {
    const long = "docs__a_tool_whose_name_is_much_longer_than_the_sixty_four_characters_the_api_allows";
    expect(report.tools).toContain("docs__odd_name_with_spaces_");
    expect(report.tools).toContain("docs__read_page_2"); // "read page", which clashes with read_page once made valid
    expect(report.tools).toContain(long.slice(0, 64));
    expect(resultText(await stage.runTool(call("docs__read_page_2")))).toBe("this was read page");
    expect(resultText(await stage.runTool(call("docs__odd_name_with_spaces_")))).toBe("this was odd name/with spaces!");
  });

  it("a server that hangs at start is stopped at its time limit, with what it started; start-up does not wait for it", async () => {
    expect(report.problems).toContain("MCP server stuck: could not start: no answer within 1.5 s, so it was stopped");
    expect(startedIn).toBeLessThan(20_000); // the fixture servers' start under load, not the hung one's forever
    const [server, child] = readFileSync(path.join(workspace.dir, "stuck.pid"), "utf8").trim().split("\n").map(Number);
    expect(await eventually(() => !isRunning(server) && !isRunning(child))).toBe(true);
  });

  it("a server that will not start, or does not exist: a clear message each, and the other tools work", async () => {
    expect(report.problems).toContain("MCP server broken: could not start: it stopped: docs-index: cannot open the index");
    expect(report.problems).toContain('MCP server missing: could not start: "./no-such-server" was not found');
    expect(report.problems).toHaveLength(6); // and nosy, which stops at once; the typo; schemas' job
    expect(report.tools.some((name) => /^(stuck|broken|missing|nosy|typo)__/.test(name))).toBe(false);
    expect(resultText(await stage.runTool(call("docs__echo", { text: "still here" })))).toBe("still here");
  });

  it("a server gets a few variables and its settings' env, never the agent's API key", () => {
    const env = readFileSync(path.join(workspace.dir, "server-env.txt"), "utf8");
    expect(env).toContain("DOCS_TOKEN=from-the-settings");
    expect(env).toMatch(/^PATH=/m);
    expect(env).not.toContain("sk-ant-the-agents-own-key");
  });

  it("text, image and resource results become tool_result content; what the API cannot take is named in text", async () => {
    const result = await stage.runTool(call("docs__kinds"));
    const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    expect(result.is_error).toBeUndefined();
    expect(result.content).toEqual([
      { type: "text", text: "some text" },
      { type: "image", source: { type: "base64", media_type: "image/png", data: pixel } },
      { type: "text", text: "[an image of type image/svg+xml, which cannot be shown to the model]" },
      { type: "text", text: "[resource docs://pages/style.md]\n# Style" },
      { type: "image", source: { type: "base64", media_type: "image/png", data: pixel } },
      { type: "text", text: "[resource docs://guide.pdf: application/pdf data, not shown]" },
      { type: "text", text: "[resource link docs://pages/releasing.md (releasing), a resource of the MCP server docs]" },
      { type: "text", text: "[audio content, which cannot be shown to the model]" },
    ]);
  });

  it("a result that is only structured content reaches the model as its JSON; an output schema no one can compile costs nothing", async () => {
    person(stage, "y"); // schemas is not trusted: its tools ask
    expect(resultText(await stage.runTool(call("schemas__count")))).toBe('{\n  "open": 3\n}');
    expect(report.tools).toContain("schemas__broken");
  });

  it("a text/plain blob is decoded for the model", async () => {
    expect(resultText(await stage.runTool(call("docs__notes")))).toBe("[resource docs://notes.txt]\nRelease notes: 1.5.0 — grouped reports\n");
  });

  it("a resource link can be read: read_mcp_resource reads a server's resource by its URI, as a read", async () => {
    expect(resultText(await stage.runTool(call("docs__where")))).toBe("[resource link docs://pages/releasing.md (releasing), a resource of the MCP server docs]");
    expect(stage.registry.getTool("read_mcp_resource")?.kind).toBe("read");
    const page = await stage.runTool(call("read_mcp_resource", { server: "docs", uri: "docs://pages/releasing.md" }));
    expect(resultText(page)).toMatch(/^\[resource docs:\/\/pages\/releasing\.md\]\n# Releasing\n/);
    expect(resultText(await stage.runTool(call("read_mcp_resource", { server: "schemas", uri: "docs://x" })))).toBe("Error: the MCP server schemas offers no resources");
    expect(resultText(await stage.runTool(call("read_mcp_resource", { server: "nobody", uri: "docs://x" })))).toBe('Error: read_mcp_resource was not run: "server" must be one of docs, schemas.');
  });

  it("offers the workspace as the client's root: a server that asks for its roots gets the workspace", async () => {
    expect(resultText(await stage.runTool(call("docs__roots")))).toBe(pathToFileURL(workspace.dir).href);
  });

  it("schemas as others write them: 2020-12 and draft-07 each as declared; a top-level oneOf made usable; a task-only tool left out, with the reason", async () => {
    person(stage, "y", "y", "y"); // schemas is not trusted: its tools ask (a call refused by its schema never gets that far)
    expect(resultText(await stage.runTool(call("schemas__pair", { pair: ["a", 1] })))).toBe('pair {"pair":["a",1]}');
    expect(resultText(await stage.runTool(call("schemas__pair", { pair: ["a", 1, 2] })))).toBe('Error: schemas__pair was not run: "pair" must NOT have more than 2 items.');
    expect(resultText(await stage.runTool(call("schemas__tuple", { pair: ["a", 1] })))).toBe('tuple {"pair":["a",1]}');
    const lookup = stage.TOOLS.find((tool) => tool.name === "schemas__lookup")!;
    expect(lookup.input_schema).toMatchObject({ type: "object", properties: { id: { type: "integer" }, title: { type: "string" } } });
    expect(lookup.input_schema.oneOf).toBeUndefined();
    expect(resultText(await stage.runTool(call("schemas__lookup", { title: "login" })))).toBe('lookup {"title":"login"}');
    expect(report.problems).toContain('MCP server schemas: "job" was left out: it runs only as a task (execution.taskSupport "required"), which this agent does not do');
  });

  it("an error result from the server (isError) is an is_error result with the server's words", async () => {
    const missing = await stage.runTool(call("docs__read_page", { name: "release" }));
    expect(missing.is_error).toBe(true);
    expect(resultText(missing)).toBe('Error: No page named "release". Pages: releasing, style.');
    const thrown = await stage.runTool(call("docs__fail"));
    expect(resultText(thrown)).toBe("Error: the docs index is locked");
  });

  it("checks the arguments against the server's schema before calling it", async () => {
    const result = await stage.runTool(call("docs__read_page", { name: 5 }));
    expect(resultText(result)).toBe('Error: docs__read_page was not run: "name" must be a string.');
  });

  it("a call with no answer in time is an error; the server still answers the next one", async () => {
    stage.TIME_LIMITS.serverCall = 300;
    const slow = await stage.runTool(call("docs__slow", { ms: 3000 }));
    expect(resultText(slow)).toBe("Error: the MCP server docs gave no answer within 0.3 s");
    expect(resultText(await stage.runTool(call("docs__echo", { text: "next" })))).toBe("next");
  });

  it("a call that reports progress is shown it and goes on past its limit, up to the total limit", async () => {
    Object.assign(stage.TIME_LIMITS, { serverCall: 250, serverTotal: 900 });
    expect(resultText(await stage.runTool(call("docs__count", { steps: 4, ms: 100 })))).toBe("counted to 4");
    expect(printed).toContain("  [docs: count] 1/4 step 1");
    const endless = await stage.runTool(call("docs__count", { steps: 100, ms: 100 }));
    expect(resultText(endless)).toBe("Error: the MCP server docs was still at work after 0.9 s, the most a call may take even while it reports progress, so the call was given up");
  });

  it("2,000 text blocks share the 30,000 characters the model gets from one result", async () => {
    const result = await stage.runTool(call("docs__blocks"));
    expect(resultText(result).length).toBeLessThanOrEqual(30_000);
    expect(resultText(result)).toMatch(/^block 1 y+\nblock 2 /);
    expect(resultText(result)).toMatch(/\[\d+ characters cut from the middle, 2001999 in all\]/);
  });

  it("Ctrl-C during a call cancels it; the server answers the next one", async () => {
    setTimeout(() => stage.term.interrupt(), 300);
    const started = Date.now();
    const result = await stage.runTool(call("docs__slow", { ms: 5000 }));
    expect(Date.now() - started).toBeLessThan(4000);
    expect(resultText(result)).toBe("Error: cancelled by the user (Ctrl-C); the tool was stopped.");
    expect(resultText(await stage.runTool(call("docs__echo", { text: "after" })))).toBe("after");
  });

  it("default mode: a trusted server's tools run without asking, with no one at the terminal", async () => {
    noOne(stage);
    expect(resultText(await stage.runTool(call("docs__echo", { text: "trusted" })))).toBe("trusted");
  });

  it("an answer over the SDK's 10 MB limit is said to be too large, not a crash; the server works again at the next call", async () => {
    const huge = await stage.runTool(call("docs__huge"));
    expect(resultText(huge)).toBe(
      "Error: the MCP server docs sent an answer larger than 10 MB, the most one MCP message may be, so the SDK closed the connection and the answer is lost; the server is started again at its next call: ask it for less",
    );
    expect(resultText(await stage.runTool(call("docs__echo", { text: "started again" })))).toBe("started again");
  });

  it("a server that crashes mid-call: a clear error, its tools say it stopped, everything else works (runs last: it ends docs)", async () => {
    const crashed = await stage.runTool(call("docs__crash"));
    expect(crashed.is_error).toBe(true);
    expect(resultText(crashed)).toBe(
      "Error: the MCP server docs stopped during the call (it stopped: docs-server: out of memory (on purpose, for a test)); its tools work again when the agent starts again",
    );
    expect(resultText(await stage.runTool(call("docs__echo", { text: "anyone?" })))).toMatch(/^Error: the MCP server docs is not running \(it stopped: docs-server: out of memory/);
    writeFileSync("a.txt", "the agent goes on");
    expect(resultText(await stage.runTool(call("read_file", { path: "a.txt" })))).toBe("the agent goes on");
  });
});

describe("s08 an MCP server over Streamable HTTP, with a token from the environment", () => {
  const workspace = useWorkspace();
  usePrinted();
  let stage: Stage;
  let served: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    stage = await stageIn("default");
    const { serveHttp } = await import(pathToFileURL(DOCS_SERVER).href);
    served = await serveHttp({ token: "s3cret" });
  });
  afterAll(async () => {
    await stage.dropDiscoveredTools();
    await served.close();
  });

  it('{"type": "http", "url", "headers"}: its tools work, and a wrong or missing token is said in words', async () => {
    vi.stubEnv("DOCS_TOKEN", "s3cret");
    const remote = (token: string) => ({ type: "http", url: served.url, headers: { Authorization: `Bearer ${token}` }, trust: true });
    writeSettings(workspace.dir, { mcpServers: { remote: remote("${DOCS_TOKEN}"), wrong: remote("nope"), unset: remote("${NO_SUCH_TOKEN}") } }, { file: ".mcp.json" });
    const { tools, problems } = await stage.discoverTools();
    expect(tools).toContain("remote__read_page");
    expect(problems).toEqual([
      `MCP server wrong (trusted): could not start: ${served.url} answered HTTP 401: check its headers (a token?)`,
      "MCP server unset (trusted): could not start: it uses ${NO_SUCH_TOKEN}, which is not set",
    ]);
    expect(resultText(await stage.runTool(call("remote__echo", { text: "over http" })))).toBe("over http");
    expect(resultText(await stage.runTool(call("remote__roots")))).toBe(pathToFileURL(workspace.dir).href);
  });
});

describe("s08 approval modes for outside tools: trust skips the question, the mode still rules", () => {
  const workspace = useSharedWorkspace();
  const stages: Record<string, Stage> = {};
  const printed = usePrinted();

  // One stage per mode (the mode is read when a stage loads; default is the describe above).
  // An untrusted server where trust could change the outcome (auto-edit asks before commands);
  // in plan mode a trusted one, whose reads are reads; elsewhere the project's command tools,
  // which are never trusted. discoverTools reads the settings (the project's and the person's)
  // as soon as it is called, so each stage gets the settings written just before.
  beforeAll(async () => {
    for (const mode of ["auto-edit", "yolo", "plan"]) stages[mode] = await stageIn(mode);
    projectTools(workspace.dir, [SHOUT]);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    writeSettings(workspace.dir, COMMANDS);
    const yolo = stages.yolo.discoverTools();
    writeSettings(workspace.dir, { ...COMMANDS, mcpServers: { docs: { ...node(DOCS_SERVER), trust: true } } });
    const plan = stages.plan.discoverTools();
    writeSettings(workspace.dir, { ...COMMANDS, mcpServers: { docs: node(DOCS_SERVER) } });
    await Promise.all([stages["auto-edit"].discoverTools(), yolo, plan]);
    log.mockRestore();
  });
  afterAll(() => Promise.all(Object.values(stages).map((stage) => stage.dropDiscoveredTools())));

  const untrustedServer = call("docs__read_page", { name: "style" });
  const commandTool = call("shout", { text: "hi" });

  it("auto-edit: an untrusted server's tool asks (it is not an edit); with no one there it is refused", async () => {
    const stage = stages["auto-edit"];
    noOne(stage);
    expect(resultText(await stage.runTool(untrustedServer))).toBe("Not run: docs__read_page needs a person's approval (approval mode auto-edit) and no one is at the terminal.");
    expect(resultText(await stage.runTool(commandTool))).toMatch(/^Not run: shout needs a person's approval \(approval mode auto-edit\)/);
  });

  it("auto-edit: with a yes it runs, after the person saw the server, the tool and the arguments", async () => {
    const stage = stages["auto-edit"];
    person(stage, "y", "y");
    expect(resultText(await stage.runTool(untrustedServer))).toMatch(/^\[resource docs:\/\/pages\/style\.md\]/);
    expect(printed.join("\n")).toContain('Run docs: read_page (MCP server docs)?\n  {\n    "name": "style"\n  }');
    expect(resultText(await stage.runTool(commandTool))).toBe('name=shout\ninput={"text":"hi"}\n');
  });

  it("yolo: nothing asks, not even an untrusted tool", async () => {
    const stage = stages.yolo;
    noOne(stage);
    expect(resultText(await stage.runTool(commandTool))).toBe('name=shout\ninput={"text":"hi"}\n');
  });

  it("plan: an outside tool is refused, whoever answers: the agent cannot know what it changes", async () => {
    const stage = stages.plan;
    person(stage, "y");
    const result = await stage.runTool(commandTool);
    expect(result.is_error).toBe(true);
    expect(resultText(result)).toMatch(/^Not run: the agent is in plan mode/);
  });

  it("plan: a trusted server's tool that says it only reads is run", async () => {
    const stage = stages.plan;
    noOne(stage);
    expect(resultText(await stage.runTool(untrustedServer))).toMatch(/^\[resource docs:\/\/pages\/style\.md\]/); // trusted here
  });
});

describe("s08 as a program", () => {
  const workspace = useWorkspace();
  const replay = useReplay();

  it("--list-tools: every tool and where it came from; exit 0", async () => {
    projectTools(workspace.dir, [SHOUT, { name: "két" }]);
    writeSettings(workspace.dir, COMMANDS); // and allowed before, in the person's settings
    const { code, output } = await runMain(FILE, ["--list-tools"]);
    expect(code).toBe(0);
    expect(output).toContain(
      `6 tools in ${workspace.dir}:\n  bash        built in\n  read_file   built in\n  write_file  built in\n  edit_file   built in\n  shout       discovery command\n  k_t         discovery command, where it is called "két"\n`,
    );
  });

  it("--list-tools with a problem: the problem, the built-in tools, and exit 1", async () => {
    writeSettings(workspace.dir, { mcpServers: { docs: { command: "node", args: "x" } } });
    const { code, output } = await runMain(FILE, ["--list-tools", "--approval-mode", "plan"]);
    expect(code).toBe(1);
    expect(output).toContain("[tools] .agent/settings.json: mcpServers.docs.args must be an array; that server was left out\n4 tools in");
  });

  it("with a key, the tools are discovered before the first prompt: the first request already offers them", async () => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, COMMANDS);
    const session = replay(scenarioOf([reply.text("I have shout.")]));
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789");
    vi.resetModules();
    try {
      const { code } = await runMain(FILE, ["Which", "tools?"]);
      expect(code).toBe(0);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(session.requests[0].tools?.map((tool) => (tool as { name: string }).name)).toEqual(["bash", "read_file", "write_file", "edit_file", "shout"]);
  });

  it("ends every server and what it started when the program ends (a real process, checked by pid)", async () => {
    const pidFile = path.join(workspace.dir, "docs.pid");
    writeSettings(workspace.dir, { mcpServers: { docs: node(DOCS_SERVER, "--pid-file", pidFile, "--child") } });
    const run = await runStage(FILE, { cwd: workspace.dir, args: ["--list-tools"], timeoutMs: 40_000 });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("docs__read_page    MCP server docs");
    const server = Number(readFileSync(pidFile, "utf8"));
    const child = Number(readFileSync(`${pidFile}.child`, "utf8"));
    expect(await eventually(() => !isRunning(server) && !isRunning(child))).toBe(true);
  });
});

describe("s08's demo", () => {
  const workspace = useWorkspace();
  usePrinted();

  it("replays with the fixture command and server: the start allowed, the wrong page refused, the image kept, the project's tool asked for and run", async () => {
    // The stage and the replay share one terminal module, so the recorded person answers the stage.
    vi.resetModules();
    const stage = (await import(FILE)) as Stage;
    const { replayScenario } = await import("../lib/course/session.ts");
    const scenario = loadScenario("s08");
    const session = await replayScenario(stage, scenario, { workspace: workspace.dir });
    try {
      expectWholeSession("s08", session, scenario);
      const results = session.requests.slice(1).map((request) => {
        const content = request.messages.at(-1)!.content as ToolResultBlockParam[];
        return content[0];
      });
      expect(results[0]).toMatchObject({ is_error: true, content: 'Error: No page named "release". Pages: releasing, style.' });
      expect(resultText(results[1])).toMatch(/^\[resource docs:\/\/pages\/releasing\.md\]\n# Releasing/);
      expect(results[2].content).toEqual([expect.objectContaining({ type: "image" }), { type: "text", text: expect.stringMatching(/^release-flow: /) }]);
      expect(resultText(results[3])).toContain("src/report.js:4:  // TODO(#57)");
      expect(resultText(results[4])).toBe("pocket-budget: 1.4.2 -> 1.5.0\n");
      expect(JSON.parse(readFileSync("package.json", "utf8")).version).toBe("1.5.0");
      expect(readFileSync("CHANGELOG.md", "utf8")).toContain("## 1.5.0\n");
      expect(session.requests[0].tools?.map((tool) => (tool as { name: string }).name)).toEqual([
        ...["bash", "read_file", "write_file", "edit_file", "read_mcp_resource", "docs__read_page", "docs__get_diagram", "bump_version"],
      ]);
    } finally {
      await stage.dropDiscoveredTools();
    }
  });
});

afterEach(() => vi.unstubAllEnvs());
