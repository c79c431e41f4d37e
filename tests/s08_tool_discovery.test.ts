// s08: tools from outside the program. Each rule is a test: the settings file is checked and a
// mistake is named with its place; a discovery command's declarations become tools that run
// the call command; MCP servers (the fixture server, a real process) give tools named
// server__tool whose results keep their images; every failure is a clear message while the
// rest works; outside tools ask first unless their server is trusted; nothing is left running.
// Starting the fixture server costs about a second of CPU, so the tests that need one share it.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import {
  eventually, isRunning, REPO_ROOT, reply, resultText, runMain, runStage, scenarioOf, stageFile, usePrinted, useReplay, useWorkspace,
} from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

// S08_FILE: a changed copy of the stage (agents/.s08-*.ts), to see a test fail when a mechanism is broken.
const FILE = process.env.S08_FILE ?? stageFile("s08");
const DOCS_SERVER = path.join(REPO_ROOT, "fixtures", "s08", "docs-server.mjs");
const node = (script: string, ...args: string[]) => ({ command: process.execPath, args: [script, ...args] });

type Terminal = typeof import("../lib/runtime/terminal.ts");
type Report = { tools: string[]; problems: string[] };
type Stage = {
  term: Terminal;
  registry: { getTool(name: string): { name: string; kind: string } | undefined; getAllTools(): { name: string }[] };
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  agentLoop(messages: unknown[]): Promise<void>;
  discoverTools(): Promise<Report>;
  dropDiscoveredTools(): Promise<void>;
  prepareReplay(scenario: unknown): Promise<void>;
  TOOLS: { name: string; description: string; input_schema: Record<string, unknown> }[];
  TIME_LIMITS: { discovery: number; call: number; serverStart: number; serverCall: number };
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

function writeSettings(dir: string, settings: unknown): void {
  mkdirSync(path.join(dir, ".agent"), { recursive: true });
  writeFileSync(path.join(dir, ".agent", "settings.json"), typeof settings === "string" ? settings : JSON.stringify(settings, null, 2));
}

/** A project's tools as small files in the workspace: `cat tools.json` lists them, `bash call.sh <name>` runs one. */
function projectTools(dir: string, declarations: unknown, callScript = 'echo "name=$1"; echo "input=$(cat)"'): void {
  writeFileSync(path.join(dir, "tools.json"), JSON.stringify(declarations));
  writeFileSync(path.join(dir, "call.sh"), `${callScript}\n`);
}
const SHOUT = { name: "shout", description: "Say the text louder.", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } };
const COMMANDS = { tools: { toolDiscoveryCommand: "cat tools.json", toolCallCommand: "bash call.sh" } };

