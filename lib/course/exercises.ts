// The workshop's one checker. An exercise (exercises/sNN.ts) is data plus its checks: what
// the starter takes out of the stage file, and a list of requirements, each with a check and
// three hints. This file does the rest for every exercise alike:
//
//   starterOf()       the stage file with the lesson's code taken out (found by name with the
//                     TypeScript compiler), a TODO in its place; derived when the learner asks,
//                     so it cannot drift from the stage
//   solvedCopy()      a starter with the stage's code put back: what a learner who wrote the
//                     stage's own solution would have (CI and the tests check it passes)
//   runChecks()       every requirement's check against a module, in this process
//   runChecksApart()  the same in a child process that is killed when a check does not finish,
//                     so a loop that never returns fails its check instead of hanging
//   typeCheck()       starters and solved copies type-check as if they were in workshop/
//
// A check gets a CheckKit: the learner's module, a fresh temporary workspace (the working
// directory) with a folder outside it, the tools called as the loop calls them, and replays
// through lib/course/session.ts, the same engine the demo and the tests use.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { MessageParam, Tool } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario, type Scenario } from "./scenario.ts";
import { resultText } from "./replies.ts";
import type { ReplayedSession } from "./session.ts";
import { AGENTS_DIR, existingStages, REPO_ROOT, TSX_LOADER } from "./stages.ts";
import { nobody, useTerminal, type Terminal } from "../runtime/terminal.ts";
import { toolCall, type ToolCall, type ToolStage } from "./tools.ts";
import { remembering } from "./recent.ts";
import { typescript } from "./typescript.ts";

// ---------------------------------------------------------------------------------------
// The format of an exercise

export type Lang = "en" | "ja";
/** Words for the learner, in both languages. */
export interface Text {
  en: string;
  ja: string;
}
export const say = (en: string, ja: string): Text => ({ en, ja });

/**
 * A function whose body the starter replaces with a TODO: a function declaration, a
 * `const name = (...) => ...`, a `Class.method`, or `constant.method` for a method of an
 * object literal under a constant (`const editTool = defineTool({ execute() {...} })`).
 */
export interface TakeOutFunction {
  function: string;
  /** What to write, one line: it becomes the TODO comment. */
  task: Text;
  /** Declarations that only serve this function: taken out whole, put back after it when solved. */
  helpers?: string[];
}

/** Properties of an object literal (a dispatch map) that the starter leaves out. */
export interface TakeOutEntries {
  entries: string;
  names: string[];
  task: Text;
}

export type TakeOut = TakeOutFunction | TakeOutEntries;

export interface Requirement {
  /** A short id; also the section id of the requirement on the exercise page ({#id}). */
  id: string;
  /** One line: what the learner's code must do. The report's line, and "expected" on failure. */
  title: Text;
  /** A nudge, the idea, nearly the code. */
  hints: [Text, Text, Text];
  /** Throws (through the kit's fail, or any error) when the requirement is not met. */
  check(t: CheckKit): Promise<void>;
}

/**
 * A plausible wrong solution: what learners really write, as a small change to the stage
 * file's text, and the requirement whose check must refuse it. `npm run verify:all` proves
 * that each one fails that requirement, so a check that cannot tell this wrong from right is
 * found before a learner is told "all ✓" for code that breaks the lesson.
 */
export interface WrongSolution {
  /** What the learner got wrong, in a few words: "startsWith for containment". */
  name: string;
  /** Exact pieces of the stage file's text and what each becomes; each must occur exactly once. */
  change: [before: string, after: string][];
  /** The id of the requirement it must fail. */
  fails: string;
}

export interface Exercise {
  /** The stage id, "s02"; the exercise file is exercises/<stage>.ts. */
  stage: string;
  title: Text;
  /** What the learner writes, in a few words: the report's first line names it. */
  mechanism: Text;
  /** Minutes a room usually needs (the instructor's page plans with these). */
  minutes: number;
  takeOut: TakeOut[];
  requirements: Requirement[];
  /** The catalogue of wrong solutions (at least six), each failing the requirement it names. */
  wrong?: WrongSolution[];
  /**
   * The stage file, relative to the repository, when its name does not follow agents/sNN_*.ts
   * (the capstone). The stage file is the reference solution.
   */
  stageFile?: string;
}

/** Checks an exercise's shape once, where it is written, so a mistake names the exercise. */
export function defineExercise(exercise: Exercise): Exercise {
  const where = `exercises/${exercise.stage}.ts`;
  if (exercise.takeOut.length === 0) throw new Error(`${where}: takeOut is empty, so the starter would be the solution`);
  if (exercise.requirements.length === 0) throw new Error(`${where}: there are no requirements`);
  const ids = new Set<string>();
  for (const requirement of exercise.requirements) {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(requirement.id)) throw new Error(`${where}: requirement id "${requirement.id}" must be lowercase words joined by -`);
    if (ids.has(requirement.id)) throw new Error(`${where}: requirement id "${requirement.id}" is used twice`);
    ids.add(requirement.id);
    if (requirement.hints.length !== 3) throw new Error(`${where}: requirement "${requirement.id}" needs exactly three hints`);
  }
  return exercise;
}

/** The stage file's text made wrong as `wrong` says; an error when a piece is not found exactly once. */
export function wrongText(exercise: Exercise, wrong: WrongSolution, stageText: string): string {
  let text = stageText;
  for (const [before, after] of wrong.change) {
    const count = text.split(before).length - 1;
    if (count !== 1) throw new Error(`exercises/${exercise.stage}.ts: wrong solution "${wrong.name}": the text ${JSON.stringify(before.slice(0, 60))} occurs ${count} times in the stage file, not once (the stage has changed?)`);
    text = text.replace(before, () => after);
  }
  return text;
}

/** What a learner's module (or a stage module) offers the checks. */
export interface StageModule {
  agentLoop(messages: MessageParam[]): Promise<void>;
  TOOLS?: Tool[];
  TOOL_HANDLERS?: Record<string, (input: Record<string, unknown>) => string | Promise<string>>;
  prepareReplay?(scenario: Scenario): void | Promise<void>;
  [name: string]: unknown;
}

// ---------------------------------------------------------------------------------------
// Where things are

export const EXERCISES_DIR = path.join(REPO_ROOT, "exercises");
export const WORKSHOP_DIR = path.join(REPO_ROOT, "workshop");

