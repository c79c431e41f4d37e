/**
 * s08_tool_discovery.ts - Tool Discovery
 *
 * "Tools can come from outside the program": a command or a server says what it offers.
 *
 *   .agent/settings.json in the workspace (a mistake is named; the built-in tools stay)
 *      |
 *      v  discoverTools(), before the first prompt: all at once, each within a time limit
 *   +-----------------------------------+   +--------------------------------------+
 *   | tools.toolDiscoveryCommand        |   | mcpServers.docs = { command, args,   |
 *   |   prints [{ name, description,    |   |   env, cwd, timeout, trust }         |
 *   |   parameters }, ...]              |   |   a process: initialize, tools/list  |
 *   +-----------------+-----------------+   +------------------+-------------------+
 *                     | bump_version                           | docs__read_page
 *                     v                                        v
 *   registry: bash, read_file, write_file, edit_file + what was found  ==> TOOLS
 *      |
 *      v  a call goes through s06's nine steps; it asks first unless the server is trusted
 *   toolCallCommand bump_version  <- arguments as JSON on stdin;  stdout is the result
 *   tools/call read_page          <- over the server's stdin;     text, image, resource
 *
 * New since s06: tools from outside the program join the registry, named server__tool for
 * MCP; regions `settings`, `command-tools`, `mcp`, `discovery`, first after the config, and
 * `run-tool` (a result may hold an image). s06's tools and approval step are imported from
 * agents/s06_tool_registry.ts. Machinery (lib/machinery): processes.ts runs the commands and
 * ends what they started; validation.ts checks schemas written by others.
 *
 *   npx tsx agents/s08_tool_discovery.ts                (no key: replays the recorded demo)
 *   npx tsx agents/s08_tool_discovery.ts --list-tools   (the tools this folder's settings bring)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type {
  ContentBlock, ImageBlockParam, Message, MessageParam, TextBlockParam, Tool, ToolResultBlockParam,
  ToolUseBlock,
} from "@anthropic-ai/sdk/resources/messages";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { ErrorObject } from "ajv";
import { dim, firstLines, indent } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { endProcesses, newProcessMark, runCommand } from "../lib/machinery/processes.ts";
import { MAX_FILE_BYTES } from "../lib/machinery/safe-read.ts";
import { jsonSchemaValidator, outsideSchemaCheck } from "../lib/machinery/validation.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { cancellable } from "../lib/runtime/terminal.ts";
import {
  APPROVAL_HELP, approve, CORE_TOOLS, DEFAULT_TIMEOUT, MAX_OUTPUT, modeProblem, ToolRegistry, workspace,
  type AgentTool, type Params,
} from "./s06_tool_registry.ts";

// #region config
loadWorkbookEnv(); // the workbook's own .env, never the workspace's: a project must not choose where your key goes
const API_KEY = process.env.ANTHROPIC_API_KEY || undefined;
const AUTH_TOKEN = process.env.ANTHROPIC_AUTH_TOKEN || undefined; // a bearer token, for providers that ask for one
const MODEL = process.env.MODEL_ID || "claude-sonnet-5-5";
const MAX_TOKENS = 8000;
// The official SDK's client for any Anthropic-compatible API (lib/runtime/model.ts loads the
// SDK at the first request, so the program starts at once). With no key the program replays a
// recorded demo, and the placeholder key it then uses is never sent anywhere.
const client = modelClient({ apiKey: API_KEY, authToken: AUTH_TOKEN, baseURL: process.env.ANTHROPIC_BASE_URL || undefined });
// The workspace (s06's: the directory the program runs in) is read at each call; so is the system prompt.
const systemPrompt = () =>
  `You are a coding agent working in ${workspace()}. read_file to look, edit_file to change one exact place, write_file for new files, bash for the rest. Act first, then report briefly. ` +
  `The person may decline a call and say why: then do what they asked instead. In plan mode you may only read: describe the changes you would make.`;
// The approval mode is s06's: `--approval-mode <mode>` or APPROVAL_MODE, read once at start.
// #endregion config

// #region settings
// What .agent/settings.json in the workspace may say: the seed's keys and nothing else, as a
// JSON Schema checked before anything starts, so a typo (`mcpServer`) is named rather than
// quietly doing nothing.
const SETTINGS_FILE = ".agent/settings.json";

/** One entry of mcpServers: `timeout` in milliseconds (to start, and for each call); `trust`: its tools run without asking. */
type ServerSettings = { command: string; args?: string[]; env?: Record<string, string>; cwd?: string; timeout?: number; trust?: boolean };
type Settings = { tools?: { toolDiscoveryCommand?: string; toolCallCommand?: string }; mcpServers?: Record<string, ServerSettings> };

