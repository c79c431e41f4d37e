// s04's web_fetch, rule by rule. Pages come from msw (through the replay, as the model would
// see them) or, for what msw cannot play (slow, endless, redirecting responses), from a real
// HTTP server on loopback, which only the test-only switch lets web_fetch reach.
import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { http as mock, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario, type ScenarioPage } from "../lib/scenario.ts";
import * as s04 from "../agents/s04_web_fetch.ts";
import { reply, resultText, runStage, scenarioOf, toolResults, useReplay, useWorkspace, runTurns } from "./helpers.ts";

const { TOOL_HANDLERS, agentLoop, allowLoopbackForTests, resolverFrom, useResolver } = s04;

/** The handler's answer, or its error message (what runTool turns into an is_error result). */
const webFetch = (input: Record<string, unknown>): Promise<string> =>
  Promise.resolve().then(() => TOOL_HANDLERS.web_fetch(input));

const DOCS = "https://docs.example.com";
const HOSTS = {
  "docs.example.com": "93.184.215.14",
  "intranet.example.com": "10.0.0.7",
  "metadata.google.internal": "169.254.169.254",
};

const workspace = useWorkspace();
beforeEach(() => {
  useResolver(resolverFrom(HOSTS)); // no DNS in tests: names resolve from this table
  vi.spyOn(console, "log").mockImplementation(() => {});
});
afterEach(() => {
  useResolver();
  allowLoopbackForTests(false);
  vi.restoreAllMocks();
});

