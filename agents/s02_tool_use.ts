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
 * New since s01: three file tools in the dispatch map, and the workspace sandbox.
 *
 *   npx tsx agents/s02_tool_use.ts            (no key: replays the recorded demo)
 */
import { spawn } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, chmodSync } from "node:fs";
import path from "node:path";
import type { Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { modelClient } from "../lib/model.ts";
import { isMain, runAsMain } from "../lib/program.ts";

// #region config
if (existsSync(".env")) process.loadEnvFile(".env");
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
const MAX_OUTPUT = 30_000; // characters the model sees from one tool call
// The official SDK's client for any Anthropic-compatible API (lib/model.ts loads the SDK at
// the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace is the directory the program runs in. It is read at each call rather than
// stored, so the offline replay and the tests run this same code in a temporary folder; the
// system prompt is written at each request for the same reason.
const workspace = () => process.cwd();
const systemPrompt = () => `You are a coding agent working in ${workspace()}. Use read_file, write_file and edit_file for files and bash for the rest. Act first, then report briefly.`;
// #endregion config

// #region tools
export const TOOLS: Tool[] = [
  {
    name: "bash",
    description:
      "Run a shell command in the workspace and return its output. stdin is closed, so commands must not wait for input.",
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

function runBash(input: Record<string, unknown>): Promise<string> {
  const command = requireString(input, "command");
  const blocked = DENYLIST.find((pattern) => command.includes(pattern));
  if (blocked) throw new Error(`refused: the command contains "${blocked.trim()}", which this agent does not run`);
  const seconds = Math.min(Math.max(Number(input.timeout ?? DEFAULT_TIMEOUT) || DEFAULT_TIMEOUT, 1), MAX_TIMEOUT);

  return new Promise((resolve, reject) => {
    // stdin is /dev/null, so `cat` or `read x` ends at once. `detached` puts the command in
    // its own process group, so a timeout can kill the command and everything it started.
    const child = spawn("bash", ["-c", command], { cwd: workspace(), stdio: ["ignore", "pipe", "pipe"], detached: true });
    const output = new HeadAndTail();
    child.stdout.on("data", (chunk: Buffer) => output.add(chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => output.add(chunk.toString()));
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {} // the group has ended already
    };
    // If the program ends first (Ctrl-C), the command must not live on without it.
    process.once("exit", killGroup);
    const timer = setTimeout(() => {
      killGroup();
      reject(new Error(`timed out after ${seconds}s; the command and its children were killed. Output so far:\n${output.text()}`));
    }, seconds * 1000);
    child.on("error", (error) => {
      clearTimeout(timer);
      process.off("exit", killGroup);
      reject(error);
    });
    // "exit", not "close": a background child (`sleep 30 &`) may hold the pipes open for long
    // after the shell is done. Wait a moment for output still in the pipes, then let go.
    child.on("exit", (code) => {
      clearTimeout(timer);
      process.off("exit", killGroup);
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        child.unref();
        const text = output.text() || "(no output)";
        resolve(code === 0 ? text : `${text.replace(/\n$/, "")}\n[exit code ${code ?? "killed"}]`);
      }, 50);
    });
  });
}

/** Keeps the head and the tail of a stream as it arrives, so endless output cannot fill memory. */
class HeadAndTail {
  private head = "";
  private tail = "";
  private total = 0;
  add(text: string) {
    this.total += text.length;
    const roomInHead = KEEP - this.head.length;
    if (roomInHead > 0) {
      this.head += text.slice(0, roomInHead);
      text = text.slice(roomInHead);
    }
    this.tail = (this.tail + text).slice(-KEEP);
  }
  text(): string {
    const cut = this.total - this.head.length - this.tail.length;
    return cut > 0 ? this.head + marker(cut, this.total) + this.tail : this.head + this.tail;
  }
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
// #endregion sandbox

// #region read-file
const MAX_FILE_BYTES = 10 * 1024 * 1024; // files larger than this are not loaded

function readFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const lines = readText(safePath(given), given).split("\n");
  const limit = input.limit === undefined ? undefined : Number(input.limit);
  if (limit === undefined || !(limit >= 0) || limit >= lines.length) return lines.join("\n");
  return `${lines.slice(0, limit).join("\n")}\n... (${lines.length - limit} more lines)`;
}

/** A file's text, or a clear error: missing, a folder, too large, or binary. */
function readText(file: string, given: string): string {
  if (!existsSync(file)) throw new Error(`${given} does not exist`);
  const stat = statSync(file);
  if (stat.isDirectory()) throw new Error(`${given} is a directory; list it with bash (ls)`);
  if (stat.size > MAX_FILE_BYTES) {
    throw new Error(`${given} is ${(stat.size / 1024 / 1024).toFixed(1)} MB, over the 10 MB limit; look at parts of it with bash (head, grep)`);
  }
  const bytes = readFileSync(file);
  if (bytes.subarray(0, 8192).includes(0)) throw new Error(`${given} looks binary (it contains NUL bytes), so it is not shown as text`);
  return bytes.toString("utf8");
}
// #endregion read-file

// #region write-file
function writeFile(input: Record<string, unknown>): string {
  const given = requireString(input, "path");
  const content = requireString(input, "content");
  const file = safePath(given);
  if (existsSync(file) && statSync(file).isDirectory()) throw new Error(`${given} is a directory`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeAtomically(file, content);
  return `Wrote ${Buffer.byteLength(content)} bytes to ${given}`;
}

/** Write beside the file, then rename over it: a failure half-way leaves the old content whole. */
function writeAtomically(file: string, content: string): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, content);
    if (existsSync(file)) chmodSync(temporary, statSync(file).mode); // a script stays executable
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
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
  writeAtomically(file, content.slice(0, at) + replacement + content.slice(at + find.length));
  const more = content.split(find).length - 2;
  return `Edited ${given}: replaced 1 occurrence${more > 0 ? ` (the first; ${more} more left as they were)` : ""}`;
}
// #endregion edit-file