const SETTINGS_SCHEMA = {
  type: "object",
  properties: {
    tools: {
      type: "object",
      properties: { toolDiscoveryCommand: { type: "string", minLength: 1 }, toolCallCommand: { type: "string", minLength: 1 } },
      dependencies: { toolDiscoveryCommand: ["toolCallCommand"] }, // a tool found must have a way to run
      additionalProperties: false,
    },
    mcpServers: {
      type: "object",
      additionalProperties: {
        type: "object",
        properties: {
          command: { type: "string", minLength: 1 }, args: { type: "array", items: { type: "string" } },
          env: { type: "object", additionalProperties: { type: "string" } }, cwd: { type: "string" },
          timeout: { type: "integer", minimum: 1 }, trust: { type: "boolean" },
        },
        required: ["command"],
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};

/** The settings of the workspace `root`. With a mistake in them, none: one line names the file, the place and the problem. */
function readSettings(root: string): { settings: Settings; problem?: string } {
  const file = path.join(root, SETTINGS_FILE);
  if (!existsSync(file)) return { settings: {} };
  let data: unknown;
  let text = "";
  try {
    text = readFileSync(file, "utf8");
    data = JSON.parse(text);
  } catch (error) {
    return { settings: {}, problem: `${SETTINGS_FILE} is not valid JSON: ${jsonError(text, error as Error)}` };
  }
  const checkSettings = jsonSchemaValidator().compile(SETTINGS_SCHEMA); // ajv compiles a schema once, then keeps it
  if (!checkSettings(data)) return { settings: {}, problem: `${SETTINGS_FILE}: ${placedErrors(checkSettings.errors ?? [], "the settings")}` };
  return { settings: data as Settings };
}

/** Where JSON.parse stopped, as a line and a column a person can find. */
function jsonError(text: string, error: Error): string {
  const position = Number(/at position (\d+)/.exec(error.message)?.[1]);
  const reason = error.message.replace(/ in JSON at position \d+.*$/, "");
  if (!Number.isInteger(position)) return reason;
  const before = text.slice(0, position).split("\n");
  return `line ${before.length}, column ${before.at(-1)!.length + 1}: ${reason}`;
}

/** ajv's findings, each with its place: `mcpServers.docs.args must be an array`. */
function placedErrors(errors: ErrorObject[], whole: string): string {
  return errors
    .map((error) => {
      const place = error.instancePath.slice(1).replaceAll("/", ".");
      const { params } = error;
      if (error.keyword === "additionalProperties") return `${place ? `${place}: ` : ""}unknown setting "${params.additionalProperty}"`;
      if (error.keyword === "required") return `${place ? `${place}: ` : ""}"${params.missingProperty}" is missing`;
      if (error.keyword === "type") return `${place || whole} must be ${/^[aeiou]/.test(params.type) ? "an" : "a"} ${params.type}`;
      return `${place || whole} ${error.message}`;
    })
    .join("; ");
}
// #endregion settings

// #region command-tools
// The seed's command-based discovery: the project lists its tools by printing function
// declarations, and runs one when asked. The agent knows nothing else about them.

/** How long the agent waits for what runs outside it, in milliseconds (exported so tests can shorten them). */
export const TIME_LIMITS = { discovery: 30_000, call: DEFAULT_TIMEOUT * 1000, serverStart: 30_000, serverCall: DEFAULT_TIMEOUT * 1000 };

/**
 * A tool found outside the program, before the registry gives it its final name: `wanted` is
 * the name its source asks for (`bump_version`, `docs__read_page`), `original` its name there,
 * which a call uses, and `origin` where it came from, for the person.
 */
interface FoundTool {
  wanted: string;
  original: string;
  origin: string;
  displayName: string;
  description: string;
  schema: Record<string, unknown>;
  trusted: boolean;
  run(params: Params, signal: AbortSignal): Promise<OutsideResult>;
}

/** What one source brought: its tools, and in words what went wrong. */
type Found = { source: string; tools: FoundTool[]; problems: string[] };

// A function declaration, as the seed describes them: a name, a description, parameters.
const DECLARATION_SCHEMA = {
  type: "object",
  properties: { name: { type: "string", minLength: 1 }, description: { type: "string" }, parameters: { type: "object", properties: { type: { const: "object" } }, required: ["type"] } },
  required: ["name"],
};

/** Run the discovery command; each function declaration it prints becomes a tool that runs the call command. */
async function toolsFromCommand(discover: string, callCommand: string): Promise<Found> {
  const found: Found = { source: "discovery command", tools: [], problems: [] };
  let declarations: unknown;
  try {
    const run = await runOutside(discover, [], "", TIME_LIMITS.discovery);
    if (run.code !== 0) throw new Error(`it exited with code ${run.code}: ${lastLine(run.stderr) || "(nothing on stderr)"}`);
    try {
      declarations = JSON.parse(run.stdout);
    } catch {
      throw new Error(`it printed something that is not JSON: ${JSON.stringify(clip(run.stdout.trim(), 80, "head"))}`);
    }
    if (!Array.isArray(declarations)) throw new Error("it printed JSON, but not a list of function declarations");
  } catch (error) {
    found.problems.push(`could not list its tools: ${(error as Error).message}`);
    return found;
  }
  const checkDeclaration = jsonSchemaValidator().compile(DECLARATION_SCHEMA);
  for (const [i, declaration] of declarations.entries()) {
    if (!checkDeclaration(declaration)) {
      found.problems.push(`declaration ${i + 1} was left out: ${placedErrors(checkDeclaration.errors ?? [], "it")}`);
      continue;
    }
    const { name, description = "", parameters } = declaration as { name: string; description?: string; parameters?: Record<string, unknown> };
    found.tools.push({
      ...{ wanted: name, original: name, origin: "discovery command", displayName: name, trusted: false },
      description: `${description}\n(A tool of this project, found by its discovery command.)`.trim(),
      schema: parameters ?? { type: "object", properties: {} },
      run: (params, signal) => callCommandTool(callCommand, name, params, signal),
    });
  }
  return found;
}

/** `toolCallCommand <name>`, the arguments as JSON on stdin: stdout is the result, a failure is stderr. */
async function callCommandTool(callCommand: string, name: string, params: Params, signal: AbortSignal): Promise<OutsideResult> {
  const run = await runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal);
  if (run.code !== 0) throw new Error(`${name} failed (exit code ${run.code}): ${run.stderr.trim() || run.stdout.trim() || "no output"}`);
  const text = run.stdout || "(no output)";
  return { llmContent: text, returnDisplay: text };
}

/**
 * Run a command of the settings with bash in the workspace, as bash's commands run (lib/
 * machinery/processes.ts): done when it exits, even if a helper it started holds on; a time
 * limit or Ctrl-C ends all it started. `args` follow it as words of their own ("$@"), so a
 * tool's name is never read as shell code; `input` goes to stdin.
 */
async function runOutside(command: string, args: string[], input: string, ms: number, signal?: AbortSignal): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const [stdout, stderr] = [new HeadAndTail(MAX_FILE_BYTES), new HeadAndTail(MAX_OUTPUT)];
  const code = await runCommand(command, { cwd: workspace(), timeoutMs: ms, output: stdout, errors: stderr, args, input, signal });
  return { stdout: stdout.text(), stderr: stderr.text(), code };
}

const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";
// #endregion command-tools

// #region mcp
// MCP servers through the official SDK over stdio: the agent starts each server as a process,
// asks for its tools (tools/list) and calls them (tools/call) on its stdin and stdout. The
// SDK is loaded only when a server is configured, so the program still starts at once.

/** A server the agent started: its client and process, and why it stopped, once it has. */
interface Connection {
  name: string;
  client: Client;
  transport: StdioClientTransport;
  /** The mark in its environment (as bash's commands have): what it starts carries it too. */
  mark: string;
  /** The last of what the server wrote to stderr: often the reason it failed. */
  stderr: string;
  stopped?: string;
}

const connections: Connection[] = [];
// The SDK's error codes for "no answer in time" and "the connection closed".
const [REQUEST_TIMEOUT, CONNECTION_CLOSED] = [-32001, -32000];

/** Start one server and list its tools, within its time limit; a server that fails is stopped and named. */
async function toolsFromServer(name: string, server: ServerSettings, root: string): Promise<Found> {
  const found: Found = { source: `MCP server ${name}${server.trust ? " (trusted)" : ""}`, tools: [], problems: [] };
  const cwd = path.resolve(root, server.cwd ?? ".");
  if (!existsSync(cwd)) return { ...found, problems: [`could not start: its cwd ${cwd} does not exist`] };
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  // The SDK gives a server only a few variables (PATH, HOME, ...); the settings add theirs. The
  // mark is as bash's: when the program ends, every process that carries it ends, so a server
  // and whatever it started end with the program (on Linux; elsewhere a server sees its stdin
  // close, and a well-made server stops).
  const { mark, env: marked } = newProcessMark();
  const env = { ...getDefaultEnvironment(), ...server.env, ...marked };
  const transport = new StdioClientTransport({ command: server.command, args: server.args, cwd, env, stderr: "pipe" });
  const connection: Connection = { name, client: new Client({ name: "agent-workbook-s08", version: "1.0.0" }), transport, mark, stderr: "" };
  transport.stderr?.on("data", (chunk: Buffer) => (connection.stderr = (connection.stderr + chunk).slice(-2000)));
  connection.client.onclose = () => (connection.stopped ??= `it stopped${connection.stderr ? `: ${lastLine(connection.stderr)}` : ""}`);
  connections.push(connection);
  const limit = server.timeout ?? TIME_LIMITS.serverStart;
  const deadline = AbortSignal.timeout(limit);
  try {
    await connection.client.connect(transport, { signal: deadline, timeout: limit });
    const { tools } = await connection.client.listTools(undefined, { signal: deadline, timeout: limit });
    for (const tool of tools) {
      found.tools.push({
        ...{ wanted: `${name}__${tool.name}`, original: tool.name, origin: `MCP server ${name}${server.trust ? ", trusted" : ""}`, displayName: `${name}: ${tool.name}`, trusted: server.trust === true },
        description: tool.description ?? `The tool ${tool.name} of the MCP server ${name}.`,
        schema: tool.inputSchema,
        run: (params, signal) => callServerTool(connection, tool.name, params, signal, server.timeout ?? TIME_LIMITS.serverCall),
      });
    }
  } catch (error) {
    const why = deadline.aborted
      ? `no answer within ${limit / 1000} s, so it was stopped`
      : (error as NodeJS.ErrnoException).code === "ENOENT"
        ? `"${server.command}" was not found`
        : (connection.stopped ?? (error as Error).message);
    found.problems.push(`could not start: ${why}`);
    await closeConnection(connection, "kill");
  }
  return found;
}

/** tools/call on the server; an error result, a timeout or a server that stopped becomes a clear error. */
async function callServerTool(connection: Connection, tool: string, params: Params, signal: AbortSignal, limit: number): Promise<OutsideResult> {
  const gone = "its tools work again when the agent starts again";
  if (connection.stopped) throw new Error(`the MCP server ${connection.name} is not running (${connection.stopped}); ${gone}`);
  let result: { content?: McpContent[]; isError?: boolean };
  try {
    result = (await connection.client.callTool({ name: tool, arguments: params }, undefined, { signal, timeout: limit })) as typeof result;
  } catch (error) {
    const code = (error as { code?: number }).code;
    if (signal.aborted) throw error;
    if (code === REQUEST_TIMEOUT) throw new Error(`the MCP server ${connection.name} gave no answer within ${limit / 1000} s`);
    if (code === CONNECTION_CLOSED) throw new Error(`the MCP server ${connection.name} stopped during the call (${connection.stopped ?? "connection closed"}); ${gone}`);
    throw error;
  }
  const content = toContent(result.content ?? []);
  const shown = content.map((block) => (block.type === "text" ? block.text : `[image, ${block.source.type === "base64" ? block.source.media_type : "url"}]`)).join("\n");
  // An error result (isError) is the tool's answer, not the server's failure: it goes back as is_error.
  if (result.isError) throw new Error(shown || `${tool} failed and said nothing`);
  return { llmContent: content, returnDisplay: shown };
}

type McpContent =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: "resource_link"; uri: string; name?: string };

