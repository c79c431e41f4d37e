// The workshop exercises (exercises/, lib/course/exercises.ts, scripts/exercise.ts, scripts/verify.ts).
// What must hold for every exercise, now and for each one a later stage adds:
// - its starter is made from the stage file as it is today, takes out only what it names,
//   parses and loads, and fails every check, naming what is missing;
// - the stage file (the reference) passes every check, and so does the starter with the
//   stage's code put back;
// - the checks test behaviour: a plausible wrong implementation fails the check for what it
//   gets wrong, and a different but correct one passes.
// The full three-way run in a child process per copy (starter fails, solution passes, stage
// passes), and the type check of every starter, are CI's (npm run verify:all in .ci/run):
// too slow for the suite's budget. What this file checks is what verify:all relies on.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Diagnostic, Node } from "typescript";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { regionsOf } from "../.vitepress/source.ts";
import {
  defineExercise,
  dirOption,
  exerciseIds,
  loadExercise,
  notWrittenMessage,
  parsed,
  quote,
  runChecks,
  say,
  solvedCopy,
  stageFileOf,
  starterOf,
  takenOutNames,
  WORKSHOP_DIR,
  wrongText,
  type CheckResult,
  type Exercise,
  type StageModule,
  type Text,
} from "../lib/course/exercises.ts";
import { CAPSTONE, existingStages, REPO_ROOT, TSX_LOADER } from "../lib/course/stages.ts";
import { typescript } from "../lib/course/typescript.ts";
import { main as exerciseMain } from "../scripts/exercise.ts";
import { hintLevel, main as verifyMain, MIN_WRONG_SOLUTIONS, parseOptions, reportEnd } from "../scripts/verify.ts";
import { withTmpdir } from "./helpers.ts";

const ts = typescript();
const ids = exerciseIds();
const exercises = new Map<string, Exercise>();
for (const id of ids) exercises.set(id, await loadExercise(id));
const stageText = (exercise: Exercise) => readFileSync(stageFileOf(exercise), "utf8");

// ---------------------------------------------------------------------------------------
// A folder outside the repository where copies import as they would from workshop/