describe("s08 the settings file, .agent/settings.json", () => {
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
    expect(problems).toEqual([".agent/settings.json is not valid JSON: line 4, column 5: Expected ',' or '}' after property value"]);
    expect(printed).toContain(`[tools] ${problems[0]}; only the built-in tools are used`);
    expect(stage.TOOLS).toHaveLength(4);
    writeFileSync("a.txt", "still here");
    expect(resultText(await stage.runTool(call("read_file", { path: "a.txt" })))).toBe("still here");
  });

  it.each([
    [{ mcpServers: { docs: { command: "node", args: "server.js" } } }, "mcpServers.docs.args must be an array"],
    [{ mcpServer: { docs: { command: "node" } } }, 'unknown setting "mcpServer"'],
    [{ mcpServers: { docs: { args: ["server.js"] } } }, 'mcpServers.docs: "command" is missing'],
    [{ mcpServers: { docs: { command: "node", trust: "yes" } } }, "mcpServers.docs.trust must be a boolean"],
    [{ mcpServers: { docs: { command: "node", timeout: 0 } } }, "mcpServers.docs.timeout must be >= 1"],
    [{ mcpServers: { docs: { command: "node", port: 3000 } } }, 'mcpServers.docs: unknown setting "port"'],
    [{ tools: { toolDiscoveryCommand: "cat tools.json" } }, "tools must have property toolCallCommand when property toolDiscoveryCommand is present"],
    [["mcpServers"], "the settings must be an object"],
  ])("%j: %s, and nothing of the file is used", async (settings, problem) => {
    projectTools(workspace.dir, [SHOUT]);
    writeSettings(workspace.dir, Array.isArray(settings) ? settings : { ...COMMANDS, ...settings });
    expect(await stage.discoverTools()).toEqual({ tools: [], problems: [`.agent/settings.json: ${problem}`] });
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file"]);
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

describe("s08 MCP servers (one discovery: the fixture server, and four that never become one)", () => {
  const workspace = useSharedWorkspace();
  let stage: Stage;
  let report: Report;
  const printedAtStart: string[] = [];
  let startedIn = 0;

  beforeAll(async () => {
    stage = await stageIn("default");
    writeSettings(workspace.dir, {
      mcpServers: {
        docs: { ...node(DOCS_SERVER, "--test-tools"), trust: true },
        // Any program can be named as a server: these three never become one. (sh, not bash: a
        // bash whose stdin is a socket, as a server's is, may read ~/.bashrc first.)
        stuck: { command: "sh", args: ["-c", "echo $$ > stuck.pid; sleep 60 & echo $! >> stuck.pid; wait"], timeout: 1500 },
        broken: { command: "sh", args: ["-c", "echo 'docs-index: cannot open the index' >&2; exit 1"] },
        missing: { command: "./no-such-server", args: ["--stdio"] },
        // Writes down the environment it was given, then stops.
        nosy: { command: "sh", args: ["-c", "env > server-env.txt"], env: { DOCS_TOKEN: "from-the-settings" } },
      },
    });
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
  usePrinted();

  it("registers each server's tools as server__tool, in the order of the settings, and says what it found", () => {
    expect(report.tools.slice(0, 7)).toEqual(["docs__read_page", "docs__get_diagram", "docs__echo", "docs__slow", "docs__crash", "docs__fail", "docs__kinds"]);
    expect(printedAtStart[0]).toMatch(/^\[tools\] MCP server docs \(trusted\): docs__read_page, docs__get_diagram, docs__echo,/);
    const readPage = stage.TOOLS.find((tool) => tool.name === "docs__read_page")!;
    expect(readPage.description).toBe("Read one page of the team's docs, by name (releasing, style).");
    expect(readPage.input_schema).toEqual({ type: "object", properties: { name: { type: "string", description: "The page's name." } }, required: ["name"] });
    // Someone else's code: never a read, even from a trusted server, so plan mode refuses it and it runs alone.
    for (const name of report.tools) expect(stage.registry.getTool(name)?.kind).toBe("execute");
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
    expect(startedIn).toBeLessThan(20_000); // the fixture server's start under load, not the hung one's forever
    const [server, child] = readFileSync(path.join(workspace.dir, "stuck.pid"), "utf8").trim().split("\n").map(Number);
    expect(await eventually(() => !isRunning(server) && !isRunning(child))).toBe(true);
  });

  it("a server that will not start, or does not exist: a clear message each, and the other tools work", async () => {
    expect(report.problems).toContain("MCP server broken: could not start: it stopped: docs-index: cannot open the index");
    expect(report.problems).toContain('MCP server missing: could not start: "./no-such-server" was not found');
    expect(report.problems).toHaveLength(4); // and nosy, which stops at once
    expect(report.tools.some((name) => /^(stuck|broken|missing|nosy)__/.test(name))).toBe(false);
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
      { type: "text", text: "[resource link docs://pages/releasing.md (releasing)]" },
      { type: "text", text: "[audio content, which cannot be shown to the model]" },
    ]);
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
    try {
      const slow = await stage.runTool(call("docs__slow", { ms: 3000 }));
      expect(resultText(slow)).toBe("Error: the MCP server docs gave no answer within 0.3 s");
    } finally {
      stage.TIME_LIMITS.serverCall = 120_000;
    }
    expect(resultText(await stage.runTool(call("docs__echo", { text: "next" })))).toBe("next");
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

describe("s08 approval modes for outside tools: trust skips the question, the mode still rules", () => {
  const workspace = useSharedWorkspace();
  const stages: Record<string, Stage> = {};
  const printed = usePrinted();

  // One stage per mode (the mode is read when a stage loads; default is the describe above).
  // An untrusted server where trust could change the outcome (auto-edit asks before commands);
  // elsewhere the project's command tools, which are never trusted. discoverTools reads the
  // settings as soon as it is called, so each stage gets the settings written just before.
  beforeAll(async () => {
    for (const mode of ["auto-edit", "yolo", "plan"]) stages[mode] = await stageIn(mode);
    projectTools(workspace.dir, [SHOUT]);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    writeSettings(workspace.dir, COMMANDS);
    const others = [stages.yolo.discoverTools(), stages.plan.discoverTools()];
    writeSettings(workspace.dir, { ...COMMANDS, mcpServers: { docs: node(DOCS_SERVER) } });
    await Promise.all([stages["auto-edit"].discoverTools(), ...others]);
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
});

describe("s08 as a program", () => {
  const workspace = useWorkspace();
  const replay = useReplay();

  it("--list-tools: every tool and where it came from; exit 0", async () => {
    projectTools(workspace.dir, [SHOUT, { name: "két" }]);
    writeSettings(workspace.dir, COMMANDS);
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
    expect(output).toContain("[tools] .agent/settings.json: mcpServers.docs.args must be an array; only the built-in tools are used\n4 tools in");
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

  it("replays with the fixture command and server: the wrong page refused, the image kept, the project's tool asked for and run", async () => {
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
      expect(session.requests[0].tools?.map((tool) => (tool as { name: string }).name)).toEqual(["bash", "read_file", "write_file", "edit_file", "bump_version", "docs__read_page", "docs__get_diagram"]);
    } finally {
      await stage.dropDiscoveredTools();
    }
  });
});

afterEach(() => vi.unstubAllEnvs());