const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;
const MAX_IMAGE_BASE64 = 5 * 1024 * 1024; // the API takes images of up to 5 MB

/** An MCP result as tool_result content: text as text, an image the API takes as an image, anything else named in words. */
function toContent(parts: McpContent[]): (TextBlockParam | ImageBlockParam)[] {
  const text = (value: string): TextBlockParam => ({ type: "text", text: value });
  const image = (mimeType: string | undefined, data: string | undefined): ImageBlockParam | undefined => {
    const media = IMAGE_TYPES.find((type) => type === mimeType);
    return media && data && data.length <= MAX_IMAGE_BASE64 ? { type: "image", source: { type: "base64", media_type: media, data } } : undefined;
  };
  if (parts.length === 0) return [text("(no content)")];
  return parts.map((part) => {
    if (part.type === "text") return text(part.text);
    if (part.type === "image") return image(part.mimeType, part.data) ?? text(`[an image of type ${part.mimeType}, which cannot be shown to the model]`);
    if (part.type === "resource") {
      const { uri, mimeType, text: body, blob } = part.resource;
      if (body !== undefined) return text(`[resource ${uri}]\n${body}`);
      return image(mimeType, blob) ?? text(`[resource ${uri}: ${mimeType ?? "binary"} data, not shown]`);
    }
    if (part.type === "resource_link") return text(`[resource link ${part.uri}${part.name ? ` (${part.name})` : ""}]`);
    return text(`[${part.type} content, which cannot be shown to the model]`);
  });
}

