// Talking to MCP servers, for s08 and the capstone: start one (a program over stdio, or an
// address over Streamable HTTP), list its tools, call them, read its resources, and close it.
//
// (docs: Under the hood, "MCP") The plain version is the SDK's quickstart: a transport,
// `client.connect`, `listTools`, `callTool`, and `result.content[0].text`. What it gets wrong,
// and what this does instead:
// - a server is anyone's program. It gets a few variables and its entry's env, never the
//   agent's key, and a process mark, so it and whatever it starts end with the agent.
// - a call is ended at its time limit even while the server says how far it got. Here the
//   call sends a progress token; progress is shown and restarts the limit, up to a total.
// - the answer is one of many kinds: text, images, resources (text or base64), links, or
//   structured content alone. `content[0].text` loses all but the first. Here each becomes
//   something the model can read, and what cannot be shown is named, never dropped.
// - an answer over the SDK's 10 MB limit for one message makes the SDK close the
//   connection, and the call reads "connection closed". Here it is said, and the server is
//   started again at its next call.
// - a server may ask for the client's roots (the filesystem server does, when started
//   without a folder): here the workspace is the one root.
// - the SDK checks a result against the tool's output schema with its own ajv, patterns
//   and all, in draft-07 whatever the schema declares, and one output schema it cannot
//   compile loses the server every tool. Here outside schemas are checked as lib checks them.
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { ImageBlockParam, TextBlockParam } from "@anthropic-ai/sdk/resources/messages";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, Progress, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { CREDENTIALS, endProcesses, newProcessMark } from "./processes.ts";
import { dialectOf, outsideSchemaCheck } from "./validation.ts";

export type { McpTool };

/**
 * How a server is reached, in Claude Code's words: a program over stdio (`"type": "stdio"`,
 * or no type), or an address over Streamable HTTP (`"type": "http"`), with headers for a token.
 */
