// lib/machinery/mcp.ts, called directly: how the agent talks to an MCP server. The workbook's
// docs server (fixtures/s08/docs-server.mjs) is served over Streamable HTTP in this process, so
// most cases start no process at all: headers and refusals, progress that keeps a call alive up
// to a total limit, the workspace offered as the client's root, resources read by URI. The one
// limit that belongs to stdio (10 MB a message) runs the same server as a process. The content
// conversion, the ${VAR} expansion and the output-schema checks are plain functions. s08's tests
// go through the stage's tools; the stage decides names, trust and registration.
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { expanded, MAX_MESSAGE_BYTES, McpConnection, outputChecks, toContent, type McpEntry } from "../../lib/machinery/mcp.ts";
import { REPO_ROOT } from "../helpers.ts";

const DOCS_SERVER = path.join(REPO_ROOT, "fixtures", "s08", "docs-server.mjs");
type Served = { url: string; close(): Promise<void> };
const { serveHttp } = (await import(pathToFileURL(DOCS_SERVER).href)) as { serveHttp(options: { token?: string }): Promise<Served> };

const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-mcp-")));
let served: Served;
const open: McpConnection[] = [];
beforeAll(async () => void (served = await serveHttp({ token: "s3cret" })));
afterAll(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()));
  await served.close();
  rmSync(root, { recursive: true, force: true });
});
afterEach(() => vi.unstubAllEnvs());

const signal = () => new AbortController().signal;
const limits = { call: 5_000, total: 60_000 };
const ignore = () => {};

/** Start `entry` in the test's workspace; kept open until the file ends. */
async function start(entry: McpEntry, ms = 5_000) {
  const started = await McpConnection.start("docs", entry, root, ms);
  open.push(started.connection);
  return started;
}
const remote = (): McpEntry => ({ type: "http", url: served.url, headers: { Authorization: "Bearer s3cret" } });
const failureOf = (entry: McpEntry) => start(entry).then(() => "started", (error: Error) => error.message);
const textOf = (blocks: { type: string; text?: string }[]) => blocks.map((block) => block.text ?? `[${block.type}]`).join("\n");