/** Close one server: politely (stdin closes, then SIGTERM) or, for one that hangs, at once. */
async function closeConnection(connection: Connection, how: "close" | "kill" = "close"): Promise<void> {
  const pid = connection.transport.pid;
  if (how === "kill" && pid) killServer(pid);
  await connection.client.close().catch(() => {});
  endProcesses(`${connection.mark}\0`, []); // and whatever it started
}

function killServer(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {} // it has ended already
}
// #endregion mcp

// #region discovery
/** Where each tool found outside came from, by its registered name; a tool not here is built in. */
const origins = new Map<string, string>();

/**
 * Read the workspace's settings, run the discovery command and start the MCP servers, all at
 * once, and register what they offer. Resolves when every source has answered or run out of
 * time; what failed is said in one line each, and everything else works. TOOLS is refilled in
 * place: it is the array the loop sends, so the model sees the new tools at its next request.
 */
export async function discoverTools(): Promise<{ tools: string[]; problems: string[] }> {
  const root = workspace();
  const { settings, problem } = readSettings(root);
  await dropDiscoveredTools();
  const report = { tools: [] as string[], problems: [] as string[] };
  if (problem) {
    report.problems.push(problem);
    console.log(`[tools] ${problem}; only the built-in tools are used`);
    return report;
  }
  const { toolDiscoveryCommand, toolCallCommand } = settings.tools ?? {};
  // Each source says what went wrong rather than throwing; should one throw all the same, it
  // becomes that source's problem, and the others are still registered.
  const settle = (source: string, found: Promise<Found>) => found.catch((error: Error): Found => ({ source, tools: [], problems: [error.message] }));
  const sources = await Promise.all([
    ...(toolDiscoveryCommand && toolCallCommand ? [settle("discovery command", toolsFromCommand(toolDiscoveryCommand, toolCallCommand))] : []),
    ...Object.entries(settings.mcpServers ?? {}).map(([name, server]) => settle(`MCP server ${name}`, toolsFromServer(name, server, root))),
  ]);
  // Registered in the order of the settings, whichever answered first, so the names are the same every time.
  for (const found of sources) {
    const names = found.tools.flatMap((tool) => register(tool, found));
    if (names.length > 0 || found.problems.length === 0) console.log(`[tools] ${found.source}: ${names.join(", ") || "no tools"}`);
    for (const problem of found.problems) console.log(`[tools] ${found.source}: ${problem}`);
    report.tools.push(...names);
    report.problems.push(...found.problems.map((problem) => `${found.source}: ${problem}`));
  }
  TOOLS.splice(0, TOOLS.length, ...registry.getFunctionDeclarations());
  return report;
}

