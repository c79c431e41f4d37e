/**
 * s02_tool_use.ts - Tools
 *
 * "Adding a tool means adding a handler": the loop does not change, the dispatch map grows.
 *
 *   +--------+      +-------+  tool_use   +---------------------------+
 *   |  you   | ---> | model | ----------> | TOOL_HANDLERS[call.name]  |
 *   | prompt |      |       | <---------- |  bash       -> runBash    |
 *   +--------+      +-------+ tool_result |  read_file  -> readFile   |
 *                                         |  write_file -> writeFile  |
 *                                         |  edit_file  -> editFile   |
 *                                         +-------------+-------------+
 *                                                       |
 *                                          safePath(): every path stays in the workspace
 *
 * New since s01: three file tools in the dispatch map, and the workspace sandbox; regions
 * `sandbox` and `dispatch` come first, then the tools.
 * Machinery (lib/machinery): safe-read.ts and atomic-write.ts under the file tools,
 * processes.ts and head-and-tail.ts under bash.
 *
 *   npx tsx agents/s02_tool_use.ts            (no key: replays the recorded demo)
 */
import { lstatSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import type { ContentBlock, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { writeAtomically, type WriteRoot } from "../lib/machinery/atomic-write.ts";
import { describeCall, describeResult, dim, visible } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { runCommand } from "../lib/machinery/processes.ts";
import { readText } from "../lib/machinery/safe-read.ts";
import { optionalInteger, requireString } from "../lib/machinery/validation.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
const MAX_OUTPUT = 30_000; // characters the model sees from one tool call
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the
// SDK at the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace is the directory the program runs in. It is read at each call rather than
// stored, so the offline replay and the tests run this same code in a temporary folder; the
// system prompt is written at each request for the same reason.
const workspace = () => process.cwd();
const systemPrompt = () => `You are a coding agent working in ${workspace()}. Use read_file, write_file and edit_file for files and bash for the rest. Act first, then report briefly.`;
// #endregion config

// #region sandbox
/**
 * Resolve a path the model gave to a place inside the workspace, or refuse it before any
 * file is touched. `..` and absolute paths that lead out are refused, and so are symlinks
 * whose target is outside. `~` is only a folder name here: nothing expands it to home.
 */
function safePath(given: string): string {
  if (given.includes("\0")) throw new Error("the path contains a NUL byte");
  const root = realpathSync(workspace());
  const full = path.resolve(root, given);
  if (!isInside(root, full)) throw new Error(`${given} is outside the workspace (${root})`);
  // The path as the file system will follow it: a link inside may point anywhere.
  const real = followLinks(full, given);
  if (!isInside(root, real)) throw new Error(`${given} leads outside the workspace through a symlink`);
  return real;
}

function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  // `..report.md` is a fine name; only a `..` segment leaves the folder.
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** Resolve symlinks on the part of the path that exists; a new file takes its parent's real place. */
function followLinks(full: string, given: string): string {
  let existing = full;
  const missing: string[] = [];
  while (!lexists(existing)) {
    missing.unshift(path.basename(existing));
    existing = path.dirname(existing);
  }
  try {
    return path.join(realpathSync(existing), ...missing);
  } catch {
    throw new Error(`${given} goes through a symlink that points nowhere`);
  }
}

function lexists(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

/** Where a file tool may write: the workspace, by the sandbox's own rule for "inside". */
const inWorkspace = (): WriteRoot => ({ root: realpathSync(workspace()), isInside });
// #endregion sandbox

// #region dispatch
type Handler = (input: Record<string, unknown>) => string | Promise<string>;

export const TOOL_HANDLERS: Record<string, Handler> = {
  bash: runBash,
  read_file: readFile,
  write_file: writeFile,
  edit_file: editFile,
};
// #endregion dispatch

// #region tools
export const TOOLS: Tool[] = [
  {
    name: "bash",
    description: "Run a shell command in the workspace and return its output. stdin is closed, so commands must not wait for input.",
    input_schema: {
      type: "object",
      properties: {
        command: { type: "string", description: "The command, run with bash -c." },
        timeout: { type: "integer", description: "Seconds before the command is killed (default 120, at most 600)." },
      },
      required: ["command"],
    },
  },
  {
    name: "read_file",
    description: "Read a text file in the workspace.",
    input_schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        limit: { type: "integer", description: "Read at most this many lines." },
      },
      required: ["path"],
    },
  },
  {
    name: "write_file",
    description: "Create or overwrite a file in the workspace with the given content. Missing folders are created.",
    input_schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        content: { type: "string", description: "The whole new content of the file." },
      },
      required: ["path", "content"],
    },
  },
  {
    name: "edit_file",
    description: "Replace the first occurrence of old_text with new_text in a file. old_text must match exactly.",
    input_schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        old_text: { type: "string", description: "The exact text to find, as it is in the file." },
        new_text: { type: "string", description: "The text to put in its place." },
      },
      required: ["path", "old_text", "new_text"],
    },
  },
];
// #endregion tools

