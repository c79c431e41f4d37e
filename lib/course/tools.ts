// A stage's tools seen from outside its loop (the tests, the exercises' checks, the bench).
// Calling one works the same way whatever the stage's shape: through the dispatch map of s01
// to s05 (a handler that throws on failure) or through the registry from s06 (the tool's own
// validation, then execute; llmContent is what the model receives). The registry's
// confirmation step is not part of a tool's behaviour, so it is not asked here; s06's own
// tests cover it. And which stages run the same code for a tool, so it is tested and
// measured once per implementation rather than once per stage.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
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
 * The regions a Part I tool's behaviour is written in (its handler and the helpers it calls),
 * besides the shared ones below; the machinery they call is lib/machinery, the same for all.
 * A carried region stays byte-identical from stage to stage unless the later stage's page
 * names the change (tests/docs.test.ts), so stages whose regions here are the same run the
 * same code for this tool.
 */
const TOOL_REGIONS: Record<string, string[]> = {
  bash: ["bash"],
  read_file: ["sandbox", "read-file"],
  write_file: ["sandbox", "write-file"],
  edit_file: ["sandbox", "edit-file"],
  grep: ["sandbox", "grep"],
  glob: ["sandbox", "glob"],
  ls: ["sandbox", "glob", "ls"],
  web_fetch: ["web-fetch", "web-address"],
  ask_user: ["ask-user"],
};
/** What every Part I tool may go through: the limits in config, and runTool. */
const SHARED_REGIONS = ["config", "run-tool"];

/**
 * What decides how a Part I stage runs tool `name`: the tool's own regions, and of the shared
 * regions the statements those reach. A later stage adds to the shared regions for its own
 * mechanism; a tool that never names what was added runs the same code, so it is tested once
 * for both stages. Anything in doubt is kept: a statement that declares no name (it runs at
 * load), and any name that appears in the code, even in a string.
 */
function implementationOf(text: string, name: string): string {
  return regionsCode(text, TOOL_REGIONS[name] ?? [], "TOOL_HANDLERS");
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

/** Whether a Part I stage file gives the model a tool called `name` (its schema says `name: "…"`). */
export function offersTool(text: string, name: string): boolean {
  return new RegExp(`^\\s*name: "${name}",`, "m").test(text);
}

/** A dispatch-map stage (s01 to s05): its tools are functions of its own file. */
const isDispatchMap = (text: string) => /^export const TOOL_HANDLERS\b/m.test(text);

/**
 * The stage files (in the order given) that offer tool `name`, grouped by implementation: each
 * group's first file stands for the others.
 * - Part I (a dispatch map): every handler is a function of its own file, so the files are
 *   compared by the text of the tool's regions (read, not imported: it costs nothing).
 * - From s06 (a registry): a stage that imports s06's tool registers the same object, so it
 *   runs the same code; the stage is imported and the tool objects are compared.
 */
export async function toolImplementations(name: string, files: string[]): Promise<{ ids: string[]; file: string }[]> {
  const found = new Map<unknown, { ids: string[]; file: string }>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    let key: unknown;
    if (isDispatchMap(text)) {
      if (!offersTool(text, name)) continue;
      key = `dispatch map ${implementationOf(text, name)}`;
    } else {
      const stage = (await import(pathToFileURL(file).href)) as ToolStage;
      key = stage.registry?.getTool(name);
      if (!key) continue;
    }
    const same = found.get(key);
    if (same) same.ids.push(stageIdOf(file));
    else found.set(key, { ids: [stageIdOf(file)], file });
  }
  return [...found.values()];
}