/** Register one found tool under a valid, free name; [] when its schema cannot be used. */
function register(found: FoundTool, from: Found): string[] {
  const name = freeName(found.wanted);
  let tool: DiscoveredTool;
  try {
    tool = outsideTool(name, found);
  } catch (error) {
    from.problems.push(`"${found.wanted}" was left out: its parameter schema is not valid JSON Schema (${(error as Error).message})`);
    return [];
  }
  registry.registerTool(tool);
  origins.set(name, found.origin + (name === found.wanted ? "" : `, where it is called "${found.original}"`));
  return [name];
}

/** A name the API takes (letters, digits, _ and -, at most 64 characters) that no tool has yet. */
function freeName(wanted: string): string {
  const valid = (wanted.replace(/[^A-Za-z0-9_-]/g, "_") || "_").slice(0, 64);
  let name = valid;
  for (let n = 2; registry.getTool(name); n++) name = `${valid.slice(0, 63 - String(n).length)}_${n}`;
  return name;
}

/** A found tool as a registry entry. It runs someone else's code, so it asks first (as bash does) unless trusted. */
function outsideTool(name: string, found: FoundTool): DiscoveredTool {
  // `$schema` names a draft the API may not take; the rest is sent as it came.
  const { $schema: _draft, ...schema } = { ...found.schema, type: "object" } as Tool["input_schema"];
  return {
    name,
    displayName: found.displayName,
    description: found.description,
    kind: "execute",
    parameterSchema: schema,
    validateToolParams: outsideSchemaCheck(schema),
    getDescription: (params) => JSON.stringify(params),
    shouldConfirmExecute: async (params) => (found.trusted ? false : { title: `Run ${found.displayName} (${found.origin})?`, details: JSON.stringify(params, null, 2) }),
    execute: found.run,
  };
}

