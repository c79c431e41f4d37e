/**
 * s08_tool_discovery.ts - Tool Discovery
 *
 * "Tools can come from outside the program": a command or a server says what it offers.
 *
 *   .agent/settings.json and .mcp.json in the workspace (a broken entry is named and left out)
 *      |
 *      v  the person allows what the project starts: asked once, or in ~/.agent/settings.json
 *      v  discoverTools(), before the first prompt: all at once, each within a time limit
 *   +-----------------------------------+   +--------------------------------------+
 *   | tools.toolDiscoveryCommand        |   | mcpServers.docs = { command, args }  |
 *   |   prints [{ name, description,    |   |   or { type: "http", url, headers }  |
 *   |   parameters }, ...]              |   |   initialize, tools/list (lib: mcp)  |
 *   +-----------------+-----------------+   +------------------+-------------------+
 *                     | bump_version                           | docs__read_page
 *                     v                                        v
 *   registry: bash, read_file, write_file, edit_file + what was found  ==> TOOLS
 *      |
 *      v  a call goes through s06's nine steps; it asks first unless the server is trusted
 *   toolCallCommand bump_version  <- arguments as JSON on stdin;  stdout is the result
 *   tools/call read_page          <- with a progress token;       text, image, resource
 *
 * New since s06: tools from outside the program join the registry, named server__tool for
 * MCP; regions `settings`, `command-tools`, `mcp`, `discovery`, first after the config, and
 * `run-tool` (a result may hold an image). s06's tools and approval step are imported from
 * agents/s06_tool_registry.ts. Machinery (lib/machinery): mcp.ts talks to the servers;
 * processes.ts runs the commands and ends what they started; validation.ts checks schemas
 * written by others.
 *
 *   npx tsx agents/s08_tool_discovery.ts                (no key: replays the recorded demo)
 *   npx tsx agents/s08_tool_discovery.ts --list-tools   (the tools this folder's settings bring)
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import type {
  ContentBlock, ImageBlockParam, Message, MessageParam, TextBlockParam, Tool, ToolResultBlockParam,
  ToolUseBlock,
} from "@anthropic-ai/sdk/resources/messages";
import type { ErrorObject } from "ajv";
import { dim, firstLines, indent, visible } from "../lib/machinery/display.ts";
import { clip, HeadAndTail } from "../lib/machinery/head-and-tail.ts";
import { McpConnection, type CallLimits, type McpEntry } from "../lib/machinery/mcp.ts";
import { runCommand } from "../lib/machinery/processes.ts";
import { MAX_FILE_BYTES } from "../lib/machinery/safe-read.ts";
import { dialectOf, jsonSchemaValidator, outsideSchemaCheck, schemaCheck, schemaForModel } from "../lib/machinery/validation.ts";
import type { Scenario } from "../lib/course/scenario.ts";
import { loadWorkbookEnv } from "../lib/runtime/env.ts";
import { modelClient } from "../lib/runtime/model.ts";
import { isMain, runAsMain } from "../lib/runtime/program.ts";
import { PERSONAL, readJson, rememberTrusted, SETTINGS_FILE, trustedProject } from "../lib/runtime/settings.ts";
import { cancellable, terminal } from "../lib/runtime/terminal.ts";
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
// Where tools from outside are configured: .agent/settings.json in the workspace (Qwen Code's
// keys) and the project's .mcp.json (Claude Code's file: its mcpServers). Each entry is checked
// against a JSON Schema before anything starts: a typo (`mcpServer`) is named rather than
// quietly doing nothing, and a broken entry is left out while the others are used. Both files
// are read by lib/runtime/settings.ts (readJson): only a regular file, of at most 256 KB.
const MCP_FILE = ".mcp.json";

/** One entry of mcpServers: lib's McpEntry (a program over stdio, or an address over HTTP), with `timeout` in milliseconds (to start, and for each call) and `trust`: its tools run without asking. */
type ServerSettings = McpEntry & { timeout?: number; trust?: boolean };
type Settings = { tools?: { toolDiscoveryCommand?: string; toolCallCommand?: string }; mcpServers?: Record<string, ServerSettings> };