// #region dispatch
type Handler = (input: Record<string, unknown>) => string | Promise<string>;

export const TOOL_HANDLERS: Record<string, Handler> = {
  bash: runBash,
  read_file: readFile,
  write_file: writeFile,
  edit_file: editFile,
};
// #endregion dispatch

// #region run-tool
/** Run one tool call. Never throws: a failure becomes a result the model can read and act on. */
async function runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> {
  console.log(dim(`> ${call.name} ${oneLine(Object.values(call.input ?? {}))}`));
  const handler = TOOL_HANDLERS[call.name];
  let result: ToolResultBlockParam;
  if (!handler) {
    const known = Object.keys(TOOL_HANDLERS).join(", ");
    result = { type: "tool_result", tool_use_id: call.id, is_error: true, content: `Error: unknown tool "${call.name}". Tools: ${known}.` };
  } else {
    try {
      const output = await handler((call.input ?? {}) as Record<string, unknown>);
      result = { type: "tool_result", tool_use_id: call.id, content: clip(output) };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      result = { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(`Error: ${message}`) };
    }
  }
  console.log(dim(`  ${oneLine([result.content])}`));
  return result;
}

/** The model sees at most MAX_OUTPUT characters of one result: the head and the tail, with a marker. */
function clip(text: string): string {
  if (text.length <= MAX_OUTPUT) return text;
  return text.slice(0, KEEP) + marker(text.length - 2 * KEEP, text.length) + text.slice(-KEEP);
}

// What is kept at each end of a long result; the rest of MAX_OUTPUT is room for the marker.
const KEEP = (MAX_OUTPUT - 100) / 2;
const marker = (cut: number, total: number) => `\n... [${cut} characters cut from the middle, ${total} in all] ...\n`;

function requireString(input: Record<string, unknown>, name: string): string {
  const value = input[name];
  if (typeof value !== "string") throw new Error(`"${name}" must be a string`);
  return value;
}

/** Squeeze values into one short line, so the person can follow what the agent does. */
function oneLine(values: unknown[]): string {
  const text = values
    .map((value) => (typeof value === "string" ? value : JSON.stringify(value)))
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

const dim = (text: string) => (process.stdout.isTTY ? `\x1b[2m${text}\x1b[0m` : text);
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

    const results: ToolResultBlockParam[] = [];
    for (const block of response.content) {
      if (block.type === "tool_use") results.push(await runTool(block));
    }
    messages.push({ role: "user", content: results });
  }
}
// #endregion agent-loop

// #region end-turn
function showText(response: Message): void {
  for (const block of response.content) if (block.type === "text") console.log(block.text);
}

/** The model stopped asking for tools. Say so when the reason is not a normal ending. */
function endTurn(response: Message, messages: MessageParam[]): void {
  if (response.stop_reason === "refusal") console.log("[the model declined to continue]");
  if (response.stop_reason !== "max_tokens") return;
  console.log(`[the reply was cut off at ${MAX_TOKENS} tokens: ask for something smaller, or raise MAX_TOKENS]`);
  // A tool call cut off mid-way cannot run, but it needs an answer, or the next request is refused.
  const calls = response.content.filter((block) => block.type === "tool_use");
  if (calls.length === 0) return;
  messages.push({
    role: "user",
    content: calls.map((call) => ({
      type: "tool_result" as const,
      tool_use_id: call.id,
      is_error: true,
      content: "Not run: your reply was cut off by max_tokens before this call was complete.",
    })),
  });
}
// #endregion end-turn

// #region program
export const main = (args = process.argv.slice(2)) =>
  runAsMain({ stage: "s02", title: "Tools", agentLoop, hasKey: API_KEY !== undefined, args });

if (isMain(import.meta.url)) await main();
// #endregion program
