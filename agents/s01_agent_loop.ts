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
 * Machinery (lib/machinery, a lesson of its own under "Under the hood"): processes.ts runs a
 * command and ends all it started; head-and-tail.ts keeps long output short.
 *
 *   npx tsx agents/s01_agent_loop.ts            (no key: replays the recorded demo)
 */
import type { ContentBlock, Message, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { describeCall, describeResult, dim, visible } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { runCommand } from "../lib/machinery/processes.ts";
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
const systemPrompt = () => `You are a coding agent working in ${workspace()}. Use bash to inspect and change files. Act first, then report briefly.`;
// #endregion config

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

// #region dispatch
type Handler = (input: Record<string, unknown>) => string | Promise<string>;

export const TOOL_HANDLERS: Record<string, Handler> = {
  bash: runBash,
};
// #endregion dispatch

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
  runAsMain({ stage: "s01", title: "The Agent Loop", agentLoop, hasKey: Boolean(API_KEY || AUTH_TOKEN), args });

if (isMain(import.meta.url)) await main();
// #endregion program