const STRINGS = { type: "object", additionalProperties: { type: "string" } };
const SCHEMAS = {
  tools: {
    type: "object",
    properties: { toolDiscoveryCommand: { type: "string", minLength: 1 }, toolCallCommand: { type: "string", minLength: 1 } },
    dependencies: { toolDiscoveryCommand: ["toolCallCommand"] }, // a tool found must have a way to run
    additionalProperties: false,
  },
  server: {
    type: "object",
    properties: {
      type: { enum: ["stdio", "http"] }, command: { type: "string", minLength: 1 }, args: { type: "array", items: { type: "string" } }, env: STRINGS, cwd: { type: "string" },
      url: { type: "string", minLength: 1 }, headers: STRINGS, timeout: { type: "integer", minimum: 1 }, trust: { type: "boolean" },
    },
    if: { properties: { type: { const: "http" } }, required: ["type"] }, then: { required: ["url"] }, else: { required: ["command"] },
    additionalProperties: false,
  },
};

/** What both files of the workspace `root` configure, and in one line each what is wrong and left out. */
function readSettings(root: string): { settings: Settings; problems: string[] } {
  const settings: Settings = {};
  const problems: string[] = [];
  for (const [file, keys] of [[SETTINGS_FILE, ["tools", "mcpServers"]], [MCP_FILE, ["mcpServers"]]] as const) {
    const { data, problem } = readJson(path.join(root, file), file);
    const shape = { type: "object", properties: Object.fromEntries(keys.map((key) => [key, { type: "object" }])), additionalProperties: false };
    const wrong = problem ?? (data === undefined ? "" : mistakes(shape, data));
    if (wrong) problems.push(`${problem ? "" : `${file}: `}${wrong}; nothing of it is used`);
    if (wrong || data === undefined) continue;
    const { tools, mcpServers = {} } = data as Settings;
    const toolsWrong = tools && mistakes(SCHEMAS.tools, tools, "tools");
    if (toolsWrong) problems.push(`${file}: ${toolsWrong}; the discovery command was left out`);
    else if (tools) settings.tools = tools;
    for (const [name, entry] of Object.entries(mcpServers)) {
      const entryWrong = mistakes(SCHEMAS.server, entry, `mcpServers.${name}`);
      if (entryWrong) problems.push(`${file}: ${entryWrong}; that server was left out`);
      else if (settings.mcpServers?.[name]) problems.push(`${file}: mcpServers.${name} was left out: ${SETTINGS_FILE} has a server of that name`);
      else (settings.mcpServers ??= {})[name] = entry;
    }
  }
  return { settings, problems };
}

/** What is wrong with `data`, each with its place under `at`: `mcpServers.docs.args must be an array`; "" when nothing. */
function mistakes(schema: object, data: unknown, at = ""): string {
  const check = jsonSchemaValidator().compile(schema); // ajv compiles a schema once, then keeps it
  return check(data) ? "" : placedErrors(check.errors ?? [], "the settings", at);
}

/** ajv's findings, each with its place: `mcpServers.docs.args must be an array`. */
function placedErrors(errors: ErrorObject[], whole: string, at = ""): string {
  return errors
    .filter((error) => error.keyword !== "if") // `must match "else" schema`: the error beside it says what is missing
    .map((error) => {
      const place = [at, ...error.instancePath.split("/").slice(1)].filter(Boolean).join(".");
      const { params } = error;
      if (error.keyword === "additionalProperties") return `${place ? `${place}: ` : ""}unknown setting "${params.additionalProperty}"`;
      if (error.keyword === "required") return `${place ? `${place}: ` : ""}"${params.missingProperty}" is missing`;
      if (error.keyword === "type") return `${place || whole} must be ${/^[aeiou]/.test(params.type) ? "an" : "a"} ${params.type}`;
      if (error.keyword === "enum") return `${place || whole} must be one of ${params.allowedValues.join(", ")}`;
      return `${place || whole} ${error.message}`;
    })
    .join("; ");
}
// #endregion settings

// #region command-tools
// The seed's command-based discovery: the project lists its tools by printing function
// declarations, and runs one when asked. The agent knows nothing else about them.

/**
 * How long the agent waits for what runs outside it, in ms (exported so tests can shorten them). A
 * call that reports progress starts its server's limit again at each report, up to serverTotal.
 */
