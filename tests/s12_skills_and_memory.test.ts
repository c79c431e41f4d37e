// s12: skills loaded when they are needed, and memory that survives from one session to the
// next. Each rule is a test in its own workspace, with HOME pointed at a temporary folder so
// nothing reads or writes the real home. Skills: the system prompt lists each valid
// skills/<name>/SKILL.md by name and description; load_skill returns its instructions; a bad
// file is skipped with a warning naming it and the problem. Memory: save_memory adds one
// bullet under one heading, never twice, atomically, within a size cap; the system prompt
// reads the skills and the memory once, at the first request of a session.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { MessageCreateParams, MessageParam, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario } from "../lib/course/scenario.ts";
import { reply, resultText, runMain, scenarioOf, stageFile, toolResults, useOutside, usePrinted, useReplay, useWorkspace } from "./helpers.ts";
import { expectWholeSession } from "./whole-session.ts";

const FILE = stageFile("s12");
type Stage = {
  term: typeof import("../lib/runtime/terminal.ts");
  /** lib/course/session.ts loaded with the stage, so a replay's person types on the stage's own terminal. */
  replayScenario: typeof import("../lib/course/session.ts").replayScenario;
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  agentLoop(messages: MessageParam[]): Promise<void>;
  prepareReplay(): void;
  TOOLS: { name: string }[];
};

/** The stage loaded afresh (a new program: nothing kept from an earlier load), with an approval mode. */
async function stageIn(mode: string): Promise<Stage> {
  vi.stubEnv("APPROVAL_MODE", mode);
  vi.resetModules();
  try {
    const loaded = { ...(await import(FILE)), term: await import("../lib/runtime/terminal.ts") };
    return { ...loaded, replayScenario: (await import("../lib/course/session.ts")).replayScenario } as Stage;
  } finally {
    vi.unstubAllEnvs();
  }
}

// Loaded before any workspace exists, as the program is: what it knows must come from the
// workspace of the first request, not from the folder it was loaded in.
const stage = await stageIn("default");
const yolo = await stageIn("yolo");

let ids = 0;
const call = (name: string, input: Record<string, unknown>): ToolUseBlock => ({ type: "tool_use", id: `toolu_s12_${++ids}`, name, input }) as ToolUseBlock;
const text = (result: ToolResultBlockParam) => resultText(result);

/** A SKILL.md with this frontmatter and these instructions. */
const skillText = (name: string, description: string, instructions = `Follow the ${name} steps.`) => `---\nname: ${name}\ndescription: ${description}\n---\n${instructions}\n`;
function writeSkill(folder: string, content: string): void {
  mkdirSync(path.join("skills", folder), { recursive: true });
  writeFileSync(path.join("skills", folder, "SKILL.md"), content);
}

/**
 * HOME, for each test: an empty folder of its own (tests/setup.ts already keeps every file
 * away from the real one). Set directly, not with vi.stubEnv: stageIn's vi.unstubAllEnvs
 * would put it back in the middle of a test.
 */
function useHome(): { readonly dir: string } {
  const state = { dir: "" };
  let before: string | undefined;
  beforeEach(() => {
    before = process.env.HOME;
    state.dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-home-")));
    process.env.HOME = state.dir;
  });
  afterEach(() => {
    process.env.HOME = before;
    rmSync(state.dir, { recursive: true, force: true });
  });
  return state;
}

const MEMORY = ".agent/MEMORY.md";
const HEADER = "# Memory\n\nFacts the agent keeps with save_memory, read at the start of every session. Edit freely.\n\n## Saved facts\n\n";
const memory = () => readFileSync(MEMORY, "utf8");
const bullets = (file = MEMORY) => readFileSync(file, "utf8").split("\n").filter((line) => line.startsWith("- "));

// ---------------------------------------------------------------------------------------