describe("web_fetch: what the model receives for a page", () => {
  const replay = useReplay();

  /** One web_fetch call through the real loop, with `web` served by the replay; the model's tool result. */
  async function modelSees(input: Record<string, unknown>, web: Record<string, ScenarioPage>) {
    const session = replay(scenarioOf([reply.tools([{ id: "toolu_fetch", name: "web_fetch", input }]), reply.text("ok")], { web }));
    await agentLoop([{ role: "user", content: "fetch it" }]);
    expect(session.verdict()).toEqual([]);
    const [result] = toolResults(session, 1);
    expect(result.tool_use_id).toBe("toolu_fetch");
    return { text: resultText(result), isError: result.is_error === true };
  }

  it("turns HTML into readable text: the title first, one line per heading, paragraph and list item, no nav, script, style, footer, noscript or svg", async () => {
    const page = `<!doctype html><html><head><title> Streams guide </title><style>p { color: red }</style>
      <script>track("view")</script></head><body>
      <nav><a href="/">Home</a> <a href="/api">API</a></nav>
      <h1>Streams</h1><p>A stream delivers data
        in <code>chunks</code>, as it arrives.</p>
      <h2>Reading</h2><ul><li>Call <b>read()</b></li><li>Stop at <em>done</em></li></ul>
      <noscript>Turn on JavaScript</noscript><svg><text>logo</text></svg>
      <footer>© 2025 Example</footer></body></html>`;
    const { text, isError } = await modelSees({ url: `${DOCS}/streams` }, { [`${DOCS}/streams`]: { body: page } });
    expect(isError).toBe(false);
    expect(text).toBe(
      ["Streams guide", "", "# Streams", "A stream delivers data in chunks, as it arrives.", "## Reading", "- Call read()", "- Stop at done"].join("\n"),
    );
  });

  it("gives at most 10,000 characters of a page's text, with a marker saying how much there was", async () => {
    const long = "word ".repeat(6000).trim(); // 29,999 characters in one paragraph
    const { text } = await modelSees({ url: `${DOCS}/long` }, { [`${DOCS}/long`]: { body: `<title>Long</title><p>${long}</p>` } });
    const [shown, marker] = text.split("\n... ");
    expect(shown).toBe(`Long\n\n${long}`.slice(0, 10_000));
    expect(marker).toBe(`[web_fetch shows 10000 of ${`Long\n\n${long}`.length} characters]`);
  });

  it("returns plain text and JSON as they are", async () => {
    const notes = "line one\n    indented   line\n\n<p>not HTML here</p>\n";
    const json = JSON.stringify({ name: "kvcache", versions: ["1.0.0", "1.1.0"] }, null, 2);
    const web = {
      [`${DOCS}/notes.txt`]: { contentType: "text/plain; charset=utf-8", body: notes },
      [`${DOCS}/package.json`]: { contentType: "application/json", body: json },
    };
    expect(await modelSees({ url: `${DOCS}/notes.txt` }, web)).toEqual({ text: notes, isError: false });
    expect(await modelSees({ url: `${DOCS}/package.json` }, web)).toEqual({ text: json, isError: false });
  });

  it("caps plain text at 10,000 characters too, with the marker", async () => {
    const log = "0123456789".repeat(2500);
    const { text } = await modelSees({ url: `${DOCS}/big.log` }, { [`${DOCS}/big.log`]: { contentType: "text/plain", body: log } });
    expect(text).toBe(`${log.slice(0, 10_000)}\n... [web_fetch shows 10000 of 25000 characters]`);
  });

  it("describes a PDF, an image or other binary content in one line, never its bytes", async () => {
    const web = {
      [`${DOCS}/manual.pdf`]: { contentType: "application/pdf", body: "%PDF-1.7 secret-bytes", headers: { "content-length": "21" } },
      [`${DOCS}/logo.png`]: { contentType: "image/png", body: "\x89PNG secret-bytes" },
      [`${DOCS}/blob`]: { contentType: "application/octet-stream", body: "secret-bytes" },
    };
    const pdf = await modelSees({ url: `${DOCS}/manual.pdf` }, web);
    expect(pdf.text).toBe(`${DOCS}/manual.pdf is a PDF document (application/pdf, 21 bytes); web_fetch returns text only, so its content is not shown.`);
    const png = await modelSees({ url: `${DOCS}/logo.png` }, web);
    expect(png.text).toMatch(/^https:\/\/docs\.example\.com\/logo\.png is an image \(image\/png, [^)]+\); web_fetch returns text only/);
    const blob = await modelSees({ url: `${DOCS}/blob` }, web);
    expect(blob.text).toMatch(/is a binary file \(application\/octet-stream/);
    for (const { text } of [pdf, png, blob]) {
      expect(text).not.toContain("\n");
      expect(text).not.toContain("secret-bytes");
    }
  });

  it("reports an HTTP error with its status and a short excerpt, as an error", async () => {
    const web = {
      [`${DOCS}/gone`]: { status: 404, body: "<title>Not found</title><nav>menu</nav><h1>Page not found</h1><p>Try the search.</p>" },
      [`${DOCS}/broken`]: { status: 500, contentType: "text/plain", body: `Internal error ${"x".repeat(5000)}` },
    };
    expect(await modelSees({ url: `${DOCS}/gone` }, web)).toEqual({
      text: `Error: HTTP 404 Not Found from ${DOCS}/gone: Not found # Page not found Try the search.`,
      isError: true,
    });
    const broken = await modelSees({ url: `${DOCS}/broken` }, web);
    expect(broken.isError).toBe(true);
    expect(broken.text).toMatch(/^Error: HTTP 500 Internal Server Error from https:\/\/docs\.example\.com\/broken: Internal error x+$/);
    expect(broken.text.length).toBeLessThan(400);
  });

  it("refuses a redirect to a name that resolves to a private address, without requesting it", async () => {
    const web = {
      [`${DOCS}/moved`]: { status: 302, body: "", headers: { location: "http://intranet.example.com/admin" } },
      "http://intranet.example.com/admin": { body: "<p>the intranet's admin page</p>" },
    };
    expect(await modelSees({ url: `${DOCS}/moved` }, web)).toEqual({
      text: "Error: refused: intranet.example.com resolves to 10.0.0.7, which is a private, loopback, link-local or cloud-metadata address; web_fetch only reaches the public internet",
      isError: true,
    });
  });

  it("follows a relative redirect on the same site and says where the page was found", async () => {
    const web = {
      [`${DOCS}/old`]: { status: 301, body: "", headers: { location: "/new" } },
      [`${DOCS}/new`]: { contentType: "text/plain", body: "the new page" },
    };
    expect((await modelSees({ url: `${DOCS}/old` }, web)).text).toBe(`the new page\n\n(after redirects, this page is ${DOCS}/new)`);
  });
});