/** A folder as a command run from the workbook's root (where `npm run` runs) names it: relative inside the workbook, whole outside. */
export function fromRoot(dir: string): string {
  const relative = path.relative(REPO_ROOT, path.resolve(dir));
  return relative && !relative.startsWith("..") && !path.isAbsolute(relative) ? relative.split(path.sep).join("/") : path.resolve(dir);
}

/** How a command names the folder of the copies: nothing for workshop/, otherwise ` --dir <folder>`. */
export const dirOption = (dir: string): string => (path.resolve(dir) === WORKSHOP_DIR ? "" : ` --dir ${fromRoot(dir)}`);

/**
 * Why a copy in `dir` could not run as the stage does, or nothing if it can. A copy is an ES
 * module (it awaits at its top level) that imports the workbook's packages, and Node loads a
 * .ts file as an ES module only under a package.json saying "type": "module", and finds
 * packages only in a node_modules above the file. Inside the workbook both hold; a folder
 * elsewhere usually has neither, and the copy would fail with a misleading syntax error.
 */
export function folderProblem(dir: string): Text | undefined {
  const where = path.resolve(dir);
  const esm = nearestPackageType(where) === "module";
  let packages = true;
  try {
    createRequire(path.join(where, "copy.js")).resolve("@anthropic-ai/sdk");
  } catch {
    packages = false;
  }
  if (esm && packages) return undefined;
  const why = [
    ...(esm ? [] : [say('no package.json in or above it says "type": "module", so Node would load the copy as CommonJS', '"type": "module" と書いた package.json がそのフォルダーにも上にもないので、Node はコピーを CommonJS として読み込みます')]),
    ...(packages ? [] : [say("no node_modules in or above it holds the workbook's packages", "教材のパッケージが入った node_modules がそのフォルダーにも上にもありません")]),
  ];
  return say(
    `A copy in ${where} could not run: ${why.map((w) => w.en).join(", and ")}. Use a folder inside the workbook: workshop/ (the default), or one such as workshop/<name> with --dir.`,
    `${where} のコピーは動きません。${why.map((w) => w.ja).join("。また、")}。教材の中のフォルダーを使ってください。既定の workshop/ か、--dir で workshop/<名前> などを指定します。`,
  );
}

/** The "type" of the package.json nearest above `dir` ("commonjs" when it names none), or undefined if there is none. */
function nearestPackageType(dir: string): string | undefined {
  for (let at = dir; ; at = path.dirname(at)) {
    const file = path.join(at, "package.json");
    if (existsSync(file)) {
      try {
        return (JSON.parse(readFileSync(file, "utf8")) as { type?: string }).type ?? "commonjs";
      } catch {
        return "commonjs";
      }
    }
    if (path.dirname(at) === at) return undefined;
  }
}

/** The exercises there are: exercises/<id>.ts, in order. */
export function exerciseIds(dir = EXERCISES_DIR): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => /^s[\w-]+\.ts$/.test(name))
    .map((name) => name.slice(0, -3))
    .sort();
}

export async function loadExercise(id: string): Promise<Exercise> {
  const module = (await import(pathToFileURL(path.join(EXERCISES_DIR, `${id}.ts`)).href)) as { default?: Exercise };
  if (!module.default) throw new Error(`exercises/${id}.ts has no default export (export default defineExercise({ ... }))`);
  return module.default;
}

/** The stage file an exercise is made from: the reference solution. */
export function stageFileOf(exercise: Exercise): string {
  if (exercise.stageFile) return path.join(REPO_ROOT, exercise.stageFile);
  const name = existingStages().get(exercise.stage);
  if (!name) throw new Error(`exercise ${exercise.stage} has no stage file: agents/ holds no ${exercise.stage}_*.ts`);
  return path.join(AGENTS_DIR, name);
}

/** Every name the starter takes out: functions, helpers and entries. */
export function takenOutNames(exercise: Exercise): string[] {
  return exercise.takeOut.flatMap((part) => ("function" in part ? [part.function, ...(part.helpers ?? [])] : part.names));
}

// ---------------------------------------------------------------------------------------
// The starter: the stage file with the lesson's code taken out

/** The line a stub throws; the checks and the report recognise it and name the function. */
export const notWrittenMessage = (name: string, stage: string) =>
  `TODO: ${name}() is not written yet (exercise ${stage}, the task: docs/exercises/${stage}.md)`;
const NOT_WRITTEN = /TODO: ([\w.$]+)\(\) is not written yet/;

/** The function a TODO stub named, when `text` carries its message. */
export function notWrittenIn(text: string): string | undefined {
  return NOT_WRITTEN.exec(text)?.[1];
}

type TS = typeof import("typescript");
interface Edit {
  start: number;
  end: number;
  text: string;
}

/**
 * The learner's starting copy, for a file in `destDir`: the stage's text with each taken-out
 * function's body replaced by a TODO and a throw, its helpers and entries removed, relative
 * imports pointed at the same files from `destDir`, and a banner on top.
 */
export async function starterOf(
  exercise: Exercise,
  stageText: string,
  options: { destDir: string; lang?: Lang; stageFile?: string },
): Promise<string> {
  const ts = typescript();
  const stageFile = options.stageFile ?? stageFileOf(exercise);
  const lang = options.lang ?? "en";
  const source = parsed(stageFile, stageText);
  const edits: Edit[] = [];
  const shown = path.relative(REPO_ROOT, stageFile);
  for (const part of exercise.takeOut) {
    if ("function" in part) {
      const body = functionBody(ts, source, part.function, shown);
      const indent = indentOf(stageText, body.getStart()) + "  ";
      const stub = `{\n${indent}// TODO(${exercise.stage}): ${part.task[lang]}\n${indent}throw new Error(${JSON.stringify(notWrittenMessage(part.function, exercise.stage))});\n${indentOf(stageText, body.getStart())}}`;
      // A concise arrow body (`=> expr`) becomes a block.
      edits.push({ start: body.getStart(), end: body.getEnd(), text: stub });
      for (const helper of part.helpers ?? []) edits.push({ ...wholeLines(stageText, declaration(ts, source, helper, shown)), text: "" });
    } else {
      const object = objectLiteral(ts, source, part.entries, shown);
      const properties = part.names.map((name) => property(ts, object, name, part.entries, shown));
      for (const node of properties) edits.push({ ...propertyLines(stageText, node), text: "" });
      const indent = properties.length > 0 ? indentOf(stageText, properties[0].getStart()) : "  ";
      const closing = object.getEnd() - 1;
      const lineStart = stageText.lastIndexOf("\n", closing) + 1;
      edits.push({ start: lineStart, end: lineStart, text: `${indent}// TODO(${exercise.stage}): ${part.task[lang]}\n` });
    }
  }
  edits.push(...importEdits(ts, source, path.dirname(stageFile), options.destDir));
  const banner = starterBanner(exercise, shown, lang, options.destDir);
  return banner + applyEdits(stageText, edits);
}

