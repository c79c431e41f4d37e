// What the docs read from a stage file: its `#region` blocks and its figures (lines of code,
// tools the model sees). Used at build time by the data loader and by the docs tests.
import ts from "typescript";

const REGION = /^\/\/ ?#?(region|endregion) ([\w*-]+)$/;

/**
 * The `// #region name` ... `// #endregion name` blocks of a file, by name, with the text
 * between the markers. The marker syntax is VitePress's, so what the tests see is what a
 * page includes with `<<< file#name`. A region opened and never closed is an error here,
 * because VitePress would silently include the whole file instead.
 */
export function regionsOf(text: string): Map<string, string> {
  const lines = text.split("\n");
  const regions = new Map<string, string>();
  const open = new Map<string, number>();
  lines.forEach((line, index) => {
    const match = REGION.exec(line.trim());
    if (!match) return;
    const [, kind, name] = match;
    if (kind === "region") {
      if (open.has(name) || regions.has(name)) throw new Error(`region "${name}" is opened twice`);
      open.set(name, index);
    } else {
      const start = open.get(name);
      if (start === undefined) throw new Error(`region "${name}" is closed but was never opened`);
      open.delete(name);
      regions.set(name, lines.slice(start + 1, index).join("\n"));
    }
  });
  for (const name of open.keys()) throw new Error(`region "${name}" is never closed`);
  return regions;
}

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