describe("web_fetch: where it may not go", () => {
  // Every request is answered here, so a check that lets one through shows up as a hit.
  const hits: string[] = [];
  const network = setupServer(
    mock.all("*", ({ request }) => {
      hits.push(request.url);
      return HttpResponse.text("secret");
    }),
  );
  beforeEach(() => {
    hits.length = 0;
    network.listen({ onUnhandledRequest: "error" });
  });
  afterEach(() => network.close());

  it.each(["file:///etc/passwd", "ftp://ftp.example.com/pub/file.txt", "data:text/plain,hello", "javascript:alert(1)", "gopher://example.com/", "ws://example.com/socket"])(
    "refuses the scheme of %s",
    async (url) => {
      await expect(webFetch({ url })).rejects.toThrow(/^refused: web_fetch fetches only http and https URLs, not [a-z]+:$/);
      expect(hits).toEqual([]);
    },
  );

  it.each([
    ["http://127.0.0.1/", "loopback"],
    ["http://127.1/", "loopback, short"],
    ["http://0x7f.1/", "loopback, hex"],
    ["http://2130706433/", "loopback, one decimal number"],
    ["http://017700000001/", "loopback, octal"],
    ["http://localhost/", "localhost"],
    ["http://localhost./", "localhost with a trailing dot"],
    ["http://api.localhost/", "a name under localhost"],
    ["http://[::1]/", "IPv6 loopback"],
    ["http://[::ffff:127.0.0.1]/", "loopback inside IPv6"],
    ["http://0.0.0.0/", "unspecified"],
    ["http://[::]/", "IPv6 unspecified"],
    ["http://10.1.2.3/", "private 10/8"],
    ["http://172.16.0.1/", "private 172.16/12"],
    ["http://192.168.1.1/", "private 192.168/16"],
    ["http://100.64.0.1/", "carrier-grade NAT"],
    ["http://169.254.169.254/latest/meta-data/", "cloud metadata"],
    ["http://0251.0376.0251.0376/", "cloud metadata, octal"],
    ["http://0xa9fea9fe/", "cloud metadata, hex"],
    ["http://[::ffff:a9fe:a9fe]/", "cloud metadata inside IPv6"],
    ["http://[fd00:ec2::254]/", "AWS IPv6 metadata"],
    ["http://[fe80::1]/", "IPv6 link-local"],
    ["http://[fc00::1]/", "IPv6 unique local"],
    ["http://224.0.0.1/", "multicast"],
    ["http://255.255.255.255/", "broadcast"],
    ["http://[ff02::1]/", "IPv6 multicast"],
    ["http://[64:ff9b::a9fe:a9fe]/", "cloud metadata through NAT64"],
    ["http://intranet.example.com/", "a name that resolves to a private address"],
    ["http://metadata.google.internal/computeMetadata/v1/", "a name that resolves to the metadata address"],
  ])("refuses %s (%s) without a request", async (url) => {
    await expect(webFetch({ url })).rejects.toThrow(/^refused: .* a private, loopback, link-local or cloud-metadata address/);
    expect(hits).toEqual([]);
  });

  it("leaves no timer behind that fails later when it refuses a URL at once", async () => {
    // A pending time limit whose rejection nobody awaits would crash the program later on.
    await expect(webFetch({ url: "file:///etc/passwd", timeout: 0.05 })).rejects.toThrow(/^refused/);
    await expect(webFetch({ url: "not a url", timeout: 0.05 })).rejects.toThrow(/not a valid URL/);
    await new Promise((resolve) => setTimeout(resolve, 200)); // vitest fails the run on an unhandled rejection
  });

  it("refuses a name when any one of its addresses is private", async () => {
    useResolver(async () => ["93.184.215.14", "192.168.0.10"]);
    await expect(webFetch({ url: "https://mixed.example.com/" })).rejects.toThrow(/resolves to 192\.168\.0\.10/);
    expect(hits).toEqual([]);
  });

  it("lets a public address through (the catch-all answers)", async () => {
    expect(await webFetch({ url: `${DOCS}/` })).toBe("secret");
    expect(hits).toEqual([`${DOCS}/`]);
  });

  it("does not fetch a name it cannot resolve", async () => {
    await expect(webFetch({ url: "https://unknown.example.org/" })).rejects.toThrow(
      "cannot resolve unknown.example.org: unknown.example.org is not in the scenario's hosts",
    );
    expect(hits).toEqual([]);
  });

  it.each([
    [{}, '"url" must be a string'],
    [{ url: 42 }, '"url" must be a string'],
    [{ url: "docs.example.com/page" }, '"docs.example.com/page" is not a valid URL; give a full one such as https://example.com/page'],
    [{ url: `${DOCS}/`, timeout: "soon" }, '"timeout" must be a number of seconds above 0 (default 30, at most 120)'],
    [{ url: `${DOCS}/`, timeout: 0 }, '"timeout" must be a number of seconds above 0'],
    [{ url: `${DOCS}/`, timeout: -5 }, '"timeout" must be a number of seconds above 0'],
  ])("refuses bad input %j with a clear message", async (input, message) => {
    await expect(webFetch(input)).rejects.toThrow(message);
    expect(hits).toEqual([]);
  });
});