/**
 * The compiler's parse of `text` as the TypeScript file `file` (its parseDiagnostics included).
 * A stage is parsed to make its starter and again to put its code back, and a starter to put
 * the code back and by the tests: the same text, so the same tree (read only). A stage file
 * takes a good part of a tenth of a second to parse.
 */
export const parsed = remembering(
  16,
  (file: string, text: string) => `${file}\0${text}`,
  (file: string, text: string): import("typescript").SourceFile => {
    const ts = typescript();
    return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  },
);

function starterBanner(exercise: Exercise, stageFile: string, lang: Lang, destDir: string): string {
  const id = exercise.stage;
  const dir = dirOption(destDir);
  const copy = `${fromRoot(destDir)}/${id}.ts`;
  const lines =
    lang === "ja"
      ? [
          `// 演習 ${id}「${exercise.title.ja}」のあなたのコピーです（${stageFile} から \`npm run exercise -- ${id}${dir}\` で作りました）。`,
          `// TODO(${id}) の箇所を書いてください。課題: docs/ja/exercises/${id}.md`,
          `// 確かめる: npm run verify -- ${id}${dir}    動かす: npx tsx ${copy}（キーなしなら記録済みのデモを再生）`,
        ]
      : [
          `// Your copy of exercise ${id}, "${exercise.title.en}", made from ${stageFile} by \`npm run exercise -- ${id}${dir}\`.`,
          `// Write what each TODO(${id}) asks. The task: docs/exercises/${id}.md`,
          `// Check it: npm run verify -- ${id}${dir}    Run it: npx tsx ${copy} (no key: replays the recorded demo)`,
        ];
  return lines.join("\n") + "\n";
}

/**
 * The starter with the stage's own code put back: each stub replaced by the stage's
 * function, its helpers after it, and each object literal as the stage has it.
 */
export async function solvedCopy(exercise: Exercise, starterText: string, stageText: string, stageFile = stageFileOf(exercise)): Promise<string> {
  const ts = typescript();
  const stage = parsed(stageFile, stageText);
  const starter = parsed("starter.ts", starterText);
  const shown = path.relative(REPO_ROOT, stageFile);
  const edits: Edit[] = [];
  const helperNames = new Set(exercise.takeOut.flatMap((part) => ("function" in part ? (part.helpers ?? []) : [])));
  for (const part of exercise.takeOut) {
    if ("function" in part) {
      const original = functionBody(ts, stage, part.function, shown);
      const stub = functionBody(ts, starter, part.function, "the starter");
      edits.push({ start: stub.getStart(), end: stub.getEnd(), text: original.getText(stage) });
      // Each helper goes back after the declaration it followed in the stage (or after the
      // function it serves, when that declaration went too), so the file reads as the stage does.
      const groups = new Map<number, string[]>();
      for (const name of part.helpers ?? []) {
        const node = declaration(ts, stage, name, shown);
        const { start, end } = wholeLines(stageText, node, { blank: false });
        let anchor: string | undefined;
        for (let i = stage.statements.indexOf(node as import("typescript").Statement) - 1; i >= 0 && !anchor; i--) {
          const before = declaredName(ts, stage.statements[i], stage);
          if (before && !helperNames.has(before)) anchor = before;
        }
        const after = anchor && hasDeclaration(ts, starter, anchor) ? declaration(ts, starter, anchor, "the starter") : enclosingStatement(ts, stub);
        const at = lineEnd(starterText, after.getEnd());
        groups.set(at, [...(groups.get(at) ?? []), stageText.slice(start, end)]);
      }
      for (const [at, texts] of groups) edits.push({ start: at, end: at, text: texts.map((text) => `\n${text}`).join("") });
    } else {
      const original = objectLiteral(ts, stage, part.entries, shown);
      const copy = objectLiteral(ts, starter, part.entries, "the starter");
      edits.push({ start: copy.getStart(), end: copy.getEnd(), text: original.getText(stage) });
    }
  }
  return applyEdits(starterText, edits);
}