/** Take out every tool found outside, and end their servers (before discovery runs again, and at the end). */
export async function dropDiscoveredTools(): Promise<void> {
  for (const name of origins.keys()) registry.unregisterTool(name);
  origins.clear();
  TOOLS.splice(0, TOOLS.length, ...registry.getFunctionDeclarations());
  await Promise.all(connections.splice(0).map((connection) => closeConnection(connection)));
}

/** `--list-tools`: every tool the model would see here, and where it came from. Exit code 1 if something failed. */
async function listTools(): Promise<number> {
  const { problems } = await discoverTools();
  const tools = registry.getAllTools();
  const width = Math.max(...tools.map((tool) => tool.name.length));
  console.log(`${tools.length} tools in ${workspace()}:`);
  for (const tool of tools) console.log(`  ${tool.name.padEnd(width)}  ${origins.get(tool.name) ?? "built in"}`);
  return problems.length > 0 ? 1 : 0;
}
// #endregion discovery

// #region tools
/**
 * A tool found outside answers with text, or with content blocks: an MCP server may send an
 * image. s06's tools answer with text, so they are DiscoveredTools too.
 */
interface OutsideResult {
  llmContent: string | (TextBlockParam | ImageBlockParam)[];
  returnDisplay: string;
}
type DiscoveredTool = Omit<AgentTool, "execute"> & { execute(params: Params, signal: AbortSignal): Promise<OutsideResult> };

/** s06's registry, with s06's core tools; discovery adds the tools it finds. */
export const registry = new ToolRegistry<DiscoveredTool>();
for (const tool of CORE_TOOLS) registry.registerTool(tool);
/** What the model sees, from the registry (refilled in place when discovery runs). */
export const TOOLS: Tool[] = registry.getFunctionDeclarations();
// #endregion tools

// #region run-tool
/**
 * The calls of one reply. Calls that only read, side by side, run at the same time: reading
 * cannot conflict. Edits and commands run one at a time, in order, since each may depend on
 * the one before. The results go back in call order, each with its call's id.
 */
async function runTools(content: ContentBlock[]): Promise<ToolResultBlockParam[]> {
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use");
  const results: ToolResultBlockParam[] = [];
  for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));
  return results;
}

/** Consecutive read-kind calls go in one batch; every other call is a batch of its own. */
function batches(calls: ToolUseBlock[]): ToolUseBlock[][] {
  const isRead = (call: ToolUseBlock) => registry.getTool(call.name)?.kind === "read";
  const batches: ToolUseBlock[][] = [];
  for (const call of calls) {
    const last = batches.at(-1);
    if (last && isRead(call) && last.every(isRead)) last.push(call);
    else batches.push([call]);
  }
  return batches;
}