export type McpEntry =
  | { type?: "stdio"; command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { type: "http"; url: string; headers?: Record<string, string> };

/** What an MCP result becomes: the blocks a tool_result takes. */
export type Blocks = (TextBlockParam | ImageBlockParam)[];

/** The time limits of one call, in milliseconds: `call` with no word from the server (progress starts it again), `total` in all. */
export interface CallLimits {
  call: number;
  total: number;
}

/** The most one message may be over stdio: the SDK's limit, which it does not let a client raise past memory. */
export const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
// The SDK's error codes for "no answer in time", "the connection closed" and "no such method".
const [REQUEST_TIMEOUT, CONNECTION_CLOSED, METHOD_NOT_FOUND] = [-32001, -32000, -32601];
const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";

// #region connection
/** One server the agent started: its client, and why it stopped, once it has. */
export class McpConnection {
  /** Why the server is not running, once it is not. */
  stopped?: string;
  private client?: Client;
  private transport?: Transport & { pid?: number | null };
  private mark = "";
  private stderr = ""; // the last of what it wrote there: often the reason it failed
  private tooLarge = false;

  private constructor(
    readonly name: string,
    private readonly entry: McpEntry,
    private readonly root: string,
  ) {}

  /**
   * Start a server in the workspace `root` and list its tools, within `ms` milliseconds. A
   * server that fails is stopped with what it started, and the error says why in words.
   */
  static async start(name: string, entry: McpEntry, root: string, ms: number): Promise<{ connection: McpConnection; tools: McpTool[] }> {
    const connection = new McpConnection(name, entry, root);
    const deadline = AbortSignal.timeout(ms);
    try {
      await connection.connect(deadline, ms);
      const { tools } = await connection.client!.listTools(undefined, { signal: deadline, timeout: ms });
      return { connection, tools };
    } catch (error) {
      await connection.close("kill");
      throw new Error(deadline.aborted ? `no answer within ${ms / 1000} s, so it was stopped` : connection.why(error));
    }
  }

  private async connect(signal: AbortSignal, ms: number): Promise<void> {
    // The SDK loads when a server is configured, so the program still starts at once.
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { ListRootsRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
    [this.stopped, this.tooLarge, this.stderr] = [undefined, false, ""];
    this.transport = await this.newTransport(expanded(this.entry));
    const client = new Client({ name: "agent-workbook", version: "1.0.0" }, { capabilities: { roots: { listChanged: false } }, jsonSchemaValidator: outputChecks });
    // The workspace is the client's one root: a server that works on files works there.
    const root = { uri: pathToFileURL(this.root).href, name: path.basename(this.root) };
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [root] }));
    client.onerror = (error) => void (/ReadBuffer exceeded maximum size/.test(error.message) && (this.tooLarge = true));
    client.onclose = () => (this.stopped ??= this.tooLarge ? `it sent an answer larger than ${MAX_MESSAGE_BYTES / 2 ** 20} MB` : `it stopped${this.stderr ? `: ${lastLine(this.stderr)}` : ""}`);
    this.client = client;
    await client.connect(this.transport, { signal, timeout: ms });
  }

  private async newTransport(entry: McpEntry): Promise<Transport> {
    if (entry.type === "http") {
      const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
      return new StreamableHTTPClientTransport(new URL(entry.url), { requestInit: { headers: entry.headers } });
    }
    const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const cwd = path.resolve(this.root, entry.cwd ?? ".");
    if (!existsSync(cwd)) throw new Error(`its cwd ${cwd} does not exist`);
    // The SDK gives a server only a few variables (PATH, HOME, ...), the entry adds its own. The
    // mark is as bash's: when the program ends, every process that carries it ends, so a server
    // and whatever it started end with the program (on Linux; elsewhere a server sees its
    // stdin close, and a well-made server stops).
    const { mark, env } = newProcessMark();
    this.mark = mark;
    const transport = new StdioClientTransport({ command: entry.command, args: entry.args, cwd, env: { ...getDefaultEnvironment(), ...entry.env, ...env }, stderr: "pipe" });
    transport.stderr?.on("data", (chunk: Buffer) => (this.stderr = (this.stderr + chunk).slice(-2000)));
    return transport;
  }

  /** Why a start failed, in words a person can act on. */
  private why(error: unknown): string {
    const { code, message, cause } = error as { code?: unknown; message?: string; cause?: { code?: string } };
    if (this.entry.type !== "http" && code === "ENOENT") return `"${this.entry.command}" was not found`;
    if (this.entry.type === "http" && code === "ERR_INVALID_URL") return `"${this.entry.url}" is not an address`;
    if (this.entry.type === "http" && typeof code === "number" && code >= 400) {
      return `${this.entry.url} answered HTTP ${code}${code === 401 || code === 403 ? ": check its headers (a token?)" : ""}`;
    }
    if (this.entry.type === "http" && cause?.code) return `could not reach ${this.entry.url} (${cause.code})`;
    return this.stopped ?? message ?? String(error);
  }
  // #endregion connection

  // #region call
  /**
   * tools/call with a progress token: each progress report is shown (`onProgress`) and starts
   * the call's limit again, up to `limits.total`. A timeout, a server that stopped or an
   * answer too large becomes an Error in words; an error result (isError) is returned as such.
   */
  async call(tool: string, params: Record<string, unknown>, signal: AbortSignal, limits: CallLimits, onProgress: (line: string) => void): Promise<{ content: Blocks; isError: boolean }> {
    await this.ready(limits.call);
    let result: CallToolResult;
    try {
      result = (await this.client!.callTool({ name: tool, arguments: params }, undefined, {
        signal,
        timeout: limits.call,
        resetTimeoutOnProgress: true,
        maxTotalTimeout: limits.total,
        onprogress: (progress) => onProgress(progressLine(progress)),
      })) as CallToolResult;
    } catch (error) {
      throw this.failure(error, signal, limits);
    }
    return { content: toContent(result, this.name), isError: result.isError === true };
  }

  /** resources/read: a resource of this server by its URI, as blocks. */
  async read(uri: string, signal: AbortSignal, ms: number): Promise<Blocks> {
    await this.ready(ms);
    try {
      const { contents } = await this.client!.readResource({ uri }, { signal, timeout: ms });
      return contents.length === 0 ? [text(`[resource ${uri}: empty]`)] : contents.map((resource) => resourceBlock(resource));
    } catch (error) {
      if ((error as { code?: number }).code === METHOD_NOT_FOUND) throw new Error(`the MCP server ${this.name} offers no resources`);
      throw this.failure(error, signal, { call: ms, total: ms });
    }
  }

  /**
   * Before a request: a server that stopped says so. One whose answer was too large did not
   * fail: the SDK hung up on it, so it is started again.
   */
  private async ready(ms: number): Promise<void> {
    if (this.stopped && this.tooLarge) {
      await this.close();
      try {
        await this.connect(AbortSignal.timeout(ms), ms);
      } catch (error) {
        this.stopped = `it could not be started again: ${this.why(error)}`;
        this.tooLarge = false;
      }
    }
    if (this.stopped) throw new Error(`the MCP server ${this.name} is not running (${this.stopped}); its tools work again when the agent starts again`);
  }

  private failure(error: unknown, signal: AbortSignal, limits: CallLimits): unknown {
    if (signal.aborted) return error;
    const { code, data } = error as { code?: number; data?: { maxTotalTimeout?: number } };
    const server = `the MCP server ${this.name}`;
    if (code === REQUEST_TIMEOUT && data?.maxTotalTimeout) {
      return new Error(`${server} was still at work after ${limits.total / 1000} s, the most a call may take even while it reports progress, so the call was given up`);
    }
    if (code === REQUEST_TIMEOUT) return new Error(`${server} gave no answer within ${limits.call / 1000} s`);
    if (code === CONNECTION_CLOSED && this.tooLarge) {
      return new Error(`${server} sent an answer larger than ${MAX_MESSAGE_BYTES / 2 ** 20} MB, the most one MCP message may be, so the SDK closed the connection and the answer is lost; the server is started again at its next call: ask it for less`);
    }
    if (code === CONNECTION_CLOSED) return new Error(`${server} stopped during the call (${this.stopped ?? "connection closed"}); its tools work again when the agent starts again`);
    return error;
  }
  // #endregion call

  /** Close the server: politely (stdin closes, then SIGTERM), or at once for one that hangs; and whatever it started. */
  async close(how: "close" | "kill" = "close"): Promise<void> {
    const pid = this.transport?.pid;
    if (how === "kill" && pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {} // it has ended already
    }
    await this.client?.close().catch(() => {});
    if (this.mark) endProcesses(`${this.mark}\0`, []);
  }
}