/** The body of a function declaration, a `const name = () => ...`, or a `Class.method`. */
function functionBody(ts: TS, source: import("typescript").SourceFile, name: string, file: string): import("typescript").Node {
  const [owner, member] = name.includes(".") ? name.split(".") : [undefined, name];
  let found: import("typescript").Node | undefined;
  const visit = (node: import("typescript").Node) => {
    if (found) return;
    if (!owner && ts.isFunctionDeclaration(node) && node.name?.text === member && node.body) found = node.body;
    if (!owner && ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === member && node.initializer) {
      const init = node.initializer;
      if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) found = innermostBody(ts, init);
    }
    if (owner && ts.isClassDeclaration(node) && node.name?.text === owner) {
      const method = node.members.find((m) => ts.isMethodDeclaration(m) && m.name.getText(source) === member);
      if (method && ts.isMethodDeclaration(method) && method.body) found = method.body;
    }
    // `const editFileTool = defineTool({ async execute(params) { ... } })`: editFileTool.execute
    if (owner && ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === owner && node.initializer) {
      found = methodIn(ts, node.initializer, member, source);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (!found) throw new Error(`the exercise takes out ${name}(), but ${file} has no function ${name}: update the exercise's takeOut`);
  return found;
}

/** The body of the first method or function-valued property called `member` in an object literal under `node`. */
function methodIn(ts: TS, node: import("typescript").Node, member: string, source: import("typescript").SourceFile): import("typescript").Node | undefined {
  let found: import("typescript").Node | undefined;
  const visit = (child: import("typescript").Node) => {
    if (found) return;
    if (ts.isObjectLiteralExpression(child)) {
      for (const property of child.properties) {
        if (property.name?.getText(source) !== member) continue;
        if (ts.isMethodDeclaration(property) && property.body) found = property.body;
        else if (ts.isPropertyAssignment(property) && (ts.isArrowFunction(property.initializer) || ts.isFunctionExpression(property.initializer))) {
          found = innermostBody(ts, property.initializer);
        }
      }
    }
    ts.forEachChild(child, visit);
  };
  visit(node);
  return found;
}

/** `(a) => (b) => { ... }`: the body that does the work is the innermost one. */
function innermostBody(ts: TS, fn: import("typescript").ArrowFunction | import("typescript").FunctionExpression): import("typescript").Node {
  let body: import("typescript").Node = fn.body;
  while (ts.isArrowFunction(body)) body = body.body;
  return body;
}

function enclosingStatement(ts: TS, node: import("typescript").Node): import("typescript").Node {
  let current = node;
  while (current.parent && !ts.isSourceFile(current.parent)) current = current.parent;
  return current;
}

/** The name a top-level statement declares, if it declares one. */
function declaredName(ts: TS, statement: import("typescript").Statement, source: import("typescript").SourceFile): string | undefined {
  if (ts.isVariableStatement(statement)) return statement.declarationList.declarations[0]?.name.getText(source);
  const named = statement as { name?: import("typescript").Identifier };
  return ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isTypeAliasDeclaration(statement) || ts.isInterfaceDeclaration(statement)
    ? named.name?.text
    : undefined;
}

function hasDeclaration(ts: TS, source: import("typescript").SourceFile, name: string): boolean {
  return source.statements.some((statement) => declaredName(ts, statement, source) === name);
}

/** The top-level statement that declares `name` (a function, class, constant, type). */
function declaration(ts: TS, source: import("typescript").SourceFile, name: string, file: string): import("typescript").Node {
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      const names = statement.declarationList.declarations.map((d) => d.name.getText(source));
      if (names.includes(name)) {
        if (names.length > 1) throw new Error(`${file} declares ${names.join(", ")} in one statement; the exercise can only take out a whole statement`);
        return statement;
      }
    }
    const named = statement as { name?: import("typescript").Identifier };
    if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isTypeAliasDeclaration(statement) || ts.isInterfaceDeclaration(statement)) && named.name?.text === name) {
      return statement;
    }
  }
  throw new Error(`the exercise takes out ${name}, but ${file} declares no ${name} at the top level: update the exercise's takeOut`);
}

function objectLiteral(ts: TS, source: import("typescript").SourceFile, name: string, file: string): import("typescript").ObjectLiteralExpression {
  let found: import("typescript").ObjectLiteralExpression | undefined;
  const visit = (node: import("typescript").Node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === name && node.initializer) {
      let init = node.initializer;
      while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init)) init = init.expression;
      if (ts.isObjectLiteralExpression(init)) found = init;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (!found) throw new Error(`the exercise takes entries out of ${name}, but ${file} has no object ${name} = { ... }: update the exercise's takeOut`);
  return found;
}

function property(ts: TS, object: import("typescript").ObjectLiteralExpression, name: string, owner: string, file: string): import("typescript").Node {
  const found = object.properties.find((p) => p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) && p.name.text === name);
  if (!found) throw new Error(`the exercise takes ${name} out of ${owner}, but ${owner} in ${file} has no entry ${name}: update the exercise's takeOut`);
  return found;
}

/** Relative imports, re-aimed so the copy in `toDir` imports the same files as the stage. */
function importEdits(ts: TS, source: import("typescript").SourceFile, fromDir: string, toDir: string): Edit[] {
  const edits: Edit[] = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const given = statement.moduleSpecifier.text;
    if (!given.startsWith(".")) continue;
    let aimed = path.relative(toDir, path.resolve(fromDir, given)).split(path.sep).join("/");
    if (!aimed.startsWith(".")) aimed = `./${aimed}`;
    if (aimed !== given) edits.push({ start: statement.moduleSpecifier.getStart() + 1, end: statement.moduleSpecifier.getEnd() - 1, text: aimed });
  }
  return edits;
}

const indentOf = (text: string, at: number) => /^[ \t]*/.exec(text.slice(text.lastIndexOf("\n", at - 1) + 1))![0];
const lineEnd = (text: string, at: number) => {
  const end = text.indexOf("\n", at);
  return end === -1 ? text.length : end + 1;
};

/**
 * A declaration's lines, with the comments right above it (not a region marker, no blank
 * line between) and one blank line around it, so the file reads as if it was never there.
 */
function wholeLines(text: string, node: import("typescript").Node, options = { blank: true }): { start: number; end: number } {
  const lines = text.split("\n");
  const offsets: number[] = [];
  lines.reduce((at, line, i) => ((offsets[i] = at), at + line.length + 1), 0);
  const lineOf = (at: number) => {
    let line = 0;
    while (line + 1 < offsets.length && offsets[line + 1] <= at) line += 1;
    return line;
  };
  let first = lineOf(node.getStart());
  const last = lineOf(node.getEnd() - 1);
  let inBlock = false;
  for (let i = first - 1; i >= 0; i--) {
    const line = lines[i].trim();
    if (inBlock) {
      first = i;
      if (line.startsWith("/*")) inBlock = false;
      continue;
    }
    if (line.startsWith("//") && !/^\/\/ ?#(end)?region\b/.test(line)) first = i;
    else if (line.endsWith("*/")) {
      first = i;
      inBlock = !line.startsWith("/*");
    } else break;
  }
  let end = offsets[last] + lines[last].length + 1;
  // Take one of the blank lines around it, so neither two blank lines nor a blank line
  // before a closing marker remain.
  const blank = (i: number) => i >= 0 && i < lines.length && lines[i].trim() === "";
  if (!options.blank) return { start: offsets[first], end: Math.min(end, text.length) };
  if (blank(first - 1)) first -= 1;
  else if (blank(last + 1)) end += lines[last + 1].length + 1;
  return { start: offsets[first], end: Math.min(end, text.length) };
}

/** An object entry's own lines with its comma, or just its text when it shares a line. */
function propertyLines(text: string, node: import("typescript").Node): { start: number; end: number } {
  const lineStart = text.lastIndexOf("\n", node.getStart() - 1) + 1;
  let end = node.getEnd();
  if (text[end] === ",") end += 1;
  const rest = lineEnd(text, end);
  if (text.slice(lineStart, node.getStart()).trim() === "" && text.slice(end, rest).trim() === "") return { start: lineStart, end: rest };
  while (text[end] === " ") end += 1;
  return { start: node.getStart(), end };
}

/** Apply edits from the end of the text backwards. Removals that touch (two helpers in a row) merge. */
function applyEdits(text: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => b.start - a.start || b.end - a.end);
  const merged: Edit[] = [];
  for (const edit of sorted) {
    const later = merged.at(-1);
    if (later && edit.end > later.start) {
      if (edit.text !== "" || later.text !== "") throw new Error("two parts the exercise takes out overlap; take out the larger one only");
      later.start = Math.min(later.start, edit.start);
      later.end = Math.max(later.end, edit.end);
      continue;
    }
    merged.push({ ...edit });
  }
  return merged.reduce((result, edit) => result.slice(0, edit.start) + edit.text + result.slice(edit.end), text);
}