/** One call through the nine steps. Never throws: every failure is a result the model can act on. */
export async function runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> {
  // 1-2. The model asked for a tool by name; the loop hands the call over.
  const failed = (message: string): ToolResultBlockParam => {
    console.log(dim(indent(clip(message, 2000, "head"))));
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(message, MAX_OUTPUT) };
  };
  // 3. Look the tool up.
  const tool = registry.getTool(call.name);
  if (!tool) console.log(dim(`> ${call.name}`));
  if (!tool) return failed(`Error: unknown tool "${call.name}". Tools: ${registry.getAllTools().map((t) => t.name).join(", ")}.`);
  // 4. Validate. Models send null for what they leave out: it means "not given", for every tool.
  const params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  const problem = tool.validateToolParams(params);
  if (problem) {
    console.log(dim(`> ${tool.displayName} ${clip(JSON.stringify(params), 120, "head")}`));
    return failed(`Error: ${call.name} was not run: ${problem}.`);
  }
  // 5. Describe, in one line, what is about to happen.
  console.log(dim(`> ${tool.displayName} ${clip(tool.getDescription(params).split("\n")[0], 120, "head")}`));
  const controller = new AbortController();
  try {
    // 6. Confirm: the approval mode, and the person when the mode asks for one.
    const verdict = await approve(tool, params, controller.signal);
    if (!verdict.run) return failed(verdict.why);
    // 7. Execute, with a signal: Ctrl-C cancels this tool, not the agent.
    const result = await cancellable(() => controller.abort(), () => tool.execute(params, controller.signal));
    // 8. llmContent goes to the model...
    const toModel: ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: forModel(result.llmContent) };
    // 9. ...and returnDisplay to the person (unless they have just seen it, approving it).
    if (result.returnDisplay !== verdict.shown) console.log(dim(indent(firstLines(result.returnDisplay, 12))));
    return toModel;
  } catch (error) {
    // Errors go back as is_error, so the model knows the call failed and why.
    if (controller.signal.aborted) return failed("Error: cancelled by the user (Ctrl-C); the tool was stopped.");
    return failed(`Error: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** llmContent as the model gets it: text cut to MAX_OUTPUT in all; an image block as it is. */
function forModel(content: OutsideResult["llmContent"]): ToolResultBlockParam["content"] {
  if (typeof content === "string") return clip(content, MAX_OUTPUT);
  const texts = content.filter((block) => block.type === "text").length;
  return content.map((block) => (block.type === "text" ? { ...block, text: clip(block.text, Math.floor(MAX_OUTPUT / texts)) } : block));
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
  for (const block of response.content) if (block.type === "text") console.log(block.text);
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
/**
 * Before a replay: a scenario with no settings of its own gets the demo's, which point at the
 * fixtures (fixtures/s08) wherever the workbook is; then the tools are discovered, as the
 * program does before a live session's first prompt.
 */
export async function prepareReplay(scenario: Scenario): Promise<void> {
  if (scenario.files?.[SETTINGS_FILE] === undefined) writeDemoSettings();
  await discoverTools();
}

function writeDemoSettings(): void {
  const fixtures = path.join(import.meta.dirname, "..", "fixtures", "s08");
  const projectTools = [process.execPath, path.join(fixtures, "project-tools.mjs")];
  const shell = (words: string[]) => words.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(" ");
  const settings: Settings = {
    tools: { toolDiscoveryCommand: `${shell(projectTools)} list`, toolCallCommand: `${shell(projectTools)} call` },
    mcpServers: {
      docs: { command: process.execPath, args: [path.join(fixtures, "docs-server.mjs")], trust: true },
      tickets: { command: "./bin/tickets-mcp", args: ["--stdio"] }, // not installed here: it cannot start
    },
  };
  mkdirSync(path.dirname(SETTINGS_FILE), { recursive: true });
  writeFileSync(SETTINGS_FILE, `${JSON.stringify(settings, null, 2)}\n`);
}

export async function main(args = process.argv.slice(2)): Promise<never> {
  try {
    return await runAsMain({
      stage: "s08",
      title: "Tool Discovery",
      agentLoop,
      hasKey: Boolean(API_KEY || AUTH_TOKEN),
      args,
      options: ["--approval-mode"],
      settingsProblem: modeProblem,
      help: [APPROVAL_HELP, "  --list-tools            list the tools this folder's .agent/settings.json brings, and where each comes from"],
      prepareReplay,
      prepareSession: async () => void (await discoverTools()),
      commands: { "--list-tools": listTools },
    });
  } finally {
    // A program ends in process.exit, where the exit handlers end every server; a caller
    // that goes on running (a test calling main) gets them closed here.
    await dropDiscoveredTools();
  }
}

if (isMain(import.meta.url)) await main();
// #endregion program
