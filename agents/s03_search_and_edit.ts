/**
 * s03_search_and_edit.ts - Search and Edit
 *
 * "Find it first, then change only that": look before you touch, and touch one exact place.
 *
 *   +-------+   ls / glob / grep    +----------------------------------------+
 *   | model | --------------------> | entries, paths, path:line: text        |
 *   |       | <-------------------- | never .git, node_modules, .gitignore'd |
 *   |       |                       | or binary files; grep has a deadline   |
 *   |       |   edit_file           +----------------------------------------+
 *   |       | --------------------> | old_string found ...                   |
 *   |       |                       |   0 times  -> error + a hint           |
 *   |       | <-------------------- |   2+ times -> error + the count        |
 *   +-------+                       |   once, or replace_all -> written      |
 *                                   +----------------------------------------+
 *
 * New since s02: grep, glob and ls to find things, and edit_file that demands a unique match
 * (regions `edit-file`, `grep`, `glob`, `ls`, first after the config).
 * Machinery (lib/machinery): walk.ts finds the files (ignore rules, brace limits, no links
 * followed); search.ts searches them in worker threads with a time limit.
 *
 *   npx tsx agents/s03_search_and_edit.ts            (no key: replays the recorded demo)
 */
import { existsSync, lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import type { ContentBlock, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { writeAtomically, type WriteRoot } from "../lib/machinery/atomic-write.ts";
import { describeCall, describeResult, dim, visible } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { runCommand } from "../lib/machinery/processes.ts";
import { readText } from "../lib/machinery/safe-read.ts";
import { grepReport, searchFiles } from "../lib/machinery/search.ts";
import { optionalInteger, optionalString, requireString } from "../lib/machinery/validation.ts";
import { byName, findFiles, unreadableNote } from "../lib/machinery/walk.ts";
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
const systemPrompt = () => `You are a coding agent working in ${workspace()}. Find before you change: ls, glob and grep to locate code, read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly.`;
// #endregion config

// #region edit-file
function editFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const oldString = requireString(input, "old_string");
  const newString = requireString(input, "new_string");
  const replaceAll = input.replace_all ?? false;
  if (typeof replaceAll !== "boolean") throw new Error('"replace_all" must be true or false');
  if (oldString === "") throw new Error("old_string is empty; to write a whole file use write_file");
  if (oldString === newString) throw new Error("old_string and new_string are the same, so there is nothing to change");
  const file = safePath(given);
  const content = readText(file, given);
  if (Buffer.byteLength(content) !== statSync(file).size) {
    throw new Error(`${given} is not valid UTF-8, so editing it could change other bytes; nothing was changed`);
  }
  // A CRLF file stays CRLF: the model usually writes \n, so match the file's line endings.
  const crlf = content.includes("\r\n");
  const find = crlf ? oldString.replace(/\r?\n/g, "\r\n") : oldString;
  const replacement = crlf ? newString.replace(/\r?\n/g, "\r\n") : newString;
  // split() takes old_string as plain text, not a pattern, and cuts at every occurrence.
  const pieces = content.split(find);
  const count = pieces.length - 1;
  if (count === 0) throw new Error(`old_string was not found in ${given}: ${noMatchHint(content, find, crlf)}. The file is unchanged`);
  // Two matches mean the model does not know which one it will change: ask, do not guess.
  if (count > 1 && !replaceAll) {
    throw new Error(
      `old_string occurs ${count} times in ${given}. Include more of the surrounding lines so it matches exactly once, ` +
        `or set replace_all to true to change all ${count}. The file is unchanged`,
    );
  }
  // join(), not String.replace: a "$&" or "$1" in new_string is inserted as typed.
  writeAtomically(file, pieces.join(replacement), given, inWorkspace());
  return `Edited ${given}: replaced ${count} occurrence${count === 1 ? "" : "s"}`;
}

/** The usual reasons an exact match fails, so the model's next try can succeed. */
function noMatchHint(content: string, find: string, crlf: boolean): string {
  const withoutLastBreak = find.replace(/\r?\n$/, "");
  if (withoutLastBreak !== find && content.endsWith(withoutLastBreak)) {
    return "the file has no newline at its end, so drop the last line break from old_string";
  }
  const squeeze = (text: string) => text.replace(/[ \t]+/g, " ");
  if (squeeze(content).includes(squeeze(find))) return "it matches when spaces and tabs are ignored, so copy the indentation and spacing exactly";
  return `read the file and copy the text exactly: whitespace, indentation and line endings (this file uses ${crlf ? "CRLF" : "LF"})`;
}
// #endregion edit-file

// #region grep
const OUTPUT_MODES = ["files_with_matches", "content", "count"];

async function grep(input: Record<string, unknown>): Promise<string> {
  const pattern = requireString(input, "pattern");
  // Check the pattern here, before anything runs, so a typo gets a precise answer.
  try {
    new RegExp(pattern);
  } catch (error) {
    throw new Error(`${(error as Error).message}. No search was run; escape ( ) [ ] { } . * + ? | \\ with \\ to match them as text`);
  }
  const mode = optionalString(input, "output_mode", "files_with_matches");
  if (!OUTPUT_MODES.includes(mode)) throw new Error(`output_mode must be one of ${OUTPUT_MODES.join(", ")}`);
  const maxResults = optionalInteger(input, "max_results", { min: 1 }) ?? 100;
  const given = optionalString(input, "path", ".");
  // The walk skips .git, node_modules and what .gitignore lists, and follows no link; the
  // files are searched in worker threads that end at the time limit (lib/machinery/search.ts).
  const search = await searchFiles(realpathSync(workspace()), safePath(given), given, optionalString(input, "include", "**/*"), pattern, { mode, maxResults });
  const unreadable = unreadableNote("folder", search.unreadable);
  if (search.files.length === 0) {
    return [`No files to search in ${given} (binary files, .git, node_modules and what .gitignore lists are skipped)`, ...unreadable].join("\n");
  }
  return [grepReport(search.files, search, mode, maxResults, `/${pattern}/ in ${given}`), ...unreadable].join("\n");
}
// #endregion grep

// #region glob
const MAX_PATHS = 100; // paths glob and ls show

/** At most `max` lines, and how many of `total` were left out. */
function capped(lines: string[], max: number, total = lines.length): string {
  const more = total - max;
  return lines.slice(0, max).join("\n") + (more > 0 ? `\n… and ${more} more` : "");
}

function glob(input: Record<string, unknown>): string {
  const pattern = requireString(input, "pattern");
  const given = optionalString(input, "path", ".");
  const { files, unreadable } = findFiles(realpathSync(workspace()), pattern, safeFolder(given));
  // Newest first: the files being worked on are usually the ones wanted. Ties go by path.
  // Only the files that matched are stat'ed; one removed since the walk is left out. A plain
  // loop with one small object per file: a tree of 20,000 files makes every copy count.
  const dated: { shown: string; mtime: number }[] = [];
  for (const file of files) {
    const stat = statSync(file.full, { throwIfNoEntry: false });
    if (stat) dated.push({ shown: file.shown, mtime: stat.mtimeMs });
  }
  // Only the newest MAX_PATHS are shown, so only the files as new as the hundredth newest are
  // put in order; the older ones are only counted. A large tree costs a sort of numbers.
  const times = Float64Array.from(dated, (file) => file.mtime).sort(); // oldest first
  const cutoff = times[Math.max(0, times.length - MAX_PATHS)]; // the hundredth newest
  const newest = dated.filter((file) => file.mtime >= cutoff).sort((a, b) => b.mtime - a.mtime || byName(a.shown, b.shown));
  const listing = dated.length > 0 ? capped(newest.map((file) => file.shown), MAX_PATHS, dated.length) : `No files match ${pattern} in ${given}`;
  return [listing, ...unreadableNote("folder", unreadable)].join("\n");
}

/** A folder the model named, inside the workspace, or a clear error. */
function safeFolder(given: string): string {
  const folder = safePath(given);
  if (!existsSync(folder)) throw new Error(`${given} does not exist`);
  if (!statSync(folder).isDirectory()) throw new Error(`${given} is a file, not a folder`);
  return folder;
}
// #endregion glob

// #region ls
function ls(input: Record<string, unknown>): string {
  const given = optionalString(input, "path", ".");
  const entries = readdirSync(safeFolder(given), { withFileTypes: true }).sort((a, b) => byName(a.name, b.name));
  if (entries.length === 0) return `${given} is empty`;
  // A symlink is listed by its own name and not followed: it may point outside the workspace.
  return capped(entries.map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name)), MAX_PATHS);
}
// #endregion ls

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
    description: "Replace old_string with new_string in a file. old_string must match exactly, indentation included, and occur once: if it occurs more often, include more surrounding lines, or set replace_all.",
    input_schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        old_string: { type: "string", description: "The exact text to replace, as it is in the file." },
        new_string: { type: "string", description: "The text to put in its place (must differ from old_string)." },
        replace_all: { type: "boolean", description: "Replace every occurrence instead of requiring one (default false)." },
      },
      required: ["path", "old_string", "new_string"],
    },
  },
  {
    name: "grep",
    description: "Search file contents, line by line, with a JavaScript regular expression. Skips binary files, .git, node_modules and what .gitignore lists.",
    input_schema: {
      type: "object",
      properties: {
        pattern: { type: "string", description: 'A JavaScript regular expression, e.g. "function\\s+load" or "TODO|FIXME".' },
        path: { type: "string", description: "Folder or file to search, relative to the workspace (default: the whole workspace)." },
        include: { type: "string", description: 'Only files matching this glob, e.g. "*.ts" or "src/**/*.{ts,tsx}".' },
        output_mode: {
          type: "string",
          enum: ["files_with_matches", "content", "count"],
          description: "files_with_matches (default): paths; content: path:line: text; count: matches per file.",
        },
        max_results: { type: "integer", description: "At most this many paths or lines (default 100)." },
      },
      required: ["pattern"],
    },
  },
  {
    name: "glob",
    description: 'Find files by name with a glob pattern, e.g. "**/*.ts" or "src/**/*.{js,json}". Newest first, at most 100; ignores as grep.',
    input_schema: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "The glob pattern, relative to path." },
        path: { type: "string", description: "Folder to search from, relative to the workspace (default: the workspace)." },
      },
      required: ["pattern"],
    },
  },
  {
    name: "ls",
    description: "List a folder: names sorted, folders marked with a trailing /.",
    input_schema: { type: "object", properties: { path: { type: "string", description: "Folder relative to the workspace (default: the workspace)." } } },
  },
];
// #endregion tools

// #region dispatch
type Handler = (input: Record<string, unknown>) => string | Promise<string>;

export const TOOL_HANDLERS: Record<string, Handler> = {
  bash: runBash,
  read_file: readFile,
  write_file: writeFile,
  edit_file: editFile,
  grep,
  glob,
  ls,
};
// #endregion dispatch

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
  runAsMain({ stage: "s03", title: "Search and Edit", agentLoop, hasKey: Boolean(API_KEY || AUTH_TOKEN), args });

if (isMain(import.meta.url)) await main();
// #endregion program