// ---------------------------------------------------------------------------------------
// What a check can use

/** What a tool call gave back, as the model would read it: the text, and whether it failed. */
export interface ToolAnswer {
  text: string;
  isError: boolean;
}

/** A requirement not met: what happened, in words (and what was expected, when the title does not say it). */
export class CheckFailure extends Error {
  constructor(
    readonly actual: Text,
    readonly expected?: Text,
    readonly missing?: string,
  ) {
    super(actual.en);
  }
}

const notWritten = (name: string) =>
  new CheckFailure(
    say(`${name}() is not written yet: its TODO is still in the copy`, `${name}() はまだ書かれていません（TODO がそのままです）`),
    undefined,
    name,
  );

export interface CheckKit {
  /** The module under check: the learner's copy, or the reference. */
  readonly stage: StageModule;
  /** A fresh temporary folder, also the working directory: the stage's workspace. */
  readonly workspace: string;
  /** A folder beside the workspace, outside it (for paths and links that must not be reached). */
  readonly outside: string;
  /** What the code printed with console.log during this check, a line per call. */
  readonly printed: string[];
  /** A tool as the loop calls it. Never throws for the tool's own errors: they come back as isError. */
  tool(name: string): (input: Record<string, unknown>) => Promise<ToolAnswer>;
  /** Replay a scenario through the module's agentLoop, in the workspace (lib/course/session.ts). */
  replay(scenario: Scenario): Promise<ReplayedSession>;
  /** Replay one of the stage's recorded scenarios (default: its demo). */
  demo(name?: string): Promise<ReplayedSession>;
  /** `session`, if it replayed as recorded; otherwise fail, listing what differed. */
  asRecorded(session: ReplayedSession): ReplayedSession;
  /** Fail the check: what happened; `expected` when it says more than the requirement's title. */
  fail(actual: Text, expected?: Text): never;
  /** Resolve with `work`, or fail with `late` after `ms` milliseconds (for what must not wait). */
  within<T>(ms: number, work: Promise<T> | T, late: Text): Promise<T>;
  /** Run after the check, pass or fail (restore what the check changed in the module). */
  cleanup(fn: () => unknown): void;
  /** A workspace file's text, or undefined when it does not exist. */
  read(relative: string): string | undefined;
  write(relative: string, text: string): void;
  /**
   * The module under check loaded afresh with `settings` in the environment while it loads
   * (s06 reads its approval mode so), for this check only.
   */
  withSettings(settings: Record<string, string>): Promise<StageModule>;
}

/**
 * A terminal with no person whose ask never returns, as an open pipe with no one typing: code
 * that asks anyway waits for ever (a check wraps it in t.within), and asked() says it asked.
 * The real program's terminal looks like this when its input is piped and never ends.
 */
export function nobodyWhoHangs(): { terminal: Terminal; asked: () => number } {
  let asked = 0;
  const terminal: Terminal = {
    hasPerson: false,
    ask: () => {
      asked += 1;
      return new Promise<string | null>(() => {});
    },
    close() {},
  };
  return { terminal, asked: () => asked };
}

// Replies, scenarios and results written briefly, for the checks (the same as the tests use).
export { reply, resultText, scenarioOf, toolResults } from "./replies.ts";
export type { ReplayedSession } from "./session.ts";

/**
 * A value shown inside a sentence, on one line, not too long, as it is written in code: a
 * string in quotes, anything else as JSON (`true`, `3`, `null`, `{"a":1}`), so `true` and
 * `"true"` never look the same.
 */
export function quote(value: unknown): string {
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 160 ? `${text.slice(0, 156)}...${text.startsWith('"') ? '"' : ""}` : text;
}

/** The stage's tool `name` (lib/course/tools.ts); a stage without it fails the check, naming where it is missing. */
function toolCaller(stage: StageModule, name: string): ToolCall {
  const call = toolCall(stage as ToolStage, name);
  if (call) return call;
  if (stage.TOOL_HANDLERS) {
    throw new CheckFailure(
      say(`TOOL_HANDLERS has no ${name}: the dispatch map does not send ${name} to a handler`, `TOOL_HANDLERS に ${name} がありません（ディスパッチマップが ${name} をハンドラに渡していません）`),
      undefined,
      name,
    );
  }
  throw new CheckFailure(say(`the registry has no tool ${name}`, `レジストリにツール ${name} がありません`), undefined, name);
}

