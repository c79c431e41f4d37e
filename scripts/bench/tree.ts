// The tree the search bench runs on: a made-up monorepo of source-like files, the same every
// time for the same seed. It has what a real project has and what the search tools must
// handle: packages of TypeScript, JavaScript, Python, Go, Markdown and JSON, some of it with
// Japanese comments; CRLF files; dotfiles; binary files; one file over the 10 MB limit; a
// .gitignore at the top and deeper ones (one of them un-ignoring a file); a node_modules
// and a .git folder; and symlinks, which neither tool follows.
import { mkdirSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";

export interface TreeOptions {
  /** Files in all, ignored ones included (default 20,000). */
  files?: number;
  /** Seed of the random choices: the same seed gives the same tree. */
  seed?: number;
  /** Add one text file of 11 MB (over the tools' 10 MB limit). Default true. */
  bigFile?: boolean;
}

export interface TreeSummary {
  files: number;
  bytes: number;
  folders: number;
}

/** A small, fast, seeded random number generator (mulberry32): the same seed, the same numbers. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  "config", "request", "response", "user", "session", "token", "cache", "buffer", "stream", "parser",
  "handler", "router", "client", "server", "query", "result", "error", "value", "option", "timeout",
  "retry", "logger", "event", "queue", "worker", "task", "schema", "record", "index", "table",
  "render", "state", "store", "action", "payload", "message", "channel", "socket", "file", "path",
];
const FOLDERS = ["core", "util", "api", "view"];
const JAPANESE = ["設定を読み込む", "ユーザーを探す", "キャッシュを消す", "再試行する", "結果を返す", "エラーを記録する"];

/** Where each kind of file goes and what its lines look like. */
const KINDS = [
  { ext: "ts", weight: 30, line: tsLine },
  { ext: "js", weight: 15, line: jsLine },
  { ext: "tsx", weight: 8, line: tsLine },
  { ext: "py", weight: 10, line: pyLine },
  { ext: "go", weight: 8, line: goLine },
  { ext: "md", weight: 10, line: mdLine },
  { ext: "json", weight: 8, line: jsonLine },
  { ext: "css", weight: 5, line: cssLine },
  { ext: "txt", weight: 6, line: mdLine },
];

type Pick = <T>(list: readonly T[]) => T;

function tsLine(pick: Pick, n: () => number): string {
  const a = pick(WORDS);
  const b = pick(WORDS);
  switch (Math.floor(n() * 10)) {
    case 0: return `export function ${a}${cap(b)}(${b}: ${cap(a)}Options): Promise<${cap(b)}> {`;
    case 1: return `  const ${a} = await load${cap(b)}(${b}, { timeout: ${Math.floor(n() * 9000)} });`;
    case 2: return `  // TODO: handle the ${a} when the ${b} is empty`;
    case 3: return `  if (!${a}) throw new Error("no ${a} for ${b}");`;
    case 4: return `import { ${a}, ${b} } from "../${a}/${b}.ts";`;
    case 5: return `  // ${pick(JAPANESE)}: ${a} ${b}`;
    case 6: return `  return ${a}.${b}.map((item) => item.${pick(WORDS)});`;
    case 7: return `}`;
    case 8: return ``;
    default: return `  ${a}.${b} = ${b}Of(${pick(WORDS)}, ${Math.floor(n() * 100)});`;
  }
}

function jsLine(pick: Pick, n: () => number): string {
  const a = pick(WORDS);
  const b = pick(WORDS);
  switch (Math.floor(n() * 8)) {
    case 0: return `function ${a}${cap(b)}(${b}) {`;
    case 1: return `  const ${a} = require("./${b}");`;
    case 2: return `  // FIXME: ${a} leaks when ${b} fails`;
    case 3: return `  module.exports.${a} = ${b};`;
    case 4: return `  console.log("${a}", ${b});`;
    case 5: return `}`;
    case 6: return ``;
    default: return `  var ${a} = ${b} || ${Math.floor(n() * 1000)};`;
  }
}

function pyLine(pick: Pick, n: () => number): string {
  const a = pick(WORDS);
  const b = pick(WORDS);
  switch (Math.floor(n() * 6)) {
    case 0: return `def ${a}_${b}(${b}, timeout=${Math.floor(n() * 60)}):`;
    case 1: return `    """Return the ${a} of a ${b}."""`;
    case 2: return `    # TODO: ${a} ${b}`;
    case 3: return `    return ${a}.get("${b}")`;
    case 4: return ``;
    default: return `    ${a} = ${b}[${Math.floor(n() * 10)}]`;
  }
}

function goLine(pick: Pick, n: () => number): string {
  const a = pick(WORDS);
  const b = pick(WORDS);
  switch (Math.floor(n() * 6)) {
    case 0: return `func ${cap(a)}${cap(b)}(${b} *${cap(a)}) error {`;
    case 1: return `\tif err := ${a}.${cap(b)}(); err != nil {`;
    case 2: return `\t\treturn fmt.Errorf("${a}: %w", err)`;
    case 3: return `\t}`;
    case 4: return `}`;
    default: return `\t${a} := ${b}[${Math.floor(n() * 10)}]`;
  }
}

function mdLine(pick: Pick, n: () => number): string {
  const a = pick(WORDS);
  const b = pick(WORDS);
  switch (Math.floor(n() * 5)) {
    case 0: return `## The ${a} ${b}`;
    case 1: return `The ${a} keeps the ${b} until the ${pick(WORDS)} ends; see \`${a}.${b}\`.`;
    case 2: return `- ${a}: ${pick(JAPANESE)}`;
    case 3: return ``;
    default: return `Set \`${a}\` to ${Math.floor(n() * 100)} to change the ${b}.`;
  }
}

function jsonLine(pick: Pick, n: () => number): string {
  return `  "${pick(WORDS)}_${pick(WORDS)}": ${n() < 0.5 ? Math.floor(n() * 1000) : `"${pick(WORDS)}"`},`;
}

function cssLine(pick: Pick, n: () => number): string {
  return n() < 0.3 ? `.${pick(WORDS)}-${pick(WORDS)} {` : n() < 0.5 ? "}" : `  margin: ${Math.floor(n() * 40)}px;`;
}

const cap = (word: string) => word[0].toUpperCase() + word.slice(1);

/**
 * Write the tree into `root` (which should be empty) and return what was written. About 5 KB
 * per file on average, so 20,000 files make about 100 MB; the 11 MB file comes on top.
 */
export function generateTree(root: string, options: TreeOptions = {}): TreeSummary {
  const total = options.files ?? 20_000;
  const n = random(options.seed ?? 1);
  const pick: Pick = (list) => list[Math.floor(n() * list.length)];
  const weights = KINDS.reduce((sum, kind) => sum + kind.weight, 0);
  const kindOf = () => {
    let roll = n() * weights;
    for (const kind of KINDS) if ((roll -= kind.weight) < 0) return kind;
    return KINDS[0];
  };
  const summary: TreeSummary = { files: 0, bytes: 0, folders: 0 };
  const folders = new Set<string>();
  // Every file gets its own time, a second apart in a shuffled order, so "newest first" has
  // one answer on every run and machine.
  const base = 1_700_000_000;
  const write = (relative: string, content: string | Buffer) => {
    const full = path.join(root, relative);
    const folder = path.dirname(full);
    if (!folders.has(folder)) {
      mkdirSync(folder, { recursive: true });
      folders.add(folder);
    }
    writeFileSync(full, content);
    const time = base + Math.floor(n() * 10_000_000);
    utimesSync(full, time, time);
    summary.files += 1;
    summary.bytes += Buffer.byteLength(content);
  };
  const sourceFile = (lineOf: (pick: Pick, n: () => number) => string, crlf: boolean) => {
    // Most files are small and a few are large, as in real projects: 200 B to about 40 KB.
    const lines = Math.floor(8 + n() ** 3 * 480);
    const text = Array.from({ length: lines }, () => lineOf(pick, n)).join(crlf ? "\r\n" : "\n");
    return `${text}${crlf ? "\r\n" : "\n"}`;
  };

  // The ignore rules: dist/ and *.log at the top; in some packages build/ and generated/,
  // and one that brings back a log file the top-level rule leaves out.
  write(".gitignore", "dist/\n*.log\ncoverage/\n.env\n");
  write(".env", "API_TOKEN=not-a-real-token\n");
  write(".github/workflows/ci.yml", "name: ci\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n");
  write(".eslintrc.json", '{\n  "root": true,\n  "rules": { "no-unused-vars": "error" }\n}\n');

  let written = summary.files;
  const budget = (share: number) => Math.floor(total * share);
  // .git: objects and refs, never searched.
  for (let i = 0; i < budget(0.03); i++) {
    write(`.git/objects/${(i % 256).toString(16).padStart(2, "0")}/${i.toString(16).padStart(38, "0")}`, sourceFile(tsLine, false));
  }
  // node_modules: installed packages, never searched, at the top and inside packages.
  for (let i = 0; i < budget(0.1); i++) {
    const where = i % 5 === 0 ? `packages/pkg${String(i % 20).padStart(2, "0")}/node_modules` : "node_modules";
    write(`${where}/${WORDS[i % 40]}-${i % 3}/lib/${pick(WORDS)}${i}.js`, sourceFile(jsLine, false));
  }
  // Build output and coverage, left out by .gitignore.
  for (let i = 0; i < budget(0.05); i++) {
    const where = i % 3 === 0 ? "coverage" : `packages/pkg${String(i % 20).padStart(2, "0")}/dist`;
    write(`${where}/${pick(WORDS)}${i}.js`, sourceFile(jsLine, false));
  }
  written = summary.files;

  // The packages: the bulk of the tree, in about 2,000 folders.
  const binaries = Math.ceil(total / 500);
  const special = 10 + 3 + binaries + (options.bigFile ?? true ? 1 : 0); // the files written after the packages
  const remaining = total - written - special;
  for (let i = 0; i < remaining; i++) {
    const pkg = `packages/pkg${String(i % 20).padStart(2, "0")}`;
    const depth = Math.floor(n() * 3);
    const parts = [pkg, pick(["src", "src", "src", "test", "docs", "build", "generated"])];
    for (let d = 0; d < depth; d++) parts.push(pick(FOLDERS));
    const kind = kindOf();
    const crlf = i % 97 === 0;
    const name = `${pick(WORDS)}_${pick(WORDS)}_${i}.${kind.ext}`;
    write(`${parts.join("/")}/${name}`, sourceFile(kind.line, crlf));
  }
  // Deeper rules: packages 0 to 9 leave out build/ and generated/; pkg03 keeps one log file.
  for (let p = 0; p < 10; p++) write(`packages/pkg0${p}/.gitignore`, `build/\ngenerated/\n${p === 3 ? "!keep.log\n" : ""}`);
  write("packages/pkg03/keep.log", "request timeout while loading the config\n");
  write("packages/pkg03/drop.log", "request timeout while loading the config\n");
  write("packages/pkg04/trace.log", "request timeout while loading the config\n");
  // Binary files: a NUL byte near the start, and words that would match if they were read.
  for (let i = 0; i < binaries; i++) {
    const words = new Uint32Array(1024 + Math.floor(n() * 15_000));
    for (let w = 0; w < words.length; w++) words[w] = n() * 2 ** 32;
    const bytes = Buffer.from(words.buffer);
    bytes.write("config request timeout TODO", 16);
    bytes[100] = 0;
    write(`packages/pkg${String(i % 20).padStart(2, "0")}/assets/image${i}.png`, bytes);
  }
  if (options.bigFile ?? true) {
    // Over the 10 MB limit: both tools leave it out (ripgrep with --max-filesize 10M).
    const line = "config request timeout TODO big file line\n";
    write("packages/pkg00/data/huge.txt", line.repeat(Math.ceil((11 * 1024 * 1024) / line.length)));
  }
  // Symlinks, to a folder and to a file, inside the tree: neither tool follows them.
  symlinkSync("../pkg01/src", path.join(root, "packages/pkg02/linked-src"));
  symlinkSync("../../.gitignore", path.join(root, "packages/pkg02/linked.txt"));
  summary.folders = folders.size;
  return summary;
}
