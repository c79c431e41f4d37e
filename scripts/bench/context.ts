// What the model must send and receive. Edit versus write: the bytes of the tool call that
// changes one line of a 1,000-line file, as an edit_file call and as a write_file call.
// Context per demo: the bytes of every request a stage's recorded demo sends to the model,
// replayed in this process through the stage's real loop and tools (lib/course/session.ts), so a
// later stage that evicts or compacts shows what it saves on the same kind of work.
// Cache per demo: what a prompt cache would serve of those same requests, by the API's rule
// (lib/course/cache.ts), with s14's breakpoints placed where a stage places none.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { MessageCreateParams, Tool } from "@anthropic-ai/sdk/resources/messages";
import { cacheShare, hasBreakpoints, type CacheShare, type Price } from "../../lib/course/cache.ts";
import { loadScenario } from "../../lib/course/scenario.ts";
import { replayScenario, type ReplayableStage } from "../../lib/course/session.ts";
import { toolCall, type ToolCall, type ToolStage } from "../../lib/course/tools.ts";

export interface StageModule extends ReplayableStage, ToolStage {
  TOOLS: Tool[];
}

export type { ToolCall };

/** A stage's tool as the model calls it (lib/course/tools.ts); undefined: the stage has no such tool. */
export function toolOf(stage: StageModule, name: string): ToolCall | undefined {
  // Only what the model is offered: a tool the stage holds but does not show is not measured.
  if (!stage.TOOLS.some((tool) => tool.name === name)) return undefined;
  return toolCall(stage as ToolStage, name);
}

/** The parameter names of a stage's tool, from the schema the model sees. */
export const parametersOf = (stage: StageModule, name: string) =>
  Object.keys((stage.TOOLS.find((tool) => tool.name === name)?.input_schema.properties ?? {}) as object);

export interface EditVersusWrite {
  editBytes: number;
  writeBytes: number;
  /** Both calls were run, and each left the file as intended. */
  checked: boolean;
}

/** A file of 1,000 lines like source code, and the same file with line 500 changed. */
export function thousandLines(): { before: string; after: string; oldLine: string; newLine: string } {
  const lines = Array.from({ length: 1000 }, (_, i) => `  const value${i + 1} = compute(${i + 1}, options.scale); // step ${i + 1}`);
  const oldLine = lines[499];
  const newLine = oldLine.replace("options.scale", "options.scale * 2");
  const before = `${lines.join("\n")}\n`;
  return { before, after: before.replace(oldLine, newLine), oldLine, newLine };
}

/** The edit_file and write_file calls for the change, measured as the JSON the model sends, and run. */
export async function editVersusWrite(stage: StageModule): Promise<EditVersusWrite | undefined> {
  const [editTool, writeTool] = [toolOf(stage, "edit_file"), toolOf(stage, "write_file")];
  if (!editTool || !writeTool) return undefined;
  // s02 names them old_text and new_text; s03 on, old_string and new_string.
  const [oldName, newName] = parametersOf(stage, "edit_file").includes("old_string") ? ["old_string", "new_string"] : ["old_text", "new_text"];
  const { before, after, oldLine, newLine } = thousandLines();
  const edit = { path: "src/steps.ts", [oldName]: oldLine, [newName]: newLine };
  const write = { path: "src/steps.ts", content: after };

  const home = process.cwd();
  const dir = mkdtempSync(path.join(os.tmpdir(), "workbook-bench-edit-"));
  let checked = true;
  try {
    process.chdir(dir);
    mkdirSync("src");
    for (const [call, input] of [[editTool, edit], [writeTool, write]] as const) {
      writeFileSync(edit.path, before);
      await call(input);
      checked &&= readFileSync(edit.path, "utf8") === after;
    }
  } finally {
    process.chdir(home);
    rmSync(dir, { recursive: true, force: true });
  }
  return { editBytes: Buffer.byteLength(JSON.stringify(edit)), writeBytes: Buffer.byteLength(JSON.stringify(write)), checked };
}

export interface DemoContext {
  /** The bytes of each request body, in order. */
  requests: number[];
  total: number;
  /** Whether the replay matched the recording (if not, the figures are not the demo's). */
  matched: boolean;
}

/** Replay a stage's demo in-process and measure each request the model received (`sent`: the requests themselves). */
export async function demoContext(stageId: string, stage: StageModule): Promise<DemoContext & { sent: MessageCreateParams[] }> {
  const scenario = loadScenario(stageId);
  const workspace = mkdtempSync(path.join(os.tmpdir(), `workbook-bench-${stageId}-`));
  // The tools print what they do; the bench's screen is for its own table.
  const log = console.log;
  console.log = () => {};
  try {
    const session = await replayScenario(stage, scenario, { workspace });
    const requests = session.requests.map((request) => Buffer.byteLength(JSON.stringify(request)));
    return { requests, total: requests.reduce((sum, bytes) => sum + bytes, 0), matched: session.problems.length === 0 && session.turnErrors.length === 0, sent: session.requests };
  } finally {
    console.log = log;
    rmSync(workspace, { recursive: true, force: true });
  }
}

export interface DemoCache extends CacheShare {
  /** Whose breakpoints: the stage's own (its requests carry some), or s14's placement applied to its requests. */
  breakpoints: "own" | "s14";
}

/**
 * What a prompt cache would serve of a demo's requests. A stage that places breakpoints is
 * measured as it sends them; for one that places none, `place` (s14's withBreakpoints) puts
 * them on a copy of each request: what the stage would save if it cached as s14 does.
 */
export function demoCache(sent: MessageCreateParams[], place: (request: MessageCreateParams) => MessageCreateParams, price: Price | undefined): DemoCache {
  const own = sent.some(hasBreakpoints);
  return { breakpoints: own ? "own" : "s14", ...cacheShare(sent, { place: own ? undefined : place, price }) };
}