/** A real HTTP server on 127.0.0.1 for the test; `requests` lists the paths it was asked for. */
function useLocalServer(handle: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const state = { url: "", requests: [] as string[] };
  let server: http.Server;
  beforeEach(async () => {
    state.requests.length = 0;
    server = http.createServer((req, res) => {
      state.requests.push(req.url ?? "");
      handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return state;
}

describe("web_fetch against a real server: the loopback switch", () => {
  const local = useLocalServer((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("local secret"));

  it("is off by default: a fresh copy of the stage refuses loopback and sends nothing", async () => {
    vi.resetModules();
    const fresh = await import("../agents/s04_web_fetch.ts");
    expect(fresh).not.toBe(s04);
    await expect(Promise.resolve().then(() => fresh.TOOL_HANDLERS.web_fetch({ url: `${local.url}/` }))).rejects.toThrow(/^refused: 127\.0\.0\.1 is a private, loopback/);
    expect(local.requests).toEqual([]);
  });

  it("when a test turns it on, reaches 127.0.0.1 and nothing else private", async () => {
    allowLoopbackForTests(true);
    expect(await webFetch({ url: `${local.url}/` })).toBe("local secret");
    await expect(webFetch({ url: "http://10.0.0.1/" })).rejects.toThrow(/^refused/);
  });

  it("connects to the address it checked, without asking DNS again (no rebinding)", async () => {
    allowLoopbackForTests(true);
    let lookups = 0;
    // pinned.test exists only in this resolver: the system's DNS has never heard of it.
    useResolver(async () => (lookups++, ["127.0.0.1"]));
    const { port } = new URL(local.url);
    expect(await webFetch({ url: `http://pinned.test:${port}/` })).toBe("local secret");
    expect(lookups).toBe(1);
  });
});

describe("web_fetch against a real server: redirects, time and size", () => {
  const local = useLocalServer((req, res) => {
    const [, route, arg] = req.url!.split("/");
    if (route === "hops") {
      // /hops/3 -> /hops/2 -> /hops/1 -> /hops/0, relative Locations
      const left = Number(arg);
      if (left > 0) return void res.writeHead(302, { location: `/hops/${left - 1}` }).end();
      return void res.writeHead(200, { "content-type": "text/plain" }).end("arrived");
    }
    if (route === "to") return void res.writeHead(307, { location: decodeURIComponent(arg) }).end();
    if (route === "slow") {
      // Headers at once, then a byte every 50 ms forever: no single wait is long, the total is.
      res.writeHead(200, { "content-type": "text/plain" });
      const timer = setInterval(() => res.write("."), 50);
      return void res.on("close", () => {
        clearInterval(timer);
        slowClosed = true;
      });
    }
    if (route === "endless") {
      // No content-length, and it never ends: only the reader's cap can stop it.
      res.writeHead(200, { "content-type": "text/plain" });
      const chunk = "0123456789abcdef".repeat(4096);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
      };
      res.on("drain", pump);
      res.on("close", () => (endlessClosed = true));
      return pump();
    }
    res.writeHead(404).end();
  });
  let endlessClosed = false;
  let slowClosed = false;
  beforeEach(() => {
    allowLoopbackForTests(true);
    endlessClosed = false;
    slowClosed = false;
  });

  it("follows up to 5 redirects", async () => {
    expect(await webFetch({ url: `${local.url}/hops/5` })).toBe(`arrived\n\n(after redirects, this page is ${local.url}/hops/0)`);
    expect(local.requests).toHaveLength(6);
  });

  it("stops at the 6th redirect without following it", async () => {
    await expect(webFetch({ url: `${local.url}/hops/6` })).rejects.toThrow(
      `stopped after 5 redirects: ${local.url}/hops/1 redirects again, to /hops/0`,
    );
    expect(local.requests).toEqual(["/hops/6", "/hops/5", "/hops/4", "/hops/3", "/hops/2", "/hops/1"]);
  });

  it.each([
    ["http://169.254.169.254/latest/meta-data/iam/security-credentials/", /^refused: 169\.254\.169\.254 is a private/],
    ["http://[::ffff:a9fe:a9fe]/latest/meta-data/", /^refused: \[::ffff:a9fe:a9fe\] is a private/],
    ["http://192.168.1.1/admin", /^refused: 192\.168\.1\.1 is a private/],
    ["file:///etc/passwd", /^refused: web_fetch fetches only http and https URLs, not file:$/],
  ])("checks every hop again: a redirect to %s is refused", async (target, refusal) => {
    await expect(webFetch({ url: `${local.url}/to/${encodeURIComponent(target)}` })).rejects.toThrow(refusal);
  });

  it("gives up when the total time limit passes, even while bytes keep coming, and hangs up", async () => {
    const started = Date.now();
    await expect(webFetch({ url: `${local.url}/slow`, timeout: 0.4 })).rejects.toThrow(`timed out after 0.4s fetching ${local.url}/slow`);
    expect(Date.now() - started).toBeLessThan(1500);
    await vi.waitFor(() => expect(slowClosed).toBe(true), { timeout: 1000 });
  });

  it("cuts an endless body off at 10 MB and closes the connection, instead of buffering it", async () => {
    const text = await webFetch({ url: `${local.url}/endless`, timeout: 10 });
    expect(text).toMatch(/^(0123456789abcdef)+\n\.\.\. \[web_fetch shows 10000 of 10485760 characters; the body was cut off at 10 MB\]$/);
    await vi.waitFor(() => expect(endlessClosed).toBe(true), { timeout: 1000 });
  });
});

describe("s04's demo", () => {
  const replay = useReplay();

  it("gives the model the page as clean text, saves the notes, and refuses the metadata address", async () => {
    const scenario = loadScenario("s04");
    s04.prepareReplay(scenario);
    const session = replay(scenario);
    await runTurns(agentLoop, scenario.prompts);
    expect(session.verdict()).toEqual([]);

    const [page] = toolResults(session, 1);
    expect(page.tool_use_id).toBe("toolu_s04_demo_01");
    expect(page.is_error).toBeFalsy();
    const text = resultText(page);
    expect(text.split("\n").slice(0, 3)).toEqual(["Expiry and eviction · kvcache docs", "", "# Expiry and eviction"]);
    expect(text).toContain("- maxEntries (default 10,000) caps how many entries the cache holds.");
    expect(text).toContain("Call touch(key) to restart an entry's TTL without changing its value.");
    for (const junk of ["dataLayer", "font-family", "API reference", "kvcache contributors", "Search needs JavaScript", "<"]) {
      expect(text).not.toContain(junk);
    }

    const [saved] = toolResults(session, 2);
    expect(saved.tool_use_id).toBe("toolu_s04_demo_02");
    const written = scenario.replies[1].content.find((b) => b.type === "tool_use")!.input as { content: string };
    expect(readFileSync(path.join(workspace.dir, "notes/expiry.md"), "utf8")).toBe(written.content);

    const [metadata] = toolResults(session, 4);
    expect(metadata.tool_use_id).toBe("toolu_s04_demo_03");
    expect(metadata.is_error).toBe(true);
    expect(resultText(metadata)).toMatch(/^Error: refused: 169\.254\.169\.254 is a private, loopback, link-local or cloud-metadata address/);
  });

  it("replays as a program with no key and no network: the page comes from the fixture, through the scenario's hosts", async () => {
    const run = await runStage("s04", { cwd: workspace.dir });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("  Expiry and eviction · kvcache docs # Expiry and eviction");
    expect(run.stdout).toContain("Error: refused: 169.254.169.254");
    const [demo] = readdirSync(workspace.dir).filter((name) => name.startsWith("workbook-s04-"));
    expect(readFileSync(path.join(workspace.dir, demo, "notes/expiry.md"), "utf8")).toMatch(/^# kvcache: expiry and eviction/);
  });
});