describe("starting a server over Streamable HTTP", () => {
  it("sends the entry's headers, lists the tools and calls one", async () => {
    const { connection, tools } = await start(remote());
    expect(tools.map((tool) => tool.name)).toContain("read_page");
    expect(tools.find((tool) => tool.name === "read_page")?.annotations).toEqual({ readOnlyHint: true });
    const { content, isError } = await connection.call("echo", { text: "over http" }, signal(), limits, ignore);
    expect({ content, isError }).toEqual({ content: [{ type: "text", text: "over http" }], isError: false });
  });

  it("a server that refuses the token: its HTTP status in words, and what to check", async () => {
    expect(await failureOf({ type: "http", url: served.url, headers: { Authorization: "Bearer wrong" } })).toBe(`${served.url} answered HTTP 401: check its headers (a token?)`);
  });

  it("an address where nothing listens, or no address at all: said so", async () => {
    const listener = http.createServer();
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/mcp`;
    await new Promise((resolve) => listener.close(resolve));
    expect(await failureOf({ type: "http", url })).toBe(`could not reach ${url} (ECONNREFUSED)`);
    expect(await failureOf({ type: "http", url: "docs.example/mcp" })).toBe('"docs.example/mcp" is not an address');
  });
});

describe("a call", () => {
  let connection: McpConnection;
  beforeAll(async () => void ({ connection } = await start(remote())));

  // #region progress
  it("sends a progress token: each report is shown and starts the limit again, so a call that reports goes on past it", async () => {
    const shown: string[] = [];
    const result = await connection.call("count", { steps: 6, ms: 100 }, signal(), { call: 300, total: 10_000 }, (line) => shown.push(line));
    expect(textOf(result.content)).toBe("counted to 6");
    expect(shown).toEqual(["1/6 step 1", "2/6 step 2", "3/6 step 3", "4/6 step 4", "5/6 step 5", "6/6 step 6"]);
  });

  it("a call that keeps reporting ends at the total limit, and says that was the reason", async () => {
    const call = connection.call("count", { steps: 50, ms: 100 }, signal(), { call: 300, total: 700 }, ignore);
    await expect(call).rejects.toThrow("the MCP server docs was still at work after 0.7 s, the most a call may take even while it reports progress, so the call was given up");
  });
  // #endregion progress

  it("a call that says nothing ends at its limit", async () => {
    await expect(connection.call("slow", { ms: 3000 }, signal(), { call: 300, total: 10_000 }, ignore)).rejects.toThrow("the MCP server docs gave no answer within 0.3 s");
  });

  it("offers the workspace as the client's one root", async () => {
    const { content } = await connection.call("roots", {}, signal(), limits, ignore);
    expect(textOf(content)).toBe(pathToFileURL(root).href);
  });

  it("reads a resource by its URI; one the server does not have is the server's error", async () => {
    expect(textOf(await connection.read("docs://pages/style.md", signal(), 5_000))).toBe("[resource docs://pages/style.md]\n# Style\n\nTwo spaces, double quotes, and no default exports.\n");
    await expect(connection.read("docs://pages/nothing.md", signal(), 5_000)).rejects.toThrow(/no page named nothing/);
  });
});

describe("an answer over the SDK's limit for one message (stdio)", () => {
  // #region too-large
  it("is said to be too large, not a crash; the server is started again at its next call", async () => {
    const { connection } = await start({ command: process.execPath, args: [DOCS_SERVER, "--test-tools"] }, 20_000);
    // 11 MB through the SDK's buffer takes a second or two, and longer on a busy machine.
    const huge = connection.call("huge", {}, signal(), { call: 30_000, total: 30_000 }, ignore);
    await expect(huge).rejects.toThrow(
      `the MCP server docs sent an answer larger than ${MAX_MESSAGE_BYTES / 2 ** 20} MB, the most one MCP message may be, so the SDK closed the connection and the answer is lost; the server is started again at its next call: ask it for less`,
    );
    const next = await connection.call("echo", { text: "still here" }, signal(), { call: 20_000, total: 20_000 }, ignore);
    expect(textOf(next.content)).toBe("still here");
  }, 60_000);
  // #endregion too-large
});

describe("toContent: every kind of answer becomes something the model can read", () => {
  const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
  const base64 = (text: string) => Buffer.from(text).toString("base64");

  // #region content
  it("a result that is only structured content reaches the model as its JSON, not as nothing", () => {
    expect(toContent({ content: [], structuredContent: { open: 3 } }, "docs")).toEqual([{ type: "text", text: '{\n  "open": 3\n}' }]);
    expect(toContent({ content: [] }, "docs")).toEqual([{ type: "text", text: "(no content)" }]);
  });

  it("a blob of text (text/plain, JSON) is decoded; a binary one, or bytes that are not UTF-8, are named", () => {
    const resource = (mimeType: string, blob: string) => ({ type: "resource" as const, resource: { uri: "docs://x", mimeType, blob } });
    expect(toContent({ content: [resource("text/plain", base64("Release notes\n"))] }, "docs")).toEqual([{ type: "text", text: "[resource docs://x]\nRelease notes\n" }]);
    expect(toContent({ content: [resource("application/json", base64('{"a":1}'))] }, "docs")[0]).toEqual({ type: "text", text: '[resource docs://x]\n{"a":1}' });
    expect(toContent({ content: [resource("text/plain", Buffer.from([0xff, 0xfe, 0x41]).toString("base64"))] }, "docs")[0]).toEqual({ type: "text", text: "[resource docs://x: text/plain data, not shown]" });
    expect(toContent({ content: [resource("application/pdf", "JVBERi0xLjQK")] }, "docs")[0]).toEqual({ type: "text", text: "[resource docs://x: application/pdf data, not shown]" });
    expect(toContent({ content: [resource("image/png", pixel)] }, "docs")[0]).toEqual({ type: "image", source: { type: "base64", media_type: "image/png", data: pixel } });
  });
  // #endregion content

  it("a resource link names its server, so the model can read it; an image the API cannot take is named", () => {
    expect(toContent({ content: [{ type: "resource_link", uri: "docs://pages/releasing.md", name: "releasing" }] }, "docs")).toEqual([
      { type: "text", text: "[resource link docs://pages/releasing.md (releasing), a resource of the MCP server docs]" },
    ]);
    expect(toContent({ content: [{ type: "image", data: "a".repeat(5 * 1024 * 1024 + 1), mimeType: "image/png" }] }, "docs")).toEqual([
      { type: "text", text: "[an image of type image/png, which cannot be shown to the model]" },
    ]);
  });
});

describe("expanded: ${VAR} in an entry, as Claude Code reads .mcp.json", () => {
  it("takes the value from the environment, or the default after :-", () => {
    vi.stubEnv("DOCS_TOKEN", "s3cret");
    const entry: McpEntry = { type: "http", url: "http://127.0.0.1:${DOCS_PORT:-8080}/mcp", headers: { Authorization: "Bearer ${DOCS_TOKEN}" } };
    expect(expanded(entry)).toEqual({ type: "http", url: "http://127.0.0.1:8080/mcp", headers: { Authorization: "Bearer s3cret" } });
    expect(expanded({ command: "${DOCS_BIN:-node}", args: ["--token=${DOCS_TOKEN}"], env: { T: "${DOCS_TOKEN}" } })).toEqual({ command: "node", args: ["--token=s3cret"], env: { T: "s3cret" } });
  });

  it("a variable that is not set is an error; the agent's own key is never given", () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-the-agents-own-key");
    expect(() => expanded({ command: "docs", args: ["${NO_SUCH_VARIABLE_HERE}"] })).toThrow("it uses ${NO_SUCH_VARIABLE_HERE}, which is not set");
    expect(() => expanded({ command: "docs", env: { KEY: "${ANTHROPIC_API_KEY}" } })).toThrow("it uses ${ANTHROPIC_API_KEY}, the agent's own key, which is never given to a server");
  });
});

describe("outputChecks: what the SDK checks structured content with", () => {
  it("runs no pattern of the server's (no backtracking on the main thread)", () => {
    const check = outputChecks.getValidator({ type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" } } });
    const started = Date.now();
    expect(check({ s: `${"a".repeat(40)}!` }).valid).toBe(true);
    expect(Date.now() - started).toBeLessThan(500);
  });

  it("checks in the dialect a schema declares, 2020-12 unless it says otherwise", () => {
    const pair = { type: "object", properties: { pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: false } } };
    expect(outputChecks.getValidator(pair)({ pair: ["a", 1] }).valid).toBe(true);
    expect(outputChecks.getValidator(pair)({ pair: ["a", 1, 2] })).toMatchObject({ valid: false, errorMessage: '"pair" must NOT have more than 2 items' });
    const tuple = { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { pair: { type: "array", items: [{ type: "string" }, { type: "number" }] } } };
    expect(outputChecks.getValidator(tuple as object)({ pair: ["a", 1] }).valid).toBe(true);
  });

  it("a schema that does not compile checks nothing, rather than costing the server its tools", () => {
    expect(outputChecks.getValidator({ type: "object", properties: { n: { type: "integr" } } })({ n: "x" }).valid).toBe(true);
  });
});
