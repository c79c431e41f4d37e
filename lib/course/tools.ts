// A stage's tools seen from outside its loop (the tests, the exercises' checks, the bench).
// Calling one works the same way whatever the stage's shape: through the dispatch map of s01
// to s05 (a handler that throws on failure) or through the registry from s06 (the tool's own
// validation, then execute; llmContent is what the model receives). The registry's
// confirmation step is not part of a tool's behaviour, so it is not asked here; s06's own
// tests cover it. And which stages run the same code for a tool, so it is tested and
// measured once per implementation rather than once per stage.
import { readFileSync } from "node:fs";
import { regionsOf } from "./regions.ts";
import { stageIdOf } from "./stages.ts";


/** A tool as the callers use it: input in, the text the model would receive out; a failure throws. */
export type ToolCall = (input: Record<string, unknown>) => Promise<string>;

interface RegisteredTool {
  validateToolParams(params: Record<string, unknown>): string | null | undefined;
  execute(params: Record<string, unknown>, signal: AbortSignal): Promise<{ llmContent: unknown }>;
}

/** What a stage module offers for calling its tools: one of the two shapes. */
export interface ToolStage {
  TOOL_HANDLERS?: Record<string, (input: Record<string, unknown>) => unknown>;
  registry?: { getTool(name: string): RegisteredTool | undefined };
}

/** The stage's tool `name` as a function, or undefined when the stage has no such tool. */
export function toolCall(stage: ToolStage, name: string): ToolCall | undefined {
  if (stage.TOOL_HANDLERS) {
    const handler = stage.TOOL_HANDLERS[name];
    return typeof handler === "function" ? async (input) => String(await handler(input)) : undefined;
  }
  const tool = stage.registry?.getTool(name);
  if (!tool) return undefined;
  return async (input) => {
    // As runTool does before validating: null means "not given" (models send it so).
    const params = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== null));
    const problem = tool.validateToolParams(params);
    if (problem) throw new Error(problem);
    const { llmContent } = await tool.execute(params, new AbortController().signal);
    return typeof llmContent === "string" ? llmContent : JSON.stringify(llmContent);
  };
}

/**
 * The regions a tool's behaviour is written in (its handler, the helpers it calls, its
 * registry wrapper: from s06 the defineTool object sits in the tool's own region), besides the
 * shared ones below. A carried region stays byte-identical from stage to stage unless the
 * later stage's page names the change (tests/docs.test.ts), so stages whose regions here are
 * the same run the same code for this tool.
 */
const TOOL_REGIONS: Record<string, string[]> = {
  bash: ["bash"],
  read_file: ["sandbox", "read-file"],
  write_file: ["sandbox", "write-file"],
  edit_file: ["sandbox", "read-file", "write-file", "edit-file"],
  grep: ["sandbox", "walk", "grep"],
  glob: ["sandbox", "walk", "glob"],
  ls: ["sandbox", "walk", "ls"],
  web_fetch: ["web-fetch", "web-address", "html-to-text"],
  ask_user: ["ask-user"],
};
/** What every tool may go through: the limits, the tool object and registry, the large-result wrapper, Part I's argument checks. */
const SHARED_REGIONS = ["config", "tool", "registry", "large-results", "part-one", "run-tool"];

/**
 * What decides how a stage runs tool `name`: its shape (dispatch map or registry), the tool's
 * own regions, and of the shared regions the statements those reach. A later stage adds to
 * the shared regions for its own mechanism (s11 a compaction threshold in `config`, s12 the
 * skills in its system prompt); a tool that never names what was added runs the same code, so
 * it is tested once for both stages. Anything in doubt is kept: a statement that declares no
 * name (it runs at load), and any name that appears in the code, even in a string.
 */
function implementationOf(text: string, name: string): string {
  // The test harness reaches a tool through these (lib/course/tools.ts toolCall), whatever it names.
  return JSON.stringify([text.includes("TOOL_HANDLERS"), regionsCode(text, TOOL_REGIONS[name] ?? [], "registry TOOL_HANDLERS")]);
}