/** One progress report as a line for the person: `3/10 indexing pages`. */
const progressLine = ({ progress, total, message }: Progress) => `${progress}${total ? `/${total}` : ""}${message ? ` ${message}` : ""}`;

// #region variables
/**
 * `${VAR}` and `${VAR:-default}` in an entry's command, args, env, url and headers, from the
 * person's environment, as Claude Code expands .mcp.json: a token stays out of the project's
 * files. A variable that is not set and has no default is an error; so is the agent's own key.
 */
export function expanded(entry: McpEntry): McpEntry {
  const expand = (value: string) =>
    value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name: string, fallback?: string) => {
      if (CREDENTIALS.includes(name)) throw new Error(`it uses \${${name}}, the agent's own key, which is never given to a server`);
      const value = process.env[name] ?? fallback;
      if (value === undefined) throw new Error(`it uses \${${name}}, which is not set`);
      return value;
    });
  const each = (record?: Record<string, string>) => record && Object.fromEntries(Object.entries(record).map(([key, value]) => [key, expand(value)]));
  if (entry.type === "http") return { ...entry, url: expand(entry.url), headers: each(entry.headers) };
  return { ...entry, command: expand(entry.command), args: entry.args?.map(expand), env: each(entry.env) };
}
// #endregion variables

// #region content
type McpContent = CallToolResult["content"][number];
type McpResource = { uri: string; mimeType?: string; text?: string; blob?: string };

const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;
const MAX_IMAGE_BASE64 = 5 * 1024 * 1024; // the API takes images of up to 5 MB
const text = (value: string): TextBlockParam => ({ type: "text", text: value });

/**
 * An MCP result as tool_result content: text as text, an image the API takes as an image, a
 * result that is only structured content as its JSON, and anything else named in words.
 */
export function toContent(result: { content?: McpContent[]; structuredContent?: unknown }, server: string): Blocks {
  const parts = result.content ?? [];
  if (parts.length === 0 && result.structuredContent !== undefined) return [text(JSON.stringify(result.structuredContent, null, 2))];
  if (parts.length === 0) return [text("(no content)")];
  return parts.map((part) => {
    if (part.type === "text") return text(part.text);
    if (part.type === "image") return image(part.mimeType, part.data) ?? text(`[an image of type ${part.mimeType}, which cannot be shown to the model]`);
    if (part.type === "resource") return resourceBlock(part.resource);
    if (part.type === "resource_link") return text(`[resource link ${part.uri}${part.name ? ` (${part.name})` : ""}, a resource of the MCP server ${server}]`);
    return text(`[${part.type} content, which cannot be shown to the model]`);
  });
}

/** One resource: its text; a blob that is an image the API takes, or text in base64, decoded; else named. */
function resourceBlock({ uri, mimeType, text: body, blob }: McpResource): TextBlockParam | ImageBlockParam {
  if (body !== undefined) return text(`[resource ${uri}]\n${body}`);
  const decoded = blob !== undefined && isTextType(mimeType) ? utf8(blob) : undefined;
  if (decoded !== undefined) return text(`[resource ${uri}]\n${decoded}`);
  return image(mimeType, blob) ?? text(`[resource ${uri}: ${mimeType ?? "binary"} data, not shown]`);
}

function image(mimeType: string | undefined, data: string | undefined): ImageBlockParam | undefined {
  const media = IMAGE_TYPES.find((type) => type === mimeType);
  return media && data && data.length <= MAX_IMAGE_BASE64 ? { type: "image", source: { type: "base64", media_type: media, data } } : undefined;
}

const isTextType = (mimeType = "") => /^text\/|^application\/(json|xml|yaml|javascript)\b|\+(json|xml)$/.test(mimeType);

/** Base64 that holds UTF-8 text, decoded; undefined when it does not (the bytes are then named, not shown). */
function utf8(base64: string): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(base64, "base64"));
  } catch {
    return undefined;
  }
}
// #endregion content

/**
 * What the SDK checks a result's structuredContent with, when the tool declares an output
 * schema: the schema as lib checks schemas written by others (no patterns, its own dialect).
 * One that does not compile checks nothing, rather than losing the server all its tools.
 */
export const outputChecks: jsonSchemaValidator = {
  getValidator<T>(schema: object) {
    let check: (value: Record<string, unknown>) => string | null;
    try {
      check = outsideSchemaCheck(schema, dialectOf(schema, "2020-12"));
    } catch {
      check = () => null;
    }
    return (input: unknown) => {
      const problem = check(input as Record<string, unknown>);
      return problem === null ? { valid: true as const, data: input as T, errorMessage: undefined } : { valid: false as const, data: undefined, errorMessage: problem };
    };
  },
};