describe("s12 skills: listed by name and description, loaded when asked", () => {
  useWorkspace();
  useHome();
  const replay = useReplay();
  const printed = usePrinted();
  beforeEach(() => stage.prepareReplay());

  /** The system prompt of one request, with the workspace as it is now. */
  async function systemPrompt(): Promise<string> {
    const session = replay(scenarioOf([reply.text("ok")]));
    await stage.agentLoop([{ role: "user", content: "hi" }]);
    return session.requests[0].system as string;
  }

  it("are two more tools in the registry, next to the core tools", () => {
    expect(stage.TOOLS.map((tool) => tool.name)).toEqual(["bash", "read_file", "write_file", "edit_file", "load_skill", "save_memory"]);
  });

  it("puts each skill's name and description in the system prompt, in name order, and not its instructions", async () => {
    writeSkill("release", skillText("release", "Cut a release.", "SECRET-RELEASE-STEPS"));
    writeSkill("changelog", skillText("changelog", "Add a CHANGELOG.md entry.", "SECRET-CHANGELOG-STEPS"));
    const system = await systemPrompt();
    expect(system).toContain("Skills (load_skill gives the instructions):\n- changelog: Add a CHANGELOG.md entry.\n- release: Cut a release.\n");
    expect(system).not.toContain("SECRET-");
    expect(printed.filter((line) => line.includes("[skills]"))).toEqual([]);
  });

  it("says there are none when there is no skills folder", async () => {
    expect(await systemPrompt()).toContain("Skills (load_skill gives the instructions):\n(none: there is no skills/<name>/SKILL.md in the workspace)");
  });

  it("load_skill returns the instructions in the tool result, and the person sees one line", async () => {
    writeSkill("changelog", skillText("changelog", "Add an entry.", "1. Read CHANGELOG.md.\n2. Add the entry under ## Unreleased."));
    const session = replay(scenarioOf([reply.tools([{ name: "load_skill", input: { name: "changelog" } }]), reply.text("done")]));
    await stage.agentLoop([{ role: "user", content: "add an entry" }]);
    const [result] = toolResults(session, 1);
    expect(result.is_error).toBeUndefined();
    expect(text(result)).toBe('<skill name="changelog" folder="skills/changelog/">\n1. Read CHANGELOG.md.\n2. Add the entry under ## Unreleased.\n</skill>');
    expect(printed).toContain("  skills/changelog/SKILL.md: 2 lines of instructions loaded");
  });

  it("load_skill reads the file as it is now, so an edit made during the session is what the model follows", async () => {
    writeSkill("changelog", skillText("changelog", "Add an entry.", "old steps"));
    await systemPrompt();
    writeSkill("changelog", skillText("changelog", "Add an entry.", "new steps"));
    expect(text(await stage.runTool(call("load_skill", { name: "changelog" })))).toContain("\nnew steps\n");
  });

  it("takes a BOM, CRLF line endings, a description over several lines and keys of its own", async () => {
    writeSkill("deploy", "\uFEFF---\r\nname: deploy\r\ndescription: >\r\n  Deploy the site,\r\n  after the checks pass.\r\nlicense: MIT\r\nmetadata:\r\n  owner: web\r\n---\r\nRun the checks, then deploy.\r\n");
    expect(await systemPrompt()).toContain("- deploy: Deploy the site, after the checks pass.\n");
    expect(text(await stage.runTool(call("load_skill", { name: "deploy" })))).toContain("Run the checks, then deploy.");
  });

  const broken: [string, string, string][] = [
    ["no frontmatter", "# Notes\nNothing here yet.\n", 'it has no frontmatter: the file must start with a line "---", then "name:" and "description:", then "---"'],
    ["an unclosed frontmatter", "---\nname: bad\ndescription: x\n# Steps\n", 'its frontmatter is not closed: no line "---" after it'],
    ["malformed YAML", "---\nname: bad\ndescription: [unclosed\n---\nsteps\n", "its frontmatter is not valid YAML (line 3 of the file): Flow sequence in block collection must be sufficiently indented and end with a ]"],
    ["a key given twice", "---\nname: bad\nname: bad\ndescription: x\n---\nsteps\n", "its frontmatter is not valid YAML (line 3 of the file): Map keys must be unique"],
    ["a list for frontmatter", "---\n- name\n- description\n---\nsteps\n", 'its frontmatter is not a set of "key: value" lines'],
    ["an empty frontmatter", "---\n---\nsteps\n", 'its frontmatter is not a set of "key: value" lines'],
    ["no name", "---\ndescription: Does things.\n---\nsteps\n", 'its "name" is missing, or is not text'],
    ["a name that is a number", "---\nname: 42\ndescription: Does things.\n---\nsteps\n", 'its "name" is missing, or is not text'],
    ["no description", "---\nname: bad\n---\nsteps\n", 'its "description" is missing, or is not text'],
    ["an empty description", "---\nname: bad\ndescription: '  '\n---\nsteps\n", 'its "description" is missing, or is not text'],
    ["a name that is not the folder's", skillText("other", "Does things."), 'its name "other" is not its folder\'s name "bad"; they must be the same'],
    ["a name with capitals and underscores", "---\nname: Bad_Name\ndescription: x\n---\nsteps\n", 'its name "Bad_Name" is not 64 characters at most of a-z, 0-9 and single hyphens'],
    ["a description over 1024 characters", skillText("bad", "d".repeat(1025)), "its description is 1025 characters; at most 1024, since every request carries it"],
    ["no instructions", "---\nname: bad\ndescription: x\n---\n\n  \n", "it has no instructions after its frontmatter"],
    ["instructions over 20,000 characters", skillText("bad", "Huge.", "step\n".repeat(5000)), "its instructions are 24999 characters, over the 20000 a skill loads at once; keep SKILL.md short"],
  ];

  it.each(broken)("skips a SKILL.md with %s, with a warning naming the file and the problem; the others stay", async (_case, content, problem) => {
    writeSkill("good", skillText("good", "A good skill."));
    writeSkill("bad", content);
    const system = await systemPrompt();
    expect(system).toContain("- good: A good skill.");
    expect(system).not.toMatch(/^- (bad|other|Bad_Name):/m);
    const warnings = printed.filter((line) => line.includes("[skills]"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`[skills] skipped skills/bad/SKILL.md: ${problem}`);
    // The model asking for it anyway learns why it is not there.
    const result = await stage.runTool(call("load_skill", { name: "bad" }));
    expect(result.is_error).toBe(true);
    expect(text(result)).toContain(`The skills are: good. Skipped, as not valid: skills/bad/SKILL.md: ${problem}`);
  });

  it("skips a SKILL.md over 10 MB without loading it", async () => {
    writeSkill("big", `${skillText("big", "Big.")}${"x".repeat(11 * 1024 * 1024)}`);
    await systemPrompt();
    expect(printed.join("\n")).toContain("[skills] skipped skills/big/SKILL.md: skills/big/SKILL.md is 11.0 MB, over the 10 MB limit");
  });

  it("skips a frontmatter over 4,000 characters without parsing it: 100,000 keys answer in well under a second", async () => {
    writeSkill("good", skillText("good", "A good skill."));
    const keys = Array.from({ length: 100_000 }, (_, i) => `key${i}: v`).join("\n");
    writeSkill("keys", `---\nname: keys\ndescription: Many keys.\n${keys}\n---\nsteps\n`);
    const started = performance.now();
    const system = await systemPrompt();
    expect(performance.now() - started).toBeLessThan(1000); // 45 s and more without the cap
    expect(system).toContain("- good: A good skill.");
    expect(system).not.toContain("- keys:");
    expect(printed.join("\n")).toMatch(/\[skills\] skipped skills\/keys\/SKILL\.md: its frontmatter is \d+ characters; at most 4000, for a name, a description and a few keys/);
  });

  // The probe had 2,000 (a 2 MB prompt, every request refused); 500 of 1,000 characters each are
  // 40 times the budget already, and make a test that stays fast on a busy disk.
  it("500 skills with long descriptions: the list stays within 12,000 characters, and a note says how many more there are and how to find them", async () => {
    mkdirSync("skills");
    const names = Array.from({ length: 500 }, (_, i) => `skill-${String(i).padStart(3, "0")}`);
    for (const name of names) {
      mkdirSync(`skills/${name}`);
      writeFileSync(`skills/${name}/SKILL.md`, skillText(name, "A long description. ".repeat(50).trim()));
    }
    const system = await systemPrompt();
    const list = system.slice(system.indexOf("Skills (load_skill gives the instructions):"), system.indexOf("\n\nMemory,"));
    expect(list.length).toBeLessThan(12_000);
    expect(system.length).toBeLessThan(14_000);
    const listed = list.split("\n").filter((line) => line.startsWith("- skill-")).length;
    expect(listed).toBeGreaterThan(0);
    expect(list).toContain(`(${500 - listed} more skills are not listed here, to keep this prompt small. Each is a folder skills/<name>/ with a SKILL.md: list skills/ for their names, and load_skill loads one by its name.)`);
    expect(printed).toContainEqual(expect.stringContaining(`[skills] ${500 - listed} of 500 skills are not listed in the system prompt (its list of skills takes at most 12000 characters)`));
  });

  it("a skill left out of the list still loads by its name", async () => {
    for (let i = 0; i < 20; i++) writeSkill(`skill-${i + 10}`, skillText(`skill-${i + 10}`, "A long description. ".repeat(50).trim()));
    const system = await systemPrompt();
    expect(system).not.toContain("- skill-29:");
    expect(text(await stage.runTool(call("load_skill", { name: "skill-29" })))).toContain("Follow the skill-29 steps.");
  });

  it("skips a folder with no SKILL.md, and ignores loose files and hidden folders", async () => {
    mkdirSync("skills/empty", { recursive: true });
    mkdirSync("skills/.git", { recursive: true });
    writeFileSync("skills/README.md", "how to write skills");
    writeSkill("good", skillText("good", "A good skill."));
    expect(await systemPrompt()).toContain("Skills (load_skill gives the instructions):\n- good: A good skill.\n");
    expect(printed.filter((line) => line.includes("[skills]"))).toEqual([expect.stringContaining("[skills] skipped skills/empty/SKILL.md: there is no SKILL.md in the folder")]);
  });

  describe("the sandbox's rules apply to skills", () => {
    const outside = useOutside();

    it("skips a SKILL.md that is a symlink leading out of the workspace, and never shows what it points at", async () => {
      writeFileSync(path.join(outside.dir, "SKILL.md"), skillText("stolen", "Not yours.", "OUTSIDE-SECRET"));
      mkdirSync("skills/stolen", { recursive: true });
      symlinkSync(path.join(outside.dir, "SKILL.md"), "skills/stolen/SKILL.md");
      const system = await systemPrompt();
      expect(system).not.toContain("stolen: Not yours.");
      expect(printed.join("\n")).toContain("[skills] skipped skills/stolen/SKILL.md: skills/stolen/SKILL.md leads outside the workspace through a symlink");
      expect(JSON.stringify(await stage.runTool(call("load_skill", { name: "stolen" })))).not.toContain("OUTSIDE-SECRET");
    });

    it("skips a skill folder that links out, and reads no skill through a skills folder that links out", async () => {
      mkdirSync(path.join(outside.dir, "stolen"));
      writeFileSync(path.join(outside.dir, "stolen", "SKILL.md"), skillText("stolen", "Not yours."));
      mkdirSync("skills");
      symlinkSync(path.join(outside.dir, "stolen"), "skills/stolen");
      await systemPrompt();
      expect(printed.join("\n")).toContain("[skills] skipped skills/stolen/SKILL.md: skills/stolen/SKILL.md leads outside the workspace through a symlink");

      rmSync("skills", { recursive: true });
      symlinkSync(outside.dir, "skills");
      stage.prepareReplay();
      printed.length = 0;
      expect(await systemPrompt()).not.toContain("stolen: Not yours.");
      expect(printed.join("\n")).toContain("[skills] skipped skills/: skills leads outside the workspace through a symlink; no skill was read");
    });

    it("follows a link to a skill folder inside the workspace", async () => {
      mkdirSync("shared/lint", { recursive: true });
      writeFileSync("shared/lint/SKILL.md", skillText("lint", "Lint the code."));
      mkdirSync("skills");
      symlinkSync(path.resolve("shared/lint"), "skills/lint");
      expect(await systemPrompt()).toContain("- lint: Lint the code.");
    });

    it("never builds a path from the name the model sends: a name with .. in it is just an unknown name", async () => {
      writeFileSync(path.join(outside.dir, "SKILL.md"), skillText("x", "Outside.", "OUTSIDE-SECRET"));
      writeSkill("good", skillText("good", "A good skill."));
      const relative = path.relative(path.resolve("skills"), outside.dir);
      for (const name of [relative, `${relative}/SKILL.md`, "../..", "good/../good"]) {
        const result = await stage.runTool(call("load_skill", { name }));
        expect(result.is_error).toBe(true);
        expect(text(result)).toBe(`Error: there is no skill named ${JSON.stringify(name)}. The skills are: good.`);
      }
    });
  });

  it("two files claiming one name: the one in the folder of that name is the skill, the other is skipped", async () => {
    writeSkill("changelog", skillText("changelog", "The real one.", "REAL"));
    writeSkill("changelog-old", skillText("changelog", "An old copy.", "OLD"));
    const system = await systemPrompt();
    expect(system.match(/^- changelog:/gm)).toHaveLength(1);
    expect(system).toContain("- changelog: The real one.");
    expect(printed.join("\n")).toContain('[skills] skipped skills/changelog-old/SKILL.md: its name "changelog" is not its folder\'s name "changelog-old"');
    expect(text(await stage.runTool(call("load_skill", { name: "changelog" })))).toContain("REAL");
  });

  it("an unknown name gets an error listing the skills there are; with none, it says so", async () => {
    let result = await stage.runTool(call("load_skill", { name: "deploy" }));
    expect(text(result)).toBe('Error: there is no skill named "deploy". There are no skills in skills/.');
    writeSkill("changelog", skillText("changelog", "x"));
    writeSkill("release", skillText("release", "y"));
    result = await stage.runTool(call("load_skill", { name: "Changelog" }));
    expect(result.is_error).toBe(true);
    expect(text(result)).toBe('Error: there is no skill named "Changelog". The skills are: changelog, release.');
  });

  it("validation stops a call without a name before anything runs", async () => {
    const result = await stage.runTool(call("load_skill", { skill: "changelog" }));
    expect(text(result)).toBe('Error: load_skill was not run: "name" is required; "skill" is not a parameter of this tool.');
  });
});

// ---------------------------------------------------------------------------------------

describe("s12 save_memory: one fact, one bullet, under one heading", () => {
  const workspace = useWorkspace();
  const home = useHome();
  const printed = usePrinted();
  const replay = useReplay();
  beforeEach(() => yolo.prepareReplay());
  afterEach(() => stage.term.useTerminal(stage.term.nobody));

  const save = (fact: unknown, extra: Record<string, unknown> = {}) => yolo.runTool(call("save_memory", { fact, ...extra }));

  it("creates .agent/MEMORY.md with its heading and the fact as a bullet; the model gets one line, the person the diff", async () => {
    const result = await save("Run the tests with `node check.js`.");
    expect(result.is_error).toBeUndefined();
    expect(text(result)).toBe('Saved to .agent/MEMORY.md: "- Run the tests with `node check.js`.". It is in your system prompt from the next session on (in this one, you know it already).');
    expect(memory()).toBe(`${HEADER}- Run the tests with \`node check.js\`.\n`);
    expect(printed.join("\n")).toContain("+- Run the tests with `node check.js`.");
    expect(existsSync(path.join(home.dir, ".agent"))).toBe(false); // the global file only when asked for
  });

  it("adds each new fact at the end of its section, before the next heading, and keeps what the person wrote", async () => {
    mkdirSync(".agent");
    writeFileSync(MEMORY, "# Notes by hand\n\nWe deploy on Fridays.\n\n## Saved facts\n\n- First fact.\n\n## Later, by hand\n\n- Not a saved fact.\n");
    await save("Second fact.");
    expect(memory()).toBe("# Notes by hand\n\nWe deploy on Fridays.\n\n## Saved facts\n\n- First fact.\n- Second fact.\n\n## Later, by hand\n\n- Not a saved fact.\n");
  });

  it("adds the heading at the end of a file that has none, and keeps CRLF line endings", async () => {
    mkdirSync(".agent");
    writeFileSync(MEMORY, "# Team notes\r\nUse pnpm.");
    await save("Node 20 is the oldest we support.");
    expect(memory()).toBe("# Team notes\r\nUse pnpm.\r\n\r\n## Saved facts\r\n\r\n- Node 20 is the oldest we support.\r\n");
  });

  it.each([
    ["the same text", "Use pnpm, not npm."],
    ["another case", "USE PNPM, NOT NPM."],
    ["other spacing", "  Use   pnpm,\n not npm.  "],
    ["no full stop", "use pnpm, not npm"],
    ["a bullet mark in front", "- Use pnpm, not npm."],
  ])("does not add a fact twice (%s): the model is told it is there, the file stays byte for byte", async (_case, again) => {
    await save("Use pnpm, not npm.");
    const before = memory();
    const inode = statSync(MEMORY).ino;
    const result = await save(again);
    expect(result.is_error).toBeUndefined();
    expect(text(result)).toBe('Already in memory (.agent/MEMORY.md): "- Use pnpm, not npm.". Nothing was added.');
    expect(memory()).toBe(before);
    expect(statSync(MEMORY).ino).toBe(inode); // not even rewritten
  });

  it("a fact the person wrote by hand counts too; a different fact is added", async () => {
    mkdirSync(".agent");
    writeFileSync(MEMORY, "# Memory\n\n* Use pnpm.\n");
    expect(text(await save("use pnpm"))).toMatch(/^Already in memory/);
    await save("Use pnpm workspaces.");
    expect(bullets()).toEqual(["- Use pnpm workspaces."]);
  });

  it("a duplicate asks the person nothing, even in default mode with no one there: there is nothing to approve", async () => {
    await save("Use pnpm.");
    stage.term.useTerminal(stage.term.nobody);
    const result = await stage.runTool(call("save_memory", { fact: "use pnpm" }));
    expect(text(result)).toMatch(/^Already in memory/);
  });

  it("a fact with newlines and Markdown is one bullet: no heading, no second bullet, no list marks", async () => {
    await save("First.");
    const result = await save("Tabs, not spaces.\n\n## Injected heading\n- injected bullet\n# another");
    expect(result.is_error).toBeUndefined();
    const lines = memory().split("\n");
    expect(lines.filter((line) => line.startsWith("#"))).toEqual(["# Memory", "## Saved facts"]);
    expect(bullets()).toEqual(["- First.", "- Tabs, not spaces. ## Injected heading - injected bullet # another"]);
    await save("## Only a heading\n");
    expect(bullets().at(-1)).toBe("- Only a heading");
    expect(memory().split("\n").filter((line) => line.startsWith("#"))).toHaveLength(2);
  });

  it.each([
    ["", "the fact is empty: say in one sentence what to remember"],
    [" \n\t ", "the fact is empty: say in one sentence what to remember"],
    ["- ", "the fact is empty: say in one sentence what to remember"],
    ["x".repeat(501), "the fact is 501 characters; a fact is one short sentence (at most 500)"],
  ])("refuses the fact %j with a clear error, and writes nothing", async (fact, message) => {
    const result = await save(fact);
    expect(result.is_error).toBe(true);
    expect(text(result)).toBe(`Error: ${message}`);
    expect(existsSync(".agent")).toBe(false);
  });

  it("refuses a fact of the wrong type, or a scope that does not exist, before anything runs", async () => {
    expect(text(await save(42))).toBe('Error: save_memory was not run: "fact" must be a string.');
    expect(text(await save("x", { scope: "team" }))).toBe('Error: save_memory was not run: "scope" must be one of workspace, global.');
    expect(existsSync(".agent")).toBe(false);
  });

  it("keeps the file within 4,000 characters: a fact that would pass the cap is refused, with what to do, and nothing is lost", async () => {
    // Filled by hand to 3,950 characters; a 40-character fact fits, the next does not.
    mkdirSync(".agent");
    const filler = `${HEADER}${"- an old fact that takes up some room.\n".repeat(100)}`.slice(0, 3950).replace(/[^\n]*$/, "");
    writeFileSync(MEMORY, filler);
    const fits = "F".repeat(4000 - filler.length - 3);
    expect((await save(fits)).is_error).toBeUndefined();
    expect(memory().length).toBe(4000);
    const full = memory();
    const result = await save("One more fact.");
    expect(result.is_error).toBe(true);
    expect(text(result)).toBe(
      "Error: memory is full: with this fact .agent/MEMORY.md would be 4017 characters, over the 4000 that keep the system prompt small. " +
        "Nothing was saved. Tell the person, and ask which facts to remove (they can edit .agent/MEMORY.md); meanwhile the fact stays in this conversation only",
    );
    expect(memory()).toBe(full);
  });

  it("writes atomically: a new file replaces the old by rename, no temporary file is left, the mode stays", async () => {
    await save("First.");
    chmodSync(MEMORY, 0o600);
    const inode = statSync(MEMORY).ino;
    await save("Second.");
    expect(statSync(MEMORY).ino).not.toBe(inode);
    expect(statSync(MEMORY).mode & 0o777).toBe(0o600);
    expect(readdirSync(".agent")).toEqual(["MEMORY.md"]);
  });

  it("refuses a read-only memory file with a clear error, and leaves it as it was", async () => {
    await save("First.");
    chmodSync(MEMORY, 0o444);
    const result = await save("Second.");
    expect(result.is_error).toBe(true);
    expect(text(result)).toBe("Error: the fact was not saved: .agent/MEMORY.md is read-only (mode 444), so it is left as it is; if it should change, make it writable first (chmod u+w)");
    expect(bullets()).toEqual(["- First."]);
  });

  it("gives a clear error when the memory file cannot be one: .agent is a file, or MEMORY.md a folder", async () => {
    writeFileSync(".agent", "not a folder");
    let result = await save("A fact.");
    expect(result.is_error).toBe(true);
    expect(text(result)).toMatch(/^Error: the fact was not saved: .*(not a directory|is a file, not a folder)/i);
    expect(readFileSync(".agent", "utf8")).toBe("not a folder");
    rmSync(".agent");
    mkdirSync(MEMORY, { recursive: true });
    result = await save("A fact.");
    expect(text(result)).toBe("Error: .agent/MEMORY.md is a directory; list it with bash (ls)");
  });

  describe("outside the workspace", () => {
    const outside = useOutside();

    it("refuses a memory file that is a symlink leading out of the workspace, and writes nothing there", async () => {
      writeFileSync(path.join(outside.dir, "notes.md"), "theirs\n");
      mkdirSync(".agent");
      symlinkSync(path.join(outside.dir, "notes.md"), MEMORY);
      const result = await save("A fact.");
      expect(text(result)).toBe("Error: .agent/MEMORY.md leads outside the workspace through a symlink");
      expect(readFileSync(path.join(outside.dir, "notes.md"), "utf8")).toBe("theirs\n");
    });
  });

  it("keeps both facts of two saves in one reply, in call order, each result with its call's id", async () => {
    const session = replay(
      scenarioOf([
        reply.tools([
          { id: "toolu_a", name: "save_memory", input: { fact: "First fact." } },
          { id: "toolu_b", name: "save_memory", input: { fact: "Second fact." } },
          { id: "toolu_c", name: "save_memory", input: { fact: "first fact" } },
        ]),
        reply.text("saved"),
      ]),
    );
    await yolo.agentLoop([{ role: "user", content: "remember these" }]);
    const results = toolResults(session, 1);
    expect(results.map((result) => result.tool_use_id)).toEqual(["toolu_a", "toolu_b", "toolu_c"]);
    expect(results.map(text)).toEqual([
      expect.stringMatching(/^Saved to \.agent\/MEMORY\.md: "- First fact\."/),
      expect.stringMatching(/^Saved to \.agent\/MEMORY\.md: "- Second fact\."/),
      'Already in memory (.agent/MEMORY.md): "- First fact.". Nothing was added.',
    ]);
    expect(bullets()).toEqual(["- First fact.", "- Second fact."]);
  });

  it("the global file, only when asked for: written under HOME, read in every workspace after the workspace's own", async () => {
    const result = await save("I prefer short answers.", { scope: "global" });
    expect(text(result)).toMatch(/^Saved to ~\/\.agent\/MEMORY\.md: "- I prefer short answers\."/);
    expect(readFileSync(path.join(home.dir, ".agent", "MEMORY.md"), "utf8")).toBe(`${HEADER}- I prefer short answers.\n`);
    expect(existsSync(".agent")).toBe(false);
    await save("This project uses pnpm.");
    // Another workspace, a new session: the global fact comes along, the other workspace's does not.
    const other = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-other-")));
    process.chdir(other);
    try {
      const session = replay(scenarioOf([reply.text("ok")]));
      await yolo.agentLoop([{ role: "user", content: "hi" }]);
      const system = session.requests[0].system as string;
      expect(system).toContain('<memory file="~/.agent/MEMORY.md">\n# Memory');
      expect(system).toContain("- I prefer short answers.");
      expect(system).not.toContain("This project uses pnpm.");
    } finally {
      process.chdir(workspace.dir);
      rmSync(other, { recursive: true, force: true });
    }
    yolo.prepareReplay();
    const session = replay(scenarioOf([reply.text("ok")]));
    await yolo.agentLoop([{ role: "user", content: "hi" }]);
    const system = session.requests[0].system as string;
    expect(system.indexOf("- I prefer short answers.")).toBeLessThan(system.indexOf("- This project uses pnpm."));
  });

  it("asks the person before saving, showing the file and the diff; plan mode refuses; no one there, nothing is written", async () => {
    stage.term.useTerminal(stage.term.scriptedTerminal(["y"], new PassThrough() as unknown as NodeJS.WriteStream));
    const result = await stage.runTool(call("save_memory", { fact: "Use pnpm.", scope: "global" }));
    expect(result.is_error).toBeUndefined();
    expect(printed.join("\n")).toContain("Save to memory (~/.agent/MEMORY.md)?\n  --- ~/.agent/MEMORY.md\n  +++ ~/.agent/MEMORY.md");
    stage.term.useTerminal(stage.term.nobody);
    const refused = await stage.runTool(call("save_memory", { fact: "Use tabs." }));
    expect(text(refused)).toBe("Not run: save_memory needs a person's approval (approval mode default) and no one is at the terminal.");
    const planning = await stageIn("plan");
    expect(text(await planning.runTool(call("save_memory", { fact: "Use tabs." })))).toMatch(/^Not run: the agent is in plan mode/);
    expect(existsSync(".agent")).toBe(false);
  });

  it("auto-edit: the workspace's memory is saved unasked, the global file asks (every project reads it); yolo does not ask", async () => {
    const editing = await stageIn("auto-edit");
    editing.term.useTerminal(editing.term.nobody);
    expect(text(await editing.runTool(call("save_memory", { fact: "Use pnpm." })))).toMatch(/^Saved to \.agent\/MEMORY\.md/);
    const global = await editing.runTool(call("save_memory", { fact: "I prefer short answers.", scope: "global" }));
    expect(text(global)).toBe("Not run: save_memory needs a person's approval (approval mode auto-edit) and no one is at the terminal.");
    expect(existsSync(path.join(home.dir, ".agent"))).toBe(false);
    const wild = await stageIn("yolo");
    wild.term.useTerminal(wild.term.nobody);
    expect(text(await wild.runTool(call("save_memory", { fact: "I prefer short answers.", scope: "global" })))).toMatch(/^Saved to ~\/\.agent\/MEMORY\.md/);
  });
});

// ---------------------------------------------------------------------------------------

describe("s12 knowledge: read at the first request of a session, the same for all of it", () => {
  useWorkspace();
  useHome();
  const replay = useReplay();
  const printed = usePrinted();
  beforeEach(() => yolo.prepareReplay());

  const systems = (requests: MessageCreateParams[]) => requests.map((request) => request.system as string);

  it("memory saved in a session is not in that session's later requests; the next session starts with it", async () => {
    writeSkill("changelog", skillText("changelog", "Add an entry."));
    const session = replay(
      scenarioOf([
        reply.tools([{ name: "save_memory", input: { fact: "Run the tests with node check.js." } }]),
        reply.tools([{ name: "write_file", input: { path: "skills/later/SKILL.md", content: skillText("later", "Added later.") } }]),
        reply.text("saved"),
        reply.text("still here"),
      ]),
    );
    const messages: MessageParam[] = [{ role: "user", content: "remember it" }];
    await yolo.agentLoop(messages);
    messages.push({ role: "user", content: "and now?" });
    await yolo.agentLoop(messages);
    const [first, ...rest] = systems(session.requests);
    expect(first).toContain("(none saved yet)");
    expect(rest.every((system) => system === first)).toBe(true); // one system prompt for the session: the prompt cache holds
    expect(first).not.toContain("- later:");
    // The skill written during the session is not listed, but it can be loaded.
    expect(text(await yolo.runTool(call("load_skill", { name: "later" })))).toContain("Follow the later steps.");

    yolo.prepareReplay(); // a new session
    const next = replay(scenarioOf([reply.text("ok")]));
    await yolo.agentLoop([{ role: "user", content: "hi" }]);
    const [system] = systems(next.requests);
    expect(system).toContain(`<memory file=".agent/MEMORY.md">\n${HEADER}- Run the tests with node check.js.\n</memory>`);
    expect(system).toContain("- changelog: Add an entry.\n- later: Added later.");
  });

  it("warns about a bad skill once per session, not at every request", async () => {
    writeSkill("bad", "no frontmatter");
    replay(scenarioOf([reply.tools([{ name: "read_file", input: { path: "skills/bad/SKILL.md" } }]), reply.text("ok")]));
    await yolo.agentLoop([{ role: "user", content: "hi" }]);
    expect(printed.filter((line) => line.includes("[skills] skipped"))).toHaveLength(1);
  });

  it("a new workspace is a new session, so each test and each replay reads its own", async () => {
    const first = replay(scenarioOf([reply.text("ok")]));
    await yolo.agentLoop([{ role: "user", content: "hi" }]);
    expect(systems(first.requests)[0]).toContain("(none saved yet)");
    const other = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-other-")));
    const home = process.cwd();
    mkdirSync(path.join(other, ".agent"));
    writeFileSync(path.join(other, MEMORY), "# Memory\n\n- Other folder.\n");
    process.chdir(other);
    try {
      const second = replay(scenarioOf([reply.text("ok")]));
      await yolo.agentLoop([{ role: "user", content: "hi" }]);
      expect(systems(second.requests)[0]).toContain("- Other folder.");
    } finally {
      process.chdir(home);
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("reads at most 4,000 characters of a memory file edited by hand past the cap, and says so", async () => {
    mkdirSync(".agent");
    writeFileSync(MEMORY, `# Memory\n\n${"- a fact written by hand\n".repeat(300)}- THE LAST FACT\n`);
    const session = replay(scenarioOf([reply.text("ok")]));
    await yolo.agentLoop([{ role: "user", content: "hi" }]);
    const [system] = systems(session.requests);
    const shown = /<memory file="\.agent\/MEMORY\.md">\n([\s\S]*)\n<\/memory>/.exec(system)![1];
    expect(shown).toMatch(/\n\[\.\.\. cut: \d+ more characters in the file\]$/);
    expect(shown.length).toBeLessThan(4100);
    expect(system).not.toContain("THE LAST FACT");
    expect(printed.join("\n")).toMatch(/\[memory\] \.agent\/MEMORY\.md has 7\d{3} characters; only the first 4000 are read/);
  });

  it("a memory file that cannot be read is a warning, and the agent still answers", async () => {
    mkdirSync(MEMORY, { recursive: true });
    const session = replay(scenarioOf([reply.text("ok")]));
    await yolo.agentLoop([{ role: "user", content: "hi" }]);
    expect(systems(session.requests)[0]).toContain("(none saved yet)");
    expect(printed.join("\n")).toContain("[memory] .agent/MEMORY.md was not read: .agent/MEMORY.md is a directory");
    expect(session.verdict()).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------

describe("s12 the demo, and memory across two runs of the program", () => {
  const workspace = useWorkspace();
  useHome();
  usePrinted();

  it("the demo lists two skills (one skipped), loads the changelog skill and follows it, and saves a fact the next run starts with", async () => {
    const demo = loadScenario("s12");
    const firstRun = await stageIn("default");
    const first = await firstRun.replayScenario(firstRun, demo, { workspace: workspace.dir });
    expectWholeSession("s12", first, demo);
    const system = first.requests[0].system as string;
    expect(system).toContain("- changelog: Add an entry to CHANGELOG.md");
    expect(system).toContain("- release: Cut a release of tally");
    expect(system).not.toContain("- notes:");
    expect(readFileSync("CHANGELOG.md", "utf8")).toContain("## Unreleased\n\n- Added: `--quiet` prints only the counts, without the header line.\n- Fixed:");

    // The next run's fixture starts from exactly the memory file this run left.
    const next = loadScenario("s12", "next-session");
    expect(memory()).toBe(next.files![MEMORY]);
    const secondRun = await stageIn("default");
    const second = await secondRun.replayScenario(secondRun, next, { workspace: workspace.dir });
    expect(second.problems).toEqual([]);
    expect(second.requests[0].system).toContain("- Run the tests with `node check.js`: `npm test` also runs the integration suite, which needs a database.");
    // A replayed session is not a running replay: its second request's last message holds the results.
    const [ran] = (second.requests[1].messages.at(-1)!.content as ToolResultBlockParam[]).filter((block) => block.type === "tool_result");
    expect(text(ran)).toBe("check.js: 3 checks passed\n");
  });

  it("two runs of the program with a model: the first saves a fact, the second's system prompt holds it from its first request", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test-key");
    const replay = (await import("../lib/course/replay.ts")).startReplay(
      scenarioOf([
        reply.tools([{ name: "save_memory", input: { fact: "The staging server is staging.example.test." } }]),
        reply.text("Saved."),
        reply.text("It is staging.example.test."),
      ]),
    );
    try {
      const firstRun = await runMain((await stageFor("auto-edit")).file, ["Remember: the staging server is staging.example.test."]);
      expect(firstRun.code, firstRun.output).toBe(0);
      const secondRun = await runMain((await stageFor("auto-edit")).file, ["Where is staging?"]);
      expect(secondRun.code, secondRun.output).toBe(0);
      const [save, afterSave, nextRun] = replay.requests.map((request) => request.system as string);
      expect(save).toContain("(none saved yet)");
      expect(afterSave).toBe(save);
      expect(nextRun).toContain("- The staging server is staging.example.test.");
      expect(replay.verdict()).toEqual([]);
    } finally {
      replay.close();
      vi.unstubAllEnvs();
    }
  });
});

/** A fresh load of the stage in an approval mode, for runMain: the program as a new process would see it. */
async function stageFor(mode: string): Promise<{ file: string }> {
  vi.stubEnv("APPROVAL_MODE", mode);
  vi.resetModules();
  return { file: FILE };
}