const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-exercises-")));
const copies = path.join(root, "workshop");
mkdirSync(copies);
writeFileSync(path.join(root, "package.json"), '{ "type": "module" }\n');
symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(root, "node_modules"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// This file loads many copies of the stages (starters, references, variants), and a stage
// may add a process "exit" handler when it loads: more than Node's default of ten is expected.
process.setMaxListeners(100);

let written = 0;
/** Write `text` as a module in the copies folder and import it. */
async function load(text: string, name: string): Promise<StageModule> {
  const file = path.join(copies, `${name}-${++written}.ts`);
  writeFileSync(file, text);
  return (await import(pathToFileURL(file).href)) as StageModule;
}

const starters = new Map<string, Promise<string>>();
/** The exercise's starter for a copy in `dir` (made once per test run: parsing a stage takes a while). */
function starter(exercise: Exercise, dir = copies): Promise<string> {
  const key = `${exercise.stage} ${dir}`;
  if (!starters.has(key)) starters.set(key, starterOf(exercise, stageText(exercise), { destDir: dir }));
  return starters.get(key)!;
}

/** The stage file with one change (a test's wrong or different implementation), loaded from the copies folder. */
async function stageWith(exercise: Exercise, change: (text: string) => string): Promise<StageModule> {
  const text = stageText(exercise);
  const changed = change(text);
  expect(changed, "the change to the stage must apply").not.toBe(text);
  const lib = path.relative(copies, path.join(REPO_ROOT, "lib"));
  const agents = path.relative(copies, path.join(REPO_ROOT, "agents"));
  return load(changed.replaceAll('from "../lib/', `from "${lib}/`).replaceAll('from "./s', `from "${agents}/s`), `${exercise.stage}-changed`);
}

const statuses = (results: CheckResult[]) => Object.fromEntries(results.map((r) => [r.id, r.status]));

function only(exercise: Exercise, ...keep: string[]): Exercise {
  return { ...exercise, requirements: exercise.requirements.filter((r) => keep.includes(r.id)) };
}

// ---------------------------------------------------------------------------------------

describe("the exercises", () => {
  it("give every stage file an exercise, and every exercise a stage file", () => {
    // The capstone has none: it brings no new mechanism, and each stage's exercise is one of its parts.
    const stages = [...existingStages().keys()].filter((stage) => stage !== CAPSTONE.id);
    const withoutExercise = stages.filter((stage) => !ids.includes(stage));
    expect(withoutExercise, "stages with no exercises/<stage>.ts: each stage brings its exercise (exercises/README.md)").toEqual([]);
    for (const exercise of exercises.values()) expect(existsSync(stageFileOf(exercise)), `exercise ${exercise.stage}'s stage file`).toBe(true);
  });

  it.each(ids)("%s has a page in English and Japanese with a section for each requirement", (id) => {
    for (const page of [`docs/exercises/${id}.md`, `docs/ja/exercises/${id}.md`]) {
      const file = path.join(REPO_ROOT, page);
      expect(existsSync(file), `${page} is missing`).toBe(true);
      const sections = [...readFileSync(file, "utf8").matchAll(/\{#([\w-]+)\}\s*$/gm)].map((m) => m[1]);
      for (const requirement of exercises.get(id)!.requirements) expect(sections, `${page}`).toContain(requirement.id);
    }
  });

  it.each(ids)("%s carries a catalogue of at least six wrong solutions, each naming one of its requirements and each change found once in the stage (verify:all runs them)", (id) => {
    const exercise = exercises.get(id)!;
    const wrongs = exercise.wrong ?? [];
    expect(wrongs.length).toBeGreaterThanOrEqual(MIN_WRONG_SOLUTIONS);
    const requirementIds = exercise.requirements.map((r) => r.id);
    for (const wrong of wrongs) {
      expect(requirementIds, wrong.name).toContain(wrong.fails);
      expect(() => wrongText(exercise, wrong, stageText(exercise)), wrong.name).not.toThrow();
    }
    expect(new Set(wrongs.map((w) => w.name)).size, "names are unique").toBe(wrongs.length);
  });

  it("refuses an exercise written wrongly, naming it", () => {
    const base = exercises.get(ids[0])!;
    const twice = [base.requirements[0], base.requirements[0]];
    expect(() => defineExercise({ ...base, requirements: twice })).toThrow(`exercises/${base.stage}.ts: requirement id "${twice[0].id}" is used twice`);
    expect(() => defineExercise({ ...base, takeOut: [] })).toThrow(/takeOut is empty/);
    const twoHints = { ...base.requirements[0], hints: base.requirements[0].hints.slice(0, 2) as never };
    expect(() => defineExercise({ ...base, requirements: [twoHints] })).toThrow(/needs exactly three hints/);
  });
});

describe.each(ids)("the %s starter", (id) => {
  const exercise = exercises.get(id)!;

  it("is the stage file with only the named parts taken out, each marked TODO; it parses, uses nothing it took out, and gives back the stage when solved", async () => {
    const stage = stageText(exercise);
    const text = await starter(exercise, path.dirname(stageFileOf(exercise)));
    // Parsed once, for the syntax errors, for the uses below and for solvedCopy (the compiler's
    // own parse: a full transpile would also bind and emit, several times the cost, to report
    // the same).
    const source = parsed("starter.ts", text);
    const syntaxErrors = (source as unknown as { parseDiagnostics?: Diagnostic[] }).parseDiagnostics;
    expect(syntaxErrors, "the parser's diagnostics").toBeDefined();
    expect(syntaxErrors!.map((d) => ts.flattenDiagnosticMessageText(d.messageText, " "))).toEqual([]);
    // Every region that holds nothing taken out is the stage's, byte for byte.
    const names = takenOutNames(exercise);
    const [before, after] = [regionsOf(stage), regionsOf(text)];
    expect([...after.keys()]).toEqual([...before.keys()]);
    for (const [name, body] of before) {
      const touched = names.some((n) => new RegExp(`\\b${n.split(".").at(-1)}\\b`).test(body));
      if (!touched) expect(after.get(name), `region ${name}`).toBe(body);
    }
    for (const part of exercise.takeOut) {
      expect(text).toContain(`// TODO(${id}): ${part.task.en}`);
      if ("function" in part) expect(text).toContain(JSON.stringify(notWrittenMessage(part.function, id)));
    }
    // No use of a declaration taken out whole remains: the part of compiling a derivation
    // can break (the full type check of every starter is verify:all's, in CI).
    const dropped = new Set(exercise.takeOut.flatMap((part) => ("function" in part ? (part.helpers ?? []) : [])));
    const used: string[] = [];
    const visit = (node: Node) => {
      if (ts.isIdentifier(node) && dropped.has(node.text)) used.push(`${node.text} at line ${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
      ts.forEachChild(node, visit);
    };
    visit(source);
    expect(used).toEqual([]);
    // Putting the stage's code back gives the stage file (after the banner): nothing else was touched.
    const solved = await solvedCopy(exercise, text, stage);
    const banner = text.length - text.replace(/^(\/\/.*\n)+/, "").length;
    expect(solved.slice(banner)).toBe(stage);
  });

  // That the starter fails every check, naming what is missing, and that the stage file passes
  // them all, is verify:all's (run by CI): it runs every check of every exercise twice, in a
  // child process each, which alone would take longer than this suite's budget.
});

describe("starters made from a stage that has changed", () => {
  it("say which part the stage no longer has, instead of making a wrong copy", async () => {
    const exercise = exercises.get("s03")!;
    const renamed = stageText(exercise).replace("function editFile(", "function editTextFile(");
    await expect(starterOf(exercise, renamed, { destDir: WORKSHOP_DIR })).rejects.toThrow(
      "the exercise takes out editFile(), but agents/s03_search_and_edit.ts has no function editFile: update the exercise's takeOut",
    );
  });

  it("point their imports at the same files from wherever the copy is made", async () => {
    const text = await starter(exercises.get("s01")!, WORKSHOP_DIR);
    expect(text).toContain('from "../lib/runtime/program.ts"');
    const elsewhere = await starter(exercises.get("s01")!, path.join(REPO_ROOT, "a", "b"));
    expect(elsewhere).toContain('from "../../lib/runtime/program.ts"');
  });
});

describe("the checks test behaviour, not text", () => {
  it("s02: a sandbox that ignores symlinks fails only the symlink check", async () => {
    const exercise = exercises.get("s02")!;
    const stage = await stageWith(exercise, (text) => text.replace("  const real = followLinks(full, given);", "  const real = full;"));
    expect(statuses(await runChecks(only(exercise, "dotdot", "symlinks", "inside-paths"), stage))).toEqual({ dotdot: "passed", symlinks: "failed", "inside-paths": "passed" });
  });

  it("s03: an edit_file that replaces the first of several matches fails, naming the rule", async () => {
    const exercise = exercises.get("s03")!;
    const stage = await stageWith(exercise, (text) => text.replace("if (count > 1 && !replaceAll) {", "if (count > 1 && !replaceAll && false) {"));
    const [result] = await runChecks(only(exercise, "several-matches"), stage);
    expect(result.status).toBe("failed");
    expect(result.actual?.en).toMatch(/^edit_file\(old_string: "timeout: 3000", new_string: "changed"\) was not refused/);
  });

  it("s04: a check of the first URL only, not of each redirect, fails the redirect check", async () => {
    const exercise = exercises.get("s04")!;
    const stage = await stageWith(exercise, (text) =>
      text
        .replace("  let url = start;\n", "  let url = start;\n  const checked = await checkedAddresses(start);\n")
        .replace("await get(url, await checkedAddresses(url), signal)", "await get(url, url === start ? checked : [{ address: \"93.184.215.14\", family: 4 }], signal)"),
    );
    const results = await runChecks(only(exercise, "private-literals", "redirect-to-private"), stage);
    expect(statuses(results)).toEqual({ "private-literals": "passed", "redirect-to-private": "failed" });
    expect(results[1].actual?.en).toMatch(/requested http:\/\/intranet\.example\.com\/admin; a private address must be refused before any request/);
  });

  it("s05: an ask_user that does not look for a person fails the no-one-there check in time", async () => {
    const exercise = exercises.get("s05")!;
    const stage = await stageWith(exercise, (text) => text.replace("  if (!person.hasPerson) return noOneAnswered(NO_ONE_THERE);\n", ""));
    const [result] = await runChecks(only(exercise, "nobody-there"), stage);
    expect(result.status).toBe("failed");
    expect(result.actual?.en).toBe("with no one at the terminal, ask_user was still waiting after 1 s");
  });

  it("s07: a footer whose next offset is one line off fails the next-page check only", async () => {
    const exercise = exercises.get("s07")!;
    const stage = await stageWith(exercise, (text) => text.replace(". Next page: offset ${last + 1}", ". Next page: offset ${last}"));
    const results = await runChecks(only(exercise, "next-page", "past-the-end"), stage);
    expect(statuses(results)).toEqual({ "next-page": "failed", "past-the-end": "passed" });
    expect(results[0].actual?.en).toMatch(/^following the footers, line \d+ came as line \d+/);
  });

  it("s01: a loop written another way (recursion) passes every loop check, and the same loop sending each result alone fails the demo, saying what differed", async () => {
    const exercise = exercises.get("s01")!;
    const recursive = [
      "  const response = await client.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, messages });",
      '  messages.push({ role: "assistant", content: response.content });',
      "  showText(response);",
      '  if (response.stop_reason !== "tool_use") return endTurn(response, messages);',
      '  const calls = response.content.filter((block) => block.type === "tool_use");',
      "  const results: ToolResultBlockParam[] = [];",
      "  for (const call of calls) results.push(await runTool(call));",
      '  messages.push({ role: "user", content: results });',
      "  return agentLoop(messages);",
    ].join("\n");
    const text = await starter(exercise);
    const stub = /\{\n  \/\/ TODO\(s01\)[^\n]*\n  throw new Error\([^\n]*\);\n\}/;
    expect(text).toMatch(stub);
    const stage = await load(text.replace(stub, `{\n${recursive}\n}`), "s01-recursive");
    expect((await runChecks(exercise, stage)).filter((r) => r.status !== "passed")).toEqual([]);

    // The same loop sending each result in a message of its own: the API (and the replay)
    // refuses the second request, and the demo check says what differed from the recording.
    const split = recursive.replace("  for (const call of calls) results.push(await runTool(call));\n  messages.push({ role: \"user\", content: results });", '  for (const call of calls) messages.push({ role: "user", content: [await runTool(call)] });');
    expect(split).not.toBe(recursive);
    const splitStage = await load(text.replace(stub, `{\n${split}\n}`), "s01-split");
    const [demo] = await runChecks(only(exercise, "demo"), splitStage);
    expect(demo.status).toBe("failed");
    expect(demo.actual?.en).toMatch(/^the session did not match the recording: request \d+: tool results .*; \d+ recorded replies were never asked for$/);
    expect(demo.actual?.ja).toMatch(/^記録どおりに進みませんでした: リクエスト \d+: .*。記録した返答のうち \d+ 件は一度も求められませんでした$/);
  });
});

// ---------------------------------------------------------------------------------------
// The commands

describe("npm run exercise", () => {
  let dir = "";
  let printed: string[] = [];
  beforeEach(() => {
    // Laid out as a folder of the workbook is (under root's package.json and node_modules).
    dir = realpathSync(mkdtempSync(path.join(root, "exercise-cmd-")));
    printed = [];
    vi.spyOn(console, "log").mockImplementation((...args) => void printed.push(args.join(" ")));
  });
  afterEach(() => {
    vi.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  });
  const nobody = () => undefined;

  it("makes the copy and a tsconfig for editors, and says what to write and how to check it", async () => {
    expect(await exerciseMain(["s03", "--dir", dir], nobody)).toBe(0);
    expect(readFileSync(path.join(dir, "s03.ts"), "utf8")).toBe(await starter(exercises.get("s03")!, dir));
    expect(JSON.parse(readFileSync(path.join(dir, "tsconfig.json"), "utf8")).include).toEqual(["*.ts"]);
    const shown = printed.join("\n");
    expect(shown).toContain("editFile(): replace old_string with new_string");
    // The folder is not workshop/, so the commands name it, in what is printed and in the copy.
    expect(shown).toContain(`Check it:  npm run verify -- s03 --dir ${dir}   (`);
    expect(shown).toContain(`Run it:    npx tsx ${path.join(dir, "s03.ts")}   (`);
    expect(readFileSync(path.join(dir, "s03.ts"), "utf8")).toContain(`// Check it: npm run verify -- s03 --dir ${dir}    Run it: npx tsx ${dir}/s03.ts (`);
  });

  it("names a folder inside the workbook from its root, and workshop/ not at all", () => {
    expect(dirOption(WORKSHOP_DIR)).toBe("");
    expect(dirOption(path.join(REPO_ROOT, "workshop", "pair2"))).toBe(" --dir workshop/pair2");
    expect(dirOption(path.join(root, "copies"))).toBe(` --dir ${path.join(root, "copies")}`);
  });

  it("refuses a folder where the copy could not run, saying why, and writes nothing there", async () => {
    // Outside the workbook: no package.json saying "type": "module" above it, no node_modules.
    const outside = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-exercise-outside-")));
    try {
      expect(await exerciseMain(["s01", "--dir", outside], nobody)).toBe(1);
      expect(printed.at(-1)).toBe(
        `A copy in ${outside} could not run: no package.json in or above it says "type": "module", so Node would load the copy as CommonJS, ` +
          "and no node_modules in or above it holds the workbook's packages. Use a folder inside the workbook: workshop/ (the default), or one such as workshop/<name> with --dir.",
      );
      expect(readdirSync(outside)).toEqual([]);
      // Each reason alone.
      writeFileSync(path.join(outside, "package.json"), '{ "type": "module" }\n');
      expect(await exerciseMain(["s01", "--dir", outside, "--lang", "ja"], nobody)).toBe(1);
      expect(printed.at(-1)).toBe(
        `${outside} のコピーは動きません。教材のパッケージが入った node_modules がそのフォルダーにも上にもありません。教材の中のフォルダーを使ってください。既定の workshop/ か、--dir で workshop/<名前> などを指定します。`,
      );
      writeFileSync(path.join(outside, "package.json"), "{}\n");
      symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(outside, "node_modules"));
      expect(await exerciseMain(["s01", "--dir", outside], nobody)).toBe(1);
      expect(printed.at(-1)).toMatch(/could not run: no package\.json in or above it says "type": "module", so Node would load the copy as CommonJS\. Use/);
      expect(readdirSync(outside).sort()).toEqual(["node_modules", "package.json"]);
      // With both, the copy is made.
      writeFileSync(path.join(outside, "package.json"), '{ "type": "module" }\n');
      expect(await exerciseMain(["s01", "--dir", outside], nobody)).toBe(0);
      expect(existsSync(path.join(outside, "s01.ts"))).toBe(true);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("never overwrites the learner's work without asking: refuses with no one there, asks when someone is", async () => {
    const file = path.join(dir, "s03.ts");
    await exerciseMain(["s03", "--dir", dir], nobody);
    writeFileSync(file, "// my work\n");
    expect(await exerciseMain(["s03", "--dir", dir], nobody)).toBe(1);
    expect(printed.at(-1)).toMatch(/no one at the terminal to ask, so nothing was overwritten\.\nTo start again: npm run exercise -- s03 --dir \S+ --force/);
    expect(await exerciseMain(["s03", "--dir", dir], async () => false)).toBe(0);
    expect(readFileSync(file, "utf8")).toBe("// my work\n");
    expect(await exerciseMain(["s03", "--dir", dir], async () => true)).toBe(0);
    expect(readFileSync(file, "utf8")).not.toBe("// my work\n");
    const backups = readdirSync(dir).filter((name) => name.endsWith(".ts.bak"));
    expect(backups.map((name) => readFileSync(path.join(dir, name), "utf8"))).toEqual(["// my work\n"]);
  });

  it("--force starts again, keeping the work as a backup and forgetting the hint level", async () => {
    writeFileSync(path.join(dir, "s03.ts"), "// my work\n");
    writeFileSync(path.join(dir, ".hints.json"), JSON.stringify({ s03: { requirement: "unique-match", level: 3 }, s01: { requirement: "stops", level: 2 } }));
    expect(await exerciseMain(["s03", "--dir", dir, "--force"], nobody)).toBe(0);
    expect(readdirSync(dir).filter((name) => name.endsWith(".ts.bak"))).toHaveLength(1);
    expect(JSON.parse(readFileSync(path.join(dir, ".hints.json"), "utf8"))).toEqual({ s01: { requirement: "stops", level: 2 } });
  });

  it("writes the TODOs in Japanese with --lang ja, and remakes an untouched copy in the other language without asking", async () => {
    const task = exercises.get("s05")!.takeOut[0].task;
    await exerciseMain(["s05", "--dir", dir, "--lang", "ja"], nobody);
    expect(readFileSync(path.join(dir, "s05.ts"), "utf8")).toContain(`// TODO(s05): ${task.ja}`);
    expect(await exerciseMain(["s05", "--dir", dir, "--lang", "en"], nobody)).toBe(0);
    expect(readFileSync(path.join(dir, "s05.ts"), "utf8")).toContain(`// TODO(s05): ${task.en}`);
    expect(readdirSync(dir).filter((name) => name.endsWith(".bak"))).toEqual([]);
  });
});

describe("npm run verify", () => {
  let printed: string[] = [];
  beforeEach(() => {
    printed = [];
    vi.spyOn(console, "log").mockImplementation((...args) => void printed.push(args.join(" ")));
  });
  afterEach(() => vi.restoreAllMocks());

  it("names the exercises when the stage has none, and tells how to make a missing copy", async () => {
    expect(await verifyMain(["s99"])).toBe(1);
    expect(printed).toEqual([`There is no exercise s99. The exercises: ${ids.join(", ")}.`]);
    expect(await verifyMain(["s02", "--dir", path.join(root, "nowhere")])).toBe(1);
    expect(printed.at(-1)).toBe(`There is no working copy at ${path.join(root, "nowhere", "s02.ts")} yet. Make one with: npm run exercise -- s02 --dir ${path.join(root, "nowhere")}`);
    expect(await verifyMain(["s02", "--lang", "fr"])).toBe(1);
    expect(printed.at(-1)).toMatch(/^--lang takes en or ja, not "fr"/);
  });

  it("says why a copy in a folder outside the workbook cannot run, rather than a syntax error it does not have", async () => {
    const outside = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-verify-outside-")));
    try {
      writeFileSync(path.join(outside, "s01.ts"), await starter(exercises.get("s01")!));
      expect(await verifyMain(["s01", "--dir", outside])).toBe(1);
      expect(printed).toEqual([expect.stringMatching(new RegExp(`^✗ A copy in ${outside} could not run: no package\\.json in or above it says "type": "module"`))]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("reports a copy that does not parse, and one whose loop never returns, in one clear message each", async () => {
    const exercise = exercises.get("s01")!;
    const text = await starter(exercise);
    writeFileSync(path.join(copies, "s01.ts"), text.replace("function agentLoop(", "function agentLoop(("));
    expect(await verifyMain(["s01", "--dir", copies])).toBe(1);
    expect(printed.at(-1)).toMatch(/^✗ Your copy does not compile, so no check was run: .*s01\.ts:\d+:\d+: /);
    writeFileSync(path.join(copies, "s01.ts"), text.replace(/throw new Error\("TODO: agentLoop[^\n]*/, "while (true) {}"));
    // A short limit: the check spins the child's processor until it is killed.
    expect(await verifyMain(["s01", "--dir", copies, "--time-limit", "0.3"])).toBe(1);
    expect(printed.join("\n")).toContain("✗ 1. Sends the conversation and the tool schemas to the model (did not finish within 0.3 s)");
    expect(printed.join("\n")).toContain("actual:   the check did not finish within 0.3 s: something waits for ever, or a loop never returns");
    expect(printed.filter((line) => line.includes("(not checked: a check before it did not finish)"))).toHaveLength(exercise.requirements.length - 1);
  }, 60_000);

  it("verify:all takes one exercise by name, and names the exercises when there is none of that name", async () => {
    expect(parseOptions(["--all", "s05"])).toMatchObject({ all: true, stage: "s05" });
    expect(await verifyMain(["--all", "s99"])).toBe(1);
    expect(printed.at(-1)).toMatch(/^There is no exercise s99\. The exercises: s01, s02, .*s20\.$/);
  });

  it("type-checks the copy first: a call to a function that does not exist is the copy's problem, with its place, not a failed requirement", async () => {
    const text = await starter(exercises.get("s02")!);
    const broken = text.replace(/(\n)(  throw new Error\("TODO: safePath\(\))/, "$1  checkPathSomehow(given);$1$2");
    expect(broken).not.toBe(text);
    writeFileSync(path.join(copies, "s02.ts"), broken);
    const line = broken.split("\n").findIndex((l) => l.includes("checkPathSomehow")) + 1;
    expect(await verifyMain(["s02", "--dir", copies])).toBe(1);
    expect(printed.at(-1)).toBe(`✗ Your copy does not compile, so no check was run: ${path.join(copies, "s02.ts")}:${line}:3: Cannot find name 'checkPathSomehow'. Fix it, then verify again.`);
    expect(printed.some((l) => /^[✓✗] \d+\./.test(l))).toBe(false); // no requirement is called failed
  }, 60_000);

  it("goes from ✗ to ✓ through the real command line when the missing part is written (--watch)", async () => {
    // s01: its checks are the quickest to run in a process of their own (about 2 s of processor
    // against s06's 3.6 s), and the command line is the same for every exercise.
    const exercise = exercises.get("s01")!;
    const file = path.join(copies, "s01.ts");
    const text = await starter(exercise);
    writeFileSync(file, text);
    // What `npm run verify -- s01 --watch` runs (the script is checked first), without npm's
    // and tsx's own start-up processes in front of it: about a second of processor each.
    expect(JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")).scripts.verify).toBe("tsx scripts/verify.ts");
    const child = spawn(process.execPath, ["--import", TSX_LOADER, "scripts/verify.ts", "s01", "--watch", "--dir", copies], {
      cwd: REPO_ROOT,
      env: withTmpdir(process.env, root),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const until = (pattern: RegExp) =>
      vi.waitFor(() => expect(output).toMatch(pattern), { timeout: 120_000, interval: 100 });
    try {
      await until(/Watching .*s01\.ts/);
      expect(output).toContain(`✗ 1. ${exercise.requirements[0].title.en}`);
      expect(output).toMatch(/actual: {3}agentLoop\(\) is not written yet: its TODO is still in the copy/);
      output = "";
      writeFileSync(file, await solvedCopy(exercise, text, stageText(exercise)));
      await until(new RegExp(`All ${exercise.requirements.length} checks pass\\.`));
      expect(output).toContain(`✓ 1. ${exercise.requirements[0].title.en}`);
    } finally {
      process.kill(-child.pid!, "SIGKILL");
    }
  }, 300_000);
});

describe("checks run in this process", () => {
  it("stop at a check that never settles: it is reported, and the checks after it are not run", async () => {
    const requirement = (id: string, check: () => Promise<void>) => ({ id, title: say(id, id), hints: [say("a", "a"), say("b", "b"), say("c", "c")] as [Text, Text, Text], check });
    let ranAfter = false;
    const exercise = {
      ...exercises.get("s01")!,
      requirements: [requirement("waits", () => new Promise<void>(() => {})), requirement("next", async () => void (ranAfter = true)), requirement("last", async () => {})],
    };
    // The abandoned check keeps the console, the working directory and its folder, as
    // runChecks says: this test takes them back, and gives the check a folder of the test's.
    const [console_, cwd] = [{ ...console }, process.cwd()];
    vi.stubEnv("WORKBOOK_CHECKS_FOLDER", root);
    try {
      const results = await runChecks(exercise, (await import(stageFileOf(exercise))) as StageModule, { timeLimitMs: 200 });
      expect(results.map((result) => result.status)).toEqual(["timed-out", "not-run", "not-run"]);
      expect(ranAfter).toBe(false);
    } finally {
      Object.assign(console, console_);
      process.chdir(cwd);
      vi.unstubAllEnvs();
    }
  });
});

describe("the report", () => {
  const exercise = exercises.get("s02")!;
  const results: CheckResult[] = exercise.requirements.map((r, i) =>
    i === 0
      ? { id: r.id, status: "passed" }
      : { id: r.id, status: "failed", expected: r.title, actual: say("safePath() is not written yet: its TODO is still in the copy", "safePath() はまだ書かれていません（TODO がそのままです）"), missing: "safePath" },
  );

  it("gives the first failure's requirement, what happened and a hint, then the count; no \"expected\" that only repeats the requirement", () => {
    const lines = reportEnd(exercise, results, { lang: "en", hintLevel: 1, runCommand: "npx tsx workshop/s02.ts" });
    expect(lines).toEqual([
      "",
      `First failure: 2. ${exercise.requirements[1].title.en}`,
      "  actual:   safePath() is not written yet: its TODO is still in the copy",
      `  hint 1/3: ${exercise.requirements[1].hints[0].en}`,
      "  More help: npm run verify -- s02 --hint",
      "",
      `1 of ${exercise.requirements.length} checks pass.`,
    ]);
  });

  it("shows \"expected\" when the check says what it expected beyond the requirement", () => {
    const said = results.map((r, i) => (i === 1 ? { ...r, expected: say("read_file(\"../x\") refused", "read_file(\"../x\") が拒否される") } : r));
    const lines = reportEnd(exercise, said, { lang: "en", hintLevel: 1, runCommand: "npx tsx workshop/s02.ts" });
    expect(lines[2]).toBe('  expected: read_file("../x") refused');
  });

  it("quotes a value as code writes it: a string in quotes, true and 3 bare", () => {
    expect([quote("true"), quote(true), quote(3), quote(null), quote({ a: "b" }), quote('say "hi"\n')]).toEqual(['"true"', "true", "3", "null", '{"a":"b"}', '"say \\"hi\\"\\n"']);
  });

  it("speaks Japanese with --lang ja or a Japanese LANG", () => {
    expect(parseOptions(["s02"], { LANG: "ja_JP.UTF-8" }).lang).toBe("ja");
    expect(parseOptions(["s02", "--lang", "ja"], {}).lang).toBe("ja");
    expect(parseOptions(["s02"], { LANG: "en_US.UTF-8" }).lang).toBe("en");
    const lines = reportEnd(exercise, results, { lang: "ja", hintLevel: 3, runCommand: "npx tsx workshop/s02.ts" });
    expect(lines[2]).toBe("  実際: safePath() はまだ書かれていません（TODO がそのままです）");
    expect(lines[3]).toBe(`  ヒント 3/3: ${exercise.requirements[1].hints[2].ja}`);
    expect(lines.at(-1)).toBe(`${exercise.requirements.length} 件中 1 件のチェックが通りました。`);
  });

  it("remembers the hint level per stage, and starts again at the nudge for the next requirement", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "workbook-hints-"));
    try {
      expect(hintLevel(dir, "s02", "dotdot", false)).toBe(1);
      expect(hintLevel(dir, "s02", "dotdot", true)).toBe(2);
      expect(hintLevel(dir, "s02", "dotdot", true)).toBe(3);
      expect(hintLevel(dir, "s02", "dotdot", true)).toBe(3);
      expect(hintLevel(dir, "s02", "dotdot", false)).toBe(3);
      expect(hintLevel(dir, "s03", "unique-match", false)).toBe(1);
      expect(hintLevel(dir, "s02", "symlinks", false)).toBe(1);
      writeFileSync(path.join(dir, ".hints.json"), "{ broken");
      expect(hintLevel(dir, "s02", "dotdot", true)).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