export const TIME_LIMITS = { discovery: 30_000, call: DEFAULT_TIMEOUT * 1000, serverStart: 30_000, serverCall: DEFAULT_TIMEOUT * 1000, serverTotal: 600_000 };

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
  /** The JSON Schema dialect of a schema that declares none: draft-07 unless this says MCP's 2020-12. */
  dialect?: "2020-12";
  /** What the tool says of itself (MCP's readOnlyHint): believed only from a trusted server. */
  readOnly?: boolean;
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
// MCP servers through the official SDK: lib/machinery/mcp.ts starts one (a program over stdio,
// or an address over HTTP), calls it and turns its answers into content. Decided here: a
// server's tools are named server__tool, and are believed about themselves only when trusted.

/** The servers started, to end them again. */
const connections: McpConnection[] = [];

/** Start one server and list its tools, within its time limit; a server that fails is stopped and named. */
async function toolsFromServer(name: string, server: ServerSettings, root: string): Promise<Found> {
  const trusted = server.trust === true;
  const found: Found = { source: `MCP server ${name}${trusted ? " (trusted)" : ""}`, tools: [], problems: [] };
  const started = await McpConnection.start(name, server, root, server.timeout ?? TIME_LIMITS.serverStart).catch((error: Error) => error);
  if (started instanceof Error) return { ...found, problems: [`could not start: ${started.message}`] };
  connections.push(started.connection);
  for (const tool of started.tools) {
    // A tool that must run as a task (MCP's long-running calls) would be listed and then fail.
    if (tool.execution?.taskSupport === "required") {
      found.problems.push(`"${tool.name}" was left out: it runs only as a task (execution.taskSupport "required"), which this agent does not do`);
      continue;
    }
    found.tools.push({
      ...{ wanted: `${name}__${tool.name}`, original: tool.name, origin: `MCP server ${name}${trusted ? ", trusted" : ""}`, displayName: `${name}: ${tool.name}`, trusted },
      description: tool.description ?? `The tool ${tool.name} of the MCP server ${name}.`,
      schema: tool.inputSchema,
      ...{ dialect: "2020-12" as const, readOnly: tool.annotations?.readOnlyHint === true },
      run: (params, signal) => callServerTool(started.connection, tool.name, params, signal, { call: server.timeout ?? TIME_LIMITS.serverCall, total: TIME_LIMITS.serverTotal }),
    });
  }
  return found;
}

/** tools/call, its progress shown as it comes. An error result (isError) is the tool's answer, not the server's failure: it goes back as is_error. */
async function callServerTool(connection: McpConnection, tool: string, params: Params, signal: AbortSignal, limits: CallLimits): Promise<OutsideResult> {
  const progress = (line: string) => console.log(dim(`  [${connection.name}: ${tool}] ${visible(line)}`));
  const { content, isError } = await connection.call(tool, params, signal, limits, progress);
  const shown = content.map((block) => (block.type === "text" ? block.text : `[image, ${block.source.type === "base64" ? block.source.media_type : "url"}]`)).join("\n");
  if (isError) throw new Error(shown || `${tool} failed and said nothing`);
  return { llmContent: content, returnDisplay: shown };
}

/**
 * Claude Code's ReadMcpResource: a resource of a running server by its URI, such as a link in a
 * result. Reading is what resources are for, so it is a read: the question was whether to start
 * the server at all.
 */
function readResourceTool(): DiscoveredTool {
  const servers = { type: "string", enum: connections.map((connection) => connection.name).sort() };
  const parameterSchema = { type: "object" as const, properties: { server: servers, uri: { type: "string" } }, required: ["server", "uri"], additionalProperties: false };
  return {
    ...{ name: "read_mcp_resource", displayName: "ReadMcpResource", kind: "read", parameterSchema, validateToolParams: schemaCheck(parameterSchema) },
    description: "Read a resource of an MCP server by its URI, such as a resource link in a tool's result.",
    getDescription: (params) => `${params.server} ${params.uri}`,
    shouldConfirmExecute: async () => false,
    async execute(params, signal) {
      const connection = connections.find((each) => each.name === params.server)!;
      const content = await connection.read(String(params.uri), signal, TIME_LIMITS.serverCall);
      return { llmContent: content, returnDisplay: content.map((block) => (block.type === "text" ? block.text : "[image]")).join("\n") };
    },
  };
}
// #endregion mcp

// #region discovery
/** Where each tool found outside came from, by its registered name; a tool not here is built in. */
const origins = new Map<string, string>();

