// What the docs read from a stage file: its `#region` blocks and its figures (lines of code,
// tools the model sees). Used at build time by the data loader and by the docs tests.
import ts from "typescript";

// The regions are read by lib/regions.ts, which the tests, the bench and the scripts share
// without loading the TypeScript compiler.
export { regionsOf } from "../lib/regions.ts";

/**
 * Lines of code: lines that hold at least one token of the program. Blank lines and lines
 * with only comments do not count; a line of a multi-line string does.
 */
export function linesOfCode(text: string, fileName = "stage.ts"): number {
  return codeLines(text, fileName).size;
}

/** The 0-based numbers of the lines that count as code (see linesOfCode). */
export function codeLines(text: string, fileName = "stage.ts"): Set<number> {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lines = new Set<number>();
  const visit = (node: ts.Node) => {
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    const children = node.getChildren(source);
    if (children.length === 0) {
      if (node.kind === ts.SyntaxKind.EndOfFileToken || node.getStart(source) === node.getEnd()) return;
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      for (let line = first; line <= last; line++) lines.add(line);
      return;
    }
    children.forEach(visit);
  };
  visit(source);
  return lines;
}

/**
 * The tools the model sees: the entries of the exported `TOOLS` array literal.
 * Returns undefined when the file has no such array (a later stage may build it otherwise).
 */
export function toolCount(text: string, fileName = "stage.ts"): number | undefined {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  let count: number | undefined;
  const visit = (node: ts.Node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === "TOOLS" && node.initializer) {
      let init: ts.Expression = node.initializer;
      while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init)) init = init.expression;
      if (ts.isArrayLiteralExpression(init) && !init.elements.some(ts.isSpreadElement)) count = init.elements.length;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return count;
}
