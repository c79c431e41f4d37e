// What the docs read from a stage file: its `#region` blocks and its figures (lines of code,
// tools the model sees). Used at build time by the data loader and by the docs tests.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { Expression, Node, SyntaxKind } from "typescript";
import { REPO_ROOT } from "../lib/course/stages.ts";
import { typescript } from "../lib/course/typescript.ts";
import { MACHINERY } from "./curriculum.ts";

const ts = typescript();

// The regions are read by lib/course/regions.ts, which the tests, the bench and the scripts share
// without loading the TypeScript compiler.
export { regionsOf } from "../lib/course/regions.ts";

/**
 * Lines of code: lines that hold at least one token of the program. Blank lines and lines
 * with only comments do not count; a line of a multi-line string does.
 */
export function linesOfCode(text: string): number {
  return codeLines(text).size;
}

const K = ts.SyntaxKind;
/** Tokens after which a `/` divides; after any other, it starts a regular expression. */
const ENDS_A_VALUE = new Set([
  K.Identifier, K.ThisKeyword, K.SuperKeyword, K.TrueKeyword, K.FalseKeyword, K.NullKeyword, K.NumericLiteral, K.BigIntLiteral,
  K.StringLiteral, K.NoSubstitutionTemplateLiteral, K.TemplateTail, K.RegularExpressionLiteral,
  K.CloseParenToken, K.CloseBracketToken, K.CloseBraceToken, K.PlusPlusToken, K.MinusMinusToken,
]);

/**
 * The 0-based numbers of the lines that count as code (see linesOfCode). The compiler's
 * scanner finds the tokens, without a parse: a whole parse of a stage takes several times
 * longer, to find the same tokens. What the scanner cannot see alone, the tokens before
 * decide: whether a `/` starts a regular expression, and whether a `}` ends a template's
 * `${...}` (then the template goes on).
 */
export function codeLines(text: string): Set<number> {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
  const starts = [0]; // where each line starts
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) starts.push(at + 1);
  let line = 0;
  const lineOf = (position: number) => {
    while (line + 1 < starts.length && starts[line + 1] <= position) line++; // tokens come in order
    return line;
  };
  const lines = new Set<number>();
  const templates: number[] = []; // the brace depth at each open `${`
  let depth = 0;
  let previous: SyntaxKind = K.Unknown;
  for (let kind = scanner.scan(); kind !== K.EndOfFileToken; kind = scanner.scan()) {
    if ((kind === K.SlashToken || kind === K.SlashEqualsToken) && !ENDS_A_VALUE.has(previous)) kind = scanner.reScanSlashToken();
    else if (kind === K.CloseBraceToken && templates.at(-1) === depth) {
      kind = scanner.reScanTemplateToken(false);
      if (kind === K.TemplateTail) templates.pop();
    } else if (kind === K.OpenBraceToken) depth++;
    else if (kind === K.CloseBraceToken) depth--;
    else if (kind === K.TemplateHead) templates.push(depth);
    const [start, end] = [scanner.getTokenStart(), scanner.getTokenEnd()];
    for (let at = lineOf(start), last = lineOf(end); at <= last; at++) lines.add(at);
    previous = kind;
  }
  return lines;
}

/**
 * The tools the model sees: the entries of the exported `TOOLS` array literal.
 * Returns undefined when the file has no such array (a later stage may build it otherwise).
 */
export function toolCount(text: string, fileName = "stage.ts"): number | undefined {
  // Only the TOOLS statement is parsed when its lines can be cut out (from `const TOOLS` to
  // a line "];", or that one line): a stage is thousands of lines. Otherwise, the whole file.
  const start = text.search(/^(export )?const TOOLS\b/m);
  if (start >= 0) {
    const firstLine = text.slice(start).split("\n", 1)[0];
    const end = firstLine.trimEnd().endsWith("[") ? text.indexOf("\n];", start) + "\n];".length : start + firstLine.length;
    const statement = toolsIn(text.slice(start, end), fileName);
    if (statement.whole) return statement.count;
  }
  return toolsIn(text, fileName).count;
}

/** The TOOLS count in `text`, and whether `text` is one statement that parses. */
function toolsIn(text: string, fileName: string): { count: number | undefined; whole: boolean } {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  let count: number | undefined;
  const visit = (node: Node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === "TOOLS" && node.initializer) {
      let init: Expression = node.initializer;
      while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init)) init = init.expression;
      if (ts.isArrayLiteralExpression(init) && !init.elements.some(ts.isSpreadElement)) count = init.elements.length;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const problems = (source as unknown as { parseDiagnostics: unknown[] }).parseDiagnostics;
  return { count, whole: source.statements.length === 1 && problems.length === 0 };
}

/**
 * The lib/machinery modules a stage file runs, by id, in the order of MACHINERY: those it
 * imports, and those of a stage file it imports (s07 to s12 import s06's tools).
 */
export function machineryOf(text: string, agentsDir = path.join(REPO_ROOT, "agents")): string[] {
  const found = new Set<string>();
  const visit = (source: string, seen: Set<string>) => {
    for (const [, id] of source.matchAll(/from "\.\.\/lib\/machinery\/([\w-]+)\.ts"/g)) found.add(id);
    for (const [, file] of source.matchAll(/from "\.\/(s\d\d_[\w]+\.ts)"/g)) {
      if (seen.has(file)) continue;
      seen.add(file);
      visit(readFileSync(path.join(agentsDir, file), "utf8"), seen);
    }
  };
  visit(text, new Set());
  return MACHINERY.map((module) => module.id).filter((id) => found.has(id));
}