/** The text of `names`' regions and of the shared statements they reach (see implementationOf). */
function regionsCode(text: string, names: string[], callers = ""): string {
  const regions = regionsOf(text);
  const own = names.map((region) => regions.get(region) ?? null);
  const shared = SHARED_REGIONS.flatMap((region) => statementsOf(regions.get(region) ?? ""));
  const reached = identifiersIn(`${own.join("\n")} ${callers}`);
  const kept = new Set(shared.filter((statement) => declaredName(statement) === undefined));
  let grew = true;
  while (grew) {
    grew = false;
    for (const statement of shared) {
      if (kept.has(statement) || !reached.has(declaredName(statement)!)) continue;
      kept.add(statement);
      for (const word of identifiersIn(statement)) reached.add(word);
      grew = true;
    }
  }
  // Declarations as a set: the same ones in another region, or in another order, are the same
  // code. What runs at load stays in its order.
  const used = shared.filter((statement) => kept.has(statement));
  const named = used.filter((statement) => declaredName(statement) !== undefined).sort();
  return JSON.stringify([...own, used.filter((statement) => declaredName(statement) === undefined), named]);
}

/** A region's top-level statements, without its comments: each starts on a line that is not indented and does not close a bracket. */
function statementsOf(region: string): string[] {
  const statements: string[] = [];
  let inComment = false;
  for (const line of region.split("\n")) {
    const trimmed = line.trim();
    // A comment says nothing about what runs; /* ... */ is taken out only as whole lines.
    if (inComment || trimmed.startsWith("/*")) {
      inComment = !trimmed.endsWith("*/");
      continue;
    }
    if (!trimmed || trimmed.startsWith("//")) continue;
    if (statements.length === 0 || /^[^\s)\]}]/.test(line)) statements.push(line);
    else statements[statements.length - 1] += `\n${line}`;
  }
  return statements;
}

/** `const MAX_OUTPUT = …` -> "MAX_OUTPUT"; undefined for a statement that declares no single name. */
function declaredName(statement: string): string | undefined {
  return /^(?:export\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:const|let|var|function\*?|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)\b(?!\s*[,}])/.exec(statement)?.[1];
}

function identifiersIn(code: string): Set<string> {
  return new Set(code.match(/[A-Za-z_$][\w$]*/g) ?? []);
}

/** Whether a stage file gives the model a tool called `name` (its schema or defineTool says `name: "…"`). */
export function offersTool(text: string, name: string): boolean {
  return new RegExp(`^\\s*name: "${name}",`, "m").test(text);
}

/**
 * The stage files (in the order given) that offer tool `name`, grouped by implementation: each
 * group's first file stands for the others. The files are read, not imported (loading every
 * stage costs seconds); tests/stages.test.ts keeps this reading equal to each stage's TOOLS.
 * A tool not listed in TOOL_REGIONS gets one group per stage.
 */
export function toolImplementations(name: string, files: string[]): { ids: string[]; file: string }[] {
  return groupStages(name, files, (text, file) => (TOOL_REGIONS[name] ? implementationOf(text, name) : file));
}

/**
 * The same, grouped by `regions` alone (and the shared statements they reach), whatever shape
 * calls the tool: for the tests of what those regions do, such as s04's HTML conversion, which
 * is the same in the dispatch map of s04 and the registry of the capstone. The shapes
 * themselves are tested per toolImplementations.
 */
export function regionImplementations(name: string, regions: string[], files: string[]): { ids: string[]; file: string }[] {
  return groupStages(name, files, (text) => regionsCode(text, regions));
}

function groupStages(name: string, files: string[], keyOf: (text: string, file: string) => string): { ids: string[]; file: string }[] {
  const found = new Map<string, { ids: string[]; file: string }>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    if (!offersTool(text, name)) continue;
    const key = keyOf(text, file);
    const same = found.get(key);
    if (same) same.ids.push(stageIdOf(file));
    else found.set(key, { ids: [stageIdOf(file)], file });
  }
  return [...found.values()];
}
