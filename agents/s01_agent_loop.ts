/**
 * s01_agent_loop.ts - The Agent Loop
 *
 * "One loop and one tool are enough for an agent": the model asks, the harness acts.
 *
 *   +--------+      +-------+  tool_use   +-----------+
 *   |  you   | ---> | model | ----------> |   bash    |
 *   | prompt |      |       | <---------- | (runTool) |
 *   +--------+      +---+---+ tool_result +-----------+
 *                       |
 *                       +--> stop_reason is not "tool_use": the turn is over
 *
 * New: everything. The loop below stays the same text in every later stage.
 *
 *   npx tsx agents/s01_agent_loop.ts            (no key: replays the recorded demo)
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
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
const systemPrompt = () => `You are a coding agent working in ${workspace()}. Use bash to inspect and change files. Act first, then report briefly.`;
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

// #region dispatch
type Handler = (input: Record<string, unknown>) => string | Promise<string>;

export const TOOL_HANDLERS: Record<string, Handler> = {
  bash: runBash,
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
  runAsMain({ stage: "s01", title: "The Agent Loop", agentLoop, hasKey: API_KEY !== undefined, args });

if (isMain(import.meta.url)) await main();
// #endregion program