// #region bash
// A denylist is advice, not a boundary: `rm -r -f /` or a script file slips past it.
// The real answer is asking a person before running a command (s05, s06).
const DENYLIST = ["rm -rf /", "sudo ", "shutdown", "reboot", "> /dev/sd", "mkfs"];
const DEFAULT_TIMEOUT = 120;
const MAX_TIMEOUT = 600;

async function runBash(input: Record<string, unknown>): Promise<string> {
  const command = requireString(input, "command");
  const seconds = optionalInteger(input, "timeout", { min: 1, max: MAX_TIMEOUT }) ?? DEFAULT_TIMEOUT;
  const blocked = DENYLIST.find((pattern) => command.includes(pattern));
  if (blocked) throw new Error(`refused: the command contains "${blocked.trim()}", which this agent does not run`);
  // stdin is closed, the command and all it starts end at the time limit, and endless output
  // keeps only its two ends (lib/machinery/processes.ts, head-and-tail.ts).
  const output = new HeadAndTail(MAX_OUTPUT);
  const code = await runCommand(command, { cwd: workspace(), timeoutMs: seconds * 1000, output });
  const text = output.text() || "(no output)";
  return code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`;
}
// #endregion bash

// #region read-file
function readFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const limit = optionalInteger(input, "limit", { min: 1 });
  // A FIFO, a device, a folder, a binary or a file over 10 MB is refused with a clear
  // error; what is read is what was checked (lib/machinery/safe-read.ts).
  const lines = readText(safePath(given), given).split("\n");
  if (limit === undefined || limit >= lines.length) return lines.join("\n");
  return `${lines.slice(0, limit).join("\n")}\n... (${lines.length - limit} more lines)`;
}
// #endregion read-file

// #region write-file
function writeFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const content = requireString(input, "content");
  // A temporary file renamed over the old one, so a failure half-way loses nothing; each
  // folder on the way is checked as it is entered (lib/machinery/atomic-write.ts).
  writeAtomically(safePath(given), content, given, inWorkspace(), { createFolders: true });
  return `Wrote ${Buffer.byteLength(content)} bytes to ${given}`;
}
// #endregion write-file

// #region edit-file
function editFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const oldText = requireString(input, "old_text");
  const newText = requireString(input, "new_text");
  if (oldText === "") throw new Error("old_text is empty; to write a whole file use write_file");
  const file = safePath(given);
  const content = readText(file, given);
  if (Buffer.byteLength(content) !== statSync(file).size) {
    throw new Error(`${given} is not valid UTF-8, so editing it could change other bytes; nothing was changed`);
  }
  // A CRLF file stays CRLF: the model usually writes \n, so match the file's line endings.
  const crlf = content.includes("\r\n");
  const find = crlf ? oldText.replace(/\r?\n/g, "\r\n") : oldText;
  const replacement = crlf ? newText.replace(/\r?\n/g, "\r\n") : newText;
  const at = content.indexOf(find);
  if (at === -1) throw new Error(`old_text was not found in ${given}; read the file and copy the text exactly. The file is unchanged`);
  // Slices, not String.replace: a "$&" or "$1" in new_text is inserted as typed.
  writeAtomically(file, content.slice(0, at) + replacement + content.slice(at + find.length), given, inWorkspace());
  const more = content.split(find).length - 2;
  return `Edited ${given}: replaced 1 occurrence${more > 0 ? ` (the first; ${more} more left as they were)` : ""}`;
}
// #endregion edit-file

// #region run-tool
/**
 * Run the tool calls of one reply, one after another, and return their results in the same
 * order, each with its call's id: the API needs an answer to every call it was sent.
 */
async function runTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const results: ToolResultBlockParam[] = [];
  for (const block of content) {
    if (block.type === "tool_use") results.push(await runTool(block));
  }
  return results;
}

/** Run one tool call. Never throws: a failure becomes a result the model can read and act on. */
async function runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> {
  console.log(dim(`> ${describeCall(call)}`));
  const handler = TOOL_HANDLERS[call.name];
  let result: ToolResultBlockParam;
  if (!handler) {
    const known = Object.keys(TOOL_HANDLERS).join(", ");
    result = { type: "tool_result", tool_use_id: call.id, is_error: true, content: `Error: unknown tool "${call.name}". Tools: ${known}.` };
  } else {
    try {
      const output = await handler((call.input ?? {}) as Record<string, unknown>);
      result = { type: "tool_result", tool_use_id: call.id, content: clip(output, MAX_OUTPUT) };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      result = { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(`Error: ${message}`, MAX_OUTPUT) };
    }
  }
  console.log(dim(describeResult(result)));
  return result;
}
// #endregion run-tool

// #region agent-loop
export async function agentLoop(messages: MessageParam[]): Promise<void> {
  while (true) {
    const response = await client.messages.create({
      model: MODEL,
      max_tokens: MAX_TOKENS,
      system: systemPrompt(),
      tools: TOOLS,
      messages,
    });
    messages.push({ role: "assistant", content: response.content });
    showText(response);
    if (response.stop_reason !== "tool_use") return endTurn(response, messages);

    const results = await runTools(response.content);
    messages.push({ role: "user", content: results });
  }
}
// #endregion agent-loop

// #region end-turn
function showText(response: Message): void {
  for (const block of response.content) if (block.type === "text") console.log(visible(block.text)); // model text: escapes shown, never obeyed
}

/** The model stopped asking for tools. Say so when the reason is not a normal ending. */
function endTurn(response: Message, messages: MessageParam[]): void | Promise<void> {
  // A server tool (web search, code execution) still at work: the turn goes on when it is sent back as it is.
  if (response.stop_reason === "pause_turn") return agentLoop(messages);
  if (response.stop_reason === "refusal") console.log("[the model declined to continue]");
  const cutOff = { max_tokens: `at ${MAX_TOKENS} tokens: ask for something smaller, or raise MAX_TOKENS`, model_context_window_exceeded: "because the context window is full: start a new session" };
  if (response.stop_reason !== "max_tokens" && response.stop_reason !== "model_context_window_exceeded") return;
  console.log(`[the reply was cut off ${cutOff[response.stop_reason]}]`);
  // A tool call cut off mid-way cannot run, but it needs an answer, or the next request is refused.
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) return;
  messages.push({
    role: "user",
    content: calls.map((call) => ({
      type: "tool_result" as const,
      tool_use_id: call.id,
      is_error: true,
      content: `Not run: your reply was cut off (${response.stop_reason}) before this call was complete.`,
    })),
  });
}
// #endregion end-turn

// #region program
export const main = (args = process.argv.slice(2)) =>
  runAsMain({ stage: "s02", title: "Tools", agentLoop, hasKey: Boolean(API_KEY || AUTH_TOKEN), args });

if (isMain(import.meta.url)) await main();
// #endregion program