/**
 * Read the workspace's settings, ask the person before starting what is new, run the discovery
 * command and start the MCP servers, all at once, and register what they offer. Resolves when
 * every source has answered or run out of time; what failed is said in one line each, and the
 * rest works. TOOLS is refilled in place: the loop sends that array, so the model sees the new
 * tools at its next request.
 */
export async function discoverTools(): Promise<{ tools: string[]; problems: string[] }> {
  const root = workspace();
  const { settings, problems } = readSettings(root);
  const allowed = await allowedToStart(root, settings, problems);
  await dropDiscoveredTools();
  for (const problem of problems) console.log(`[tools] ${problem}`);
  const report = { tools: [] as string[], problems };
  const { toolDiscoveryCommand, toolCallCommand } = allowed.tools ?? {};
  // Each source says what went wrong rather than throwing; should one throw all the same, it
  // becomes that source's problem, and the others are still registered.
  const settle = (source: string, found: Promise<Found>) => found.catch((error: Error): Found => ({ source, tools: [], problems: [error.message] }));
  const sources = await Promise.all([
    ...Object.entries(allowed.mcpServers ?? {}).map(([name, server]) => settle(`MCP server ${name}`, toolsFromServer(name, server, root))),
    ...(toolDiscoveryCommand && toolCallCommand ? [settle("discovery command", toolsFromCommand(toolDiscoveryCommand, toolCallCommand))] : []),
  ]);
  // The agent's own tool for the servers' resources first, then the servers' tools, then the
  // command's: `server__tool` is the server's name, and a command's tool must not take it.
  if (connections.length > 0) {
    registry.registerTool(readResourceTool());
    origins.set("read_mcp_resource", "built in, for the MCP servers' resources");
  }
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

/**
 * A project's commands and servers run someone else's code as they start, in every approval
 * mode: the person allows them first, their `trust` with them. What they allowed before, as it
 * is now, starts without a question (PERSONAL); the rest is asked about once, or with no one
 * at the terminal does not start.
 */
async function allowedToStart(root: string, settings: Settings, problems: string[]): Promise<Settings> {
  if (!settings.tools && !settings.mcpServers) return settings; // nothing to start
  // What the person allowed before, kept in their own settings (lib/runtime/settings.ts).
  const { entries: before, problem } = trustedProject(root) as { entries: Settings; problem?: string };
  if (problem) problems.push(problem);
  const allowed: Settings = { tools: settings.tools, mcpServers: { ...settings.mcpServers } };
  const asking = new Map<string, () => void>(); // each new entry, and how to leave it out
  if (settings.tools && !isDeepStrictEqual(settings.tools, before.tools)) asking.set(`tools: ${JSON.stringify(settings.tools)}`, () => delete allowed.tools);
  for (const [name, entry] of Object.entries(settings.mcpServers ?? {})) {
    if (!isDeepStrictEqual(entry, before.mcpServers?.[name])) asking.set(`mcpServers.${name}: ${JSON.stringify(entry)}`, () => delete allowed.mcpServers![name]);
  }
  if (asking.size === 0) return allowed;
  const answer = terminal().hasPerson ? await askToStart([...asking.keys()]) : undefined;
  if (answer === "a") remember(root, settings, problems);
  if (answer === "y" || answer === "a") return allowed;
  for (const leaveOut of asking.values()) leaveOut();
  const why = answer ? "the person said no" : `no one is at the terminal to allow them: start the agent at a terminal once, or list them under trustedProjects in ${PERSONAL.name}`;
  problems.push(`not started: ${[...asking.keys()].map((line) => line.split(":")[0]).join(", ")} (${why})`);
  return allowed;
}

/** One question for everything new: "y", "a" or "n" (any other answer is a no). */
async function askToStart(entries: string[]): Promise<string> {
  console.log(`\nThis project's settings start programs of their own; a server with "trust": true runs its tools without asking:`);
  console.log(`${indent(visible(entries.join("\n")))}\n  y: start them   a: yes, and remember it in ${PERSONAL.name}   n: no`);
  while (true) {
    const answer = (await terminal().ask("start? ", { fresh: true }))?.trim().toLowerCase();
    if (answer === undefined || !/^(y|yes|a|always|)$/.test(answer)) return "n";
    if (answer) return answer[0];
  }
}

/** Keep the person's yes in their own settings, beside what else is there (s17's rules and hooks too). */
function remember(root: string, settings: Settings, problems: string[]): void {
  try {
    rememberTrusted(root, { tools: settings.tools, mcpServers: settings.mcpServers });
  } catch (error) {
    problems.push(`not remembered: ${(error as Error).message}`);
  }
}

/** Register one found tool under a valid, free name; [] when it cannot be used. Whatever fails here is that tool's problem, never all of discovery's. */
function register(found: FoundTool, from: Found): string[] {
  try {
    const name = freeName(found.wanted);
    registry.registerTool(outsideTool(name, found));
    origins.set(name, found.origin + (name === found.wanted ? "" : `, where it is called "${found.original}"`));
    return [name];
  } catch (error) {
    from.problems.push(`"${found.wanted}" was left out: ${(error as Error).message}`);
    return [];
  }
}

/** A name the API takes (letters, digits, _ and -, at most 64 characters) that no tool has yet. */
function freeName(wanted: string): string {
  const valid = (wanted.replace(/[^A-Za-z0-9_-]/g, "_") || "_").slice(0, 64);
  let name = valid;
  for (let n = 2; registry.getTool(name); n++) name = `${valid.slice(0, 63 - String(n).length)}_${n}`;
  return name;
}

/**
 * A found tool as a registry entry. Its schema is checked as written, in the dialect it declares;
 * the model gets one object schema (schemaForModel: the API refuses a top-level oneOf), without
 * `$schema`. It runs someone else's code: a command that asks first (as bash does) unless
 * trusted, and a read only when a trusted server says so.
 */
function outsideTool(name: string, found: FoundTool): DiscoveredTool {
  let validateToolParams: DiscoveredTool["validateToolParams"];
  try {
    validateToolParams = outsideSchemaCheck(found.schema, dialectOf(found.schema, found.dialect ?? "draft-07"));
  } catch (error) {
    throw new Error(`its parameter schema is not valid JSON Schema (${(error as Error).message})`);
  }
  const { $schema: _draft, ...schema } = { ...(schemaForModel(found.schema) ?? found.schema), type: "object" } as Tool["input_schema"];
  return {
    ...{ name, displayName: found.displayName, description: found.description, parameterSchema: schema, validateToolParams },
    kind: found.trusted && found.readOnly ? "read" : "execute",
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
  await Promise.all(connections.splice(0).map((connection) => connection.close()));
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
    console.log(dim(indent(visible(clip(message, 2000, "head")))));
    return { type: "tool_result", tool_use_id: call.id, is_error: true, content: clip(message, MAX_OUTPUT) };
  };
  // 3. Look the tool up.
  const tool = registry.getTool(call.name);
  if (!tool) console.log(dim(`> ${visible(call.name)}`));
  if (!tool) return failed(`Error: unknown tool "${call.name}". Tools: ${registry.getAllTools().map((t) => t.name).join(", ")}.`);
  // 4. Validate. Models send null for what they leave out: it means "not given", for every tool.
  const params = Object.fromEntries(Object.entries(call.input ?? {}).filter(([, value]) => value !== null));
  const problem = tool.validateToolParams(params);
  if (problem) {
    console.log(dim(`> ${tool.displayName} ${visible(clip(JSON.stringify(params), 120, "head"))}`));
    return failed(`Error: ${call.name} was not run: ${problem}.`);
  }
  // 5. Describe, in one line, what is about to happen.
  console.log(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split("\n")[0], 120, "head"))}`));
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

/** llmContent as the model gets it: text cut to MAX_OUTPUT in all, however many blocks it came in; images as they are. */
function forModel(content: OutsideResult["llmContent"]): ToolResultBlockParam["content"] {
  if (typeof content === "string") return clip(content, MAX_OUTPUT);
  const texts = content.flatMap((block) => (block.type === "text" ? [block.text] : []));
  if (texts.join("\n").length <= MAX_OUTPUT) return content;
  // Too much text: it is cut as one text (its head and its tail), and the images follow it.
  return [{ type: "text", text: clip(texts.join("\n"), MAX_OUTPUT) }, ...content.filter((block) => block.type === "image")];
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
      help: [APPROVAL_HELP, "  --list-tools            list the tools this folder's .agent/settings.json and .mcp.json bring, and where each comes from"],
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