/** Fails with "not written yet" when a stub's message shows up anywhere in a session. */
function throwIfStubReached(session: ReplayedSession): void {
  for (const error of session.turnErrors) {
    const name = notWrittenIn(error instanceof Error ? error.message : String(error));
    if (name) throw notWritten(name);
  }
  for (const entry of session.messages) {
    if (entry.role !== "user" || !Array.isArray(entry.content)) continue;
    for (const block of entry.content) {
      const name = block.type === "tool_result" ? notWrittenIn(resultText(block)) : undefined;
      if (name) throw notWritten(name);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Running the checks

export type CheckStatus = "passed" | "failed" | "timed-out" | "not-run";

export interface CheckResult {
  id: string;
  status: CheckStatus;
  /** For a failure: what happened, and what was expected. */
  actual?: Text;
  expected?: Text;
  /** The taken-out function whose TODO was reached, if that is why it failed. */
  missing?: string;
}

/** One requirement's check against a module, in a fresh workspace; never throws. */
/** A problem of the replay engine (lib/course/replay.ts), in Japanese; one it does not know stays as it is. */
function replayProblemJa(problem: string): string {
  const rules: [RegExp, (...groups: string[]) => string][] = [
    [/^(\d+) recorded (?:reply was|replies were) never asked for$/, (n) => `記録した返答のうち ${n} 件は一度も求められませんでした`],
    [/^request (\d+) came after the last recorded reply \((\d+)\)$/, (n, last) => `リクエスト ${n} は記録の最後の返答(${last} 件目)のあとに来ました`],
    [/^request (\d+): expected tool results for \[(.*)\] in that order, got \[(.*)\]$/, (n, want, got) => `リクエスト ${n}: ツールの結果は [${want}] の順のはずが、[${got}] でした`],
    [/^request (\d+): tool results for \[(.*)\] with no assistant message before them$/, (n, ids) => `リクエスト ${n}: ツールの結果 [${ids}] の前にアシスタントのメッセージがありません`],
    [/^request (\d+): the tool calls \[(.*)\] before the results are not in any reply the replay served$/, (n, ids) => `リクエスト ${n}: 結果の前のツール呼び出し [${ids}] は、再生したどの返答にもありません`],
    [/^request (\d+): the API would refuse it: (.*)$/, (n, why) => `リクエスト ${n}: API なら拒否します(${why})`],
  ];
  for (const [pattern, words] of rules) {
    const match = pattern.exec(problem);
    if (match) return words(...match.slice(1));
  }
  return problem;
}

/** Fresh copies of a module under check, each under its own URL so the module cache gives a new one. */
let freshCopies = 0;

export async function runCheck(exercise: Exercise, requirement: Requirement, stage: StageModule, stageUrl?: string): Promise<CheckResult> {
  const home = process.cwd();
  const root = realpathSync(mkdtempSync(path.join(process.env[CHECKS_FOLDER] || os.tmpdir(), `workbook-check-${exercise.stage}-`)));
  const workspace = path.join(root, "workspace");
  const outside = path.join(root, "outside");
  mkdirSync(workspace);
  mkdirSync(outside);
  const printed: string[] = [];
  const cleanups: (() => unknown)[] = [];
  const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error };
  const keep = (...args: unknown[]) => void printed.push(args.map((a) => (typeof a === "string" ? a : String(a))).join(" "));
  Object.assign(console, { log: keep, info: keep, warn: keep, error: keep });
  useTerminal(nobody);
  process.chdir(workspace);

  const kit: CheckKit = {
    stage,
    workspace,
    outside,
    printed,
    tool(name) {
      const call = toolCaller(stage, name);
      return async (input) => {
        let answer: ToolAnswer;
        try {
          answer = { text: await call(input), isError: false };
        } catch (error) {
          if (error instanceof CheckFailure) throw error;
          answer = { text: `Error: ${error instanceof Error ? error.message : String(error)}`, isError: true };
        }
        const stub = notWrittenIn(answer.text);
        if (stub) throw notWritten(stub);
        return answer;
      };
    },
    async replay(scenario) {
      const { replayScenario } = await import("./session.ts");
      const session = await replayScenario(stage, scenario, { workspace });
      throwIfStubReached(session);
      return session;
    },
    demo(name) {
      return kit.replay(loadScenario(exercise.stage, name));
    },
    async withSettings(settings) {
      if (!stageUrl) throw new Error("this check loads the module afresh, and the module's file is not known here");
      const before = Object.fromEntries(Object.keys(settings).map((name) => [name, process.env[name]]));
      Object.assign(process.env, settings);
      try {
        return (await import(`${stageUrl}?settings=${++freshCopies}`)) as StageModule;
      } finally {
        for (const [name, value] of Object.entries(before)) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      }
    },
    asRecorded(session) {
      if (session.problems.length === 0) return session;
      const [en, ja] = [session.problems.join("; "), session.problems.map(replayProblemJa).join("。")];
      throw new CheckFailure(say(`the session did not match the recording: ${en}`, `記録どおりに進みませんでした: ${ja}`));
    },
    fail(actual, expected) {
      throw new CheckFailure(actual, expected);
    },
    async within(ms, work, late) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new CheckFailure(late)), ms)));
      try {
        return await Promise.race([Promise.resolve(work), deadline]);
      } finally {
        clearTimeout(timer);
      }
    },
    cleanup: (fn) => void cleanups.push(fn),
    read(relative) {
      const file = path.join(workspace, relative);
      return existsSync(file) ? readFileSync(file, "utf8") : undefined;
    },
    write(relative, text) {
      const file = path.join(workspace, relative);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
    },
  };

  try {
    await requirement.check(kit);
    return { id: requirement.id, status: "passed" };
  } catch (error) {
    return failed(requirement, error);
  } finally {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch {} // a cleanup that fails must not hide the check's own result
    }
    Object.assign(console, saved);
    useTerminal(nobody);
    process.chdir(home);
    rmSync(root, { recursive: true, force: true });
  }
}

function failed(requirement: Requirement, error: unknown): CheckResult {
  if (error instanceof CheckFailure) {
    return { id: requirement.id, status: "failed", actual: error.actual, expected: error.expected ?? requirement.title, missing: error.missing };
  }
  const text = error instanceof Error ? error.message : String(error);
  const stub = notWrittenIn(text);
  if (stub) return { ...failed(requirement, notWritten(stub)) };
  const line = text.split("\n")[0].slice(0, 300);
  return {
    id: requirement.id,
    status: "failed",
    actual: say(`the code threw an error: ${line}`, `コードが例外を投げました: ${line}`),
    expected: requirement.title,
  };
}

/**
 * Every check against a module, in this process (the tests; CI uses runChecksApart). A check
 * that does not settle within `timeLimitMs` is reported, and the checks after it are not run:
 * the abandoned one still holds the console and the working directory. A loop that blocks
 * the process for good needs runChecksApart.
 */
export async function runChecks(exercise: Exercise, stage: StageModule, options: { timeLimitMs?: number; stageUrl?: string } = {}): Promise<CheckResult[]> {
  const limit = options.timeLimitMs ?? GENEROUS_TIME_LIMIT_MS;
  const results: CheckResult[] = [];
  for (const requirement of exercise.requirements) {
    if (results.some((result) => result.status === "timed-out")) {
      results.push(notRun(requirement));
      continue;
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<CheckResult>((resolve) => (timer = setTimeout(() => resolve(timedOut(requirement, limit)), limit)));
    results.push(await Promise.race([runCheck(exercise, requirement, stage, options.stageUrl), late]));
    clearTimeout(timer);
  }
  return results;
}

/** A check's time limit for a learner: long enough for any check on a laptop, short enough to wait for. */
export const DEFAULT_TIME_LIMIT_MS = 20_000;
/** For CI and the tests, where a busy machine must not fail a correct solution. */
export const GENEROUS_TIME_LIMIT_MS = 30_000;

function timedOut(requirement: Requirement, limitMs: number): CheckResult {
  const seconds = limitMs / 1000;
  return {
    id: requirement.id,
    status: "timed-out",
    expected: requirement.title,
    actual: say(
      `the check did not finish within ${seconds} s: something waits for ever, or a loop never returns`,
      `チェックが ${seconds} 秒以内に終わりませんでした。何かが永遠に待っているか、ループが終わりません`,
    ),
  };
}

// ---------------------------------------------------------------------------------------
// Running the checks in a child process that can be killed

/** Why the module could not be checked at all (a syntax error, an import that fails). */
export interface LoadFailure {
  message: Text;
}

export interface ApartRun {
  results: CheckResult[];
  loadFailure?: LoadFailure;
}

type ChildMessage =
  | { type: "loaded" }
  | { type: "load-failed"; message: Text }
  | { type: "start"; index: number }
  | { type: "result"; index: number; result: CheckResult };

/** Where a child process makes its checks' folders, so the parent can remove what a killed check left. */
const CHECKS_FOLDER = "WORKBOOK_CHECKS_FOLDER";
const THIS_FILE = fileURLToPath(import.meta.url);
/**
 * How long loading the copy (tsx, the stage's packages, the exercise) may take: only a top
 * level that waits for ever goes past it, so it is generous, for a busy machine.
 */
const loadLimitMs = (timeLimitMs: number) => Math.max(60_000, 3 * timeLimitMs);

/**
 * Run an exercise's checks against the module in `file`, in a child process. A check that
 * does not finish within the time limit has the process killed: it is reported as not
 * finished and the checks after it as not run, so nothing waits for ever. A check whose code
 * ends the process is reported as failed, and the rest go on in a fresh process.
 */
export async function runChecksApart(
  exercise: Exercise,
  file: string,
  options: { timeLimitMs?: number; onResult?: (result: CheckResult, index: number) => void; only?: string } = {},
): Promise<ApartRun> {
  const limit = options.timeLimitMs ?? DEFAULT_TIME_LIMIT_MS;
  // `only`: one requirement's check (a wrong solution is run against the one it must fail).
  const only = options.only === undefined ? undefined : exercise.requirements.findIndex((r) => r.id === options.only);
  if (only === -1) throw new Error(`exercise ${exercise.stage} has no requirement "${options.only}"`);
  const last = only ?? exercise.requirements.length - 1;
  const results: CheckResult[] = [];
  const record = (index: number, result: CheckResult) => {
    results[index] = result;
    options.onResult?.(result, index);
  };
  // The child's temporary folder: whatever a killed check leaves behind goes with it.
  const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-checks-")));
  try {
    let from = only ?? 0;
    while (from <= last) {
      const outcome = await childRun(exercise, file, from, last, limit, record, scratch);
      if (outcome.loadFailure) return { results, loadFailure: outcome.loadFailure };
      if (outcome.next === undefined) break;
      from = outcome.next;
    }
    return { results: only === undefined ? results : [results[only]] };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** One child process from check `from` on; `next` is where a fresh process should go on, if anywhere. */
function childRun(
  exercise: Exercise,
  file: string,
  from: number,
  last: number,
  limit: number,
  record: (index: number, result: CheckResult) => void,
  scratch: string,
): Promise<{ next?: number; loadFailure?: LoadFailure }> {
  const requirements = exercise.requirements;
  // Not TMPDIR: tsx keeps its cache of compiled files there, and a cold cache is slow.
  const env: Record<string, string | undefined> = { ...process.env, [CHECKS_FOLDER]: scratch };
  for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "MODEL_ID", "APPROVAL_MODE", "COMPACT_THRESHOLD"]) delete env[name];
  // Nor the learner's settings file: a key or an approval mode there must not change a check.
  const noSettings = path.join(scratch, "no-settings.env");
  writeFileSync(noSettings, "");
  env.WORKBOOK_ENV_FILE = noSettings;
  const child = spawn(process.execPath, ["--import", TSX_LOADER, THIS_FILE, exercise.stage, file, String(from), String(last)], {
    cwd: scratch,
    env,
    stdio: ["ignore", "ignore", "pipe", "ipc"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));

  // A check stuck in a busy loop never sees its parent go: if this process ends first (Ctrl-C
  // in --watch, a test runner tearing down), the child must not spin on alone.
  const killChild = () => child.kill("SIGKILL");
  process.once("exit", killChild);

  return new Promise((resolve) => {
    let current: number | undefined;
    let lastDone = from - 1;
    let loaded = false;
    let settled = false;
    let timer = setTimeout(() => stop({ loadFailure: { message: slowLoad(loadLimitMs(limit)) } }), loadLimitMs(limit));
    const stop = (outcome: { next?: number; loadFailure?: LoadFailure }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      killChild();
      process.off("exit", killChild);
      resolve(outcome);
    };
    child.on("message", (message: ChildMessage) => {
      if (message.type === "loaded") {
        loaded = true;
        clearTimeout(timer);
      } else if (message.type === "load-failed") {
        stop({ loadFailure: { message: message.message } });
      } else if (message.type === "start") {
        current = message.index;
        clearTimeout(timer);
        timer = setTimeout(() => {
          record(message.index, timedOut(requirements[message.index], limit));
          for (let i = message.index + 1; i <= last; i++) record(i, notRun(requirements[i]));
          stop({});
        }, limit);
      } else if (message.type === "result") {
        clearTimeout(timer);
        record(message.index, message.result);
        lastDone = message.index;
        current = undefined;
        if (message.index === last) stop({});
      }
    });
    child.on("exit", (code, signal) => {
      if (settled) return;
      if (!loaded) return stop({ loadFailure: { message: crashedWhileLoading(stderr, code) } });
      if (current === undefined) {
        if (lastDone === last) return stop({});
        // Ended between two checks (a timer of the learner's calling process.exit, say): the
        // next check is the one it ended, and a fresh process goes on after it.
        current = lastDone + 1;
      }
      record(current, {
        id: requirements[current].id,
        status: "failed",
        expected: requirements[current].title,
        actual: say(
          `the code ended the process during this check (${signal ?? `exit code ${code}`}): a tool or the loop called process.exit, or crashed`,
          `このチェックの途中でコードがプロセスを終了させました（${signal ?? `終了コード ${code}`}）。ツールかループが process.exit を呼んだか、落ちています`,
        ),
      });
      stop({ next: current + 1 });
    });
  });
}

const notRun = (requirement: Requirement): CheckResult => ({ id: requirement.id, status: "not-run", expected: requirement.title });

const slowLoad = (ms: number) =>
  say(
    `the copy did not finish loading within ${ms / 1000} s: does code at the top of the file wait for something?`,
    `コピーの読み込みが ${ms / 1000} 秒以内に終わりませんでした。ファイルの最上位のコードが何かを待っていませんか`,
  );

function crashedWhileLoading(stderr: string, code: number | null): Text {
  const line = stderr.split("\n").find((l) => /error/i.test(l))?.trim() ?? `exit code ${code}`;
  return say(`the checks could not start: ${line}`, `チェックを始められませんでした: ${line}`);
}

/** What went wrong loading a module, in one line: where, and what (no stack trace). */
export function describeLoadError(error: unknown, file: string): Text {
  const text = error instanceof Error ? error.message : String(error);
  const relative = path.relative(REPO_ROOT, file);
  const shown = relative.startsWith("..") ? file : relative;
  // esbuild (through tsx): "Transform failed with 1 error:\n/path/file.ts:3:18: ERROR: Unexpected ..."
  const syntax = /([^\s:]+\.ts):(\d+):(\d+): ERROR: (.*)/.exec(text);
  if (syntax) {
    const [, , line, column, what] = syntax;
    return say(`${shown} has a syntax error at line ${line}, column ${column}: ${what}`, `${shown} の ${line} 行 ${column} 列に構文エラーがあります: ${what}`);
  }
  const first = text.split("\n")[0];
  return say(`${shown} could not be loaded: ${first}`, `${shown} を読み込めませんでした: ${first}`);
}

/** The child's side: load the module, then run the checks from `from` on, reporting each. */
async function childMain([id, file, from, last]: string[]): Promise<void> {
  const send = (message: ChildMessage) => new Promise<void>((resolve) => process.send!(message, () => resolve()));
  // What the learner's code leaves behind (a promise rejected later) must not end the checks.
  process.on("unhandledRejection", () => {});
  process.on("uncaughtException", () => {});
  // The parent went away (and cannot kill this process any more): stop.
  process.on("disconnect", () => process.exit(1));
  // Loading happens in the scratch folder the parent gave (the working directory), so a .env
  // in the learner's folder is not read.
  let exercise: Exercise;
  let stage: StageModule;
  try {
    exercise = await loadExercise(id);
    stage = (await import(pathToFileURL(file).href)) as StageModule;
  } catch (error) {
    await send({ type: "load-failed", message: describeLoadError(error, file) });
    process.exit(1);
  }
  // The replay engine (msw) and the SDK load at their first use, which would count against
  // the first check's time limit: load them now, under the generous limit for loading.
  await import("./session.ts");
  (await import("../runtime/model.ts")).sdkModule();
  await send({ type: "loaded" });
  for (let index = Number(from); index <= Number(last); index++) {
    await send({ type: "start", index });
    const result = await runCheck(exercise, exercise.requirements[index], stage, pathToFileURL(file).href);
    await send({ type: "result", index, result });
  }
  process.exit(0);
}

// Not awaited: the exercise files import this module, so it must finish loading first.
if (process.argv[1] && existsSync(process.argv[1]) && realpathSync(process.argv[1]) === THIS_FILE && process.send) {
  void childMain(process.argv.slice(2));
}

// ---------------------------------------------------------------------------------------
// Type-checking starters and solved copies as if they were in workshop/

/** Source files read by typeCheck, by path, language version and modification time. */
const parsedFiles = new Map<string, import("typescript").SourceFile | undefined>();

/**
 * Type-check `copies` (name -> text) as files of workshop/ under the project's compiler
 * options, without writing them anywhere. Returns the problems, one line each.
 */
export async function typeCheck(copies: Map<string, string>, workshopDir = WORKSHOP_DIR): Promise<string[]> {
  const ts = typescript();
  const config = ts.getParsedCommandLineOfConfigFile(path.join(REPO_ROOT, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (!config) throw new Error("tsconfig.json could not be read");
  const virtual = new Map([...copies].map(([name, text]) => [path.join(workshopDir, name), text]));
  const host = ts.createCompilerHost(config.options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (file) => virtual.has(file) || fileExists.call(host, file);
  host.readFile = (file) => virtual.get(file) ?? readFile.call(host, file);
  host.getSourceFile = (file, language, ...rest) => {
    if (virtual.has(file)) return ts.createSourceFile(file, virtual.get(file)!, language, true);
    // The stages, lib and the packages' types are the same at every check (--watch checks on each
    // save): parsed once per version of the file, a check after the first takes a fraction of the time.
    const key = `${file}\0${JSON.stringify(language)}\0${statSync(file, { throwIfNoEntry: false })?.mtimeMs}`;
    let parsed = parsedFiles.get(key);
    if (!parsed) parsedFiles.set(key, (parsed = getSourceFile.call(host, file, language, ...rest)));
    return parsed;
  };
  const program = ts.createProgram([...virtual.keys()], { ...config.options, noEmit: true }, host);
  // Only the copies' own problems, so only the copies are checked: the files they import are
  // read for their types, not checked whole (the stage files are type-checked by npm run typecheck).
  const copied = program.getSourceFiles().filter((file) => virtual.has(file.fileName));
  return [...program.getOptionsDiagnostics(), ...copied.flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)])]
    .filter((d) => d.file && virtual.has(d.file.fileName))
    .map((d) => {
      const { line, character } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
      const relative = path.relative(REPO_ROOT, d.file!.fileName);
      const shown = relative.startsWith("..") || path.isAbsolute(relative) ? d.file!.fileName : relative;
      return `${shown}:${line + 1}:${character + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
    });
}
