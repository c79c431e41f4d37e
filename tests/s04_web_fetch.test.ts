// web_fetch as the model uses it, in every implementation of it (s04 and s05 share one, the
// capstone has its own): which URLs it takes, the SSRF check on every address of every hop,
// one clock for the whole fetch, and what the model reads back. The machinery it calls is
// tested once, against lib: the address tables in tests/machinery/addresses.test.ts, reading
// and decoding the body in tests/machinery/http-body.test.ts, HTML to text in
// tests/machinery/html-to-text.test.ts; here one case each shows a stage is wired to it.
// Pages come from msw (through the replay, as the model would see them) or, for what msw
// cannot play (slow, endless, compressed, redirecting responses), from a real HTTP server on
// loopback, which only the test-only switch lets web_fetch reach.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { http as mock } from "msw/core/http";
import { setupServer } from "msw/node";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario, type Scenario, type ScenarioPage } from "../lib/course/scenario.ts";
import { toolCall } from "../lib/course/tools.ts";
import {
  cpuSeconds, pumpUntilClosed, reply, resultText, runMain, runTurns, scenarioOf, stageFile, stagesWithTool, toolOf, toolResults, useLocalServer, useReplay,
  useWorkspace, type ToolCall,
} from "./helpers.ts";

/** What the tests use of a stage with web_fetch, besides the tool itself. */
interface WebStage {
  agentLoop(messages: MessageParam[]): Promise<void>;
  useResolver(resolver?: (host: string) => Promise<string[]>): void;
  resolverFrom(hosts?: Record<string, string>): (host: string) => Promise<string[]>;
  allowLoopbackForTests(allow: boolean): void;
  prepareReplay(scenario: Scenario): void;
  /** s04 and s05: the dispatch map; the capstone has a registry instead. */
  TOOL_HANDLERS?: object;
}

const DOCS = "https://docs.example.com";
const HOSTS = {
  "docs.example.com": "93.184.215.14",
  "intranet.example.com": "10.0.0.7",
  "metadata.google.internal": "169.254.169.254",
  "sixtofour.example.com": "2002:7f00:1::", // 127.0.0.1 inside 6to4
  "mapped.example.com": "::ffff:127.0.0.1",
  "zoned.example.com": "fe80::1%eth0",
};
const PUBLIC_INTERNET = "; web_fetch only reaches the public internet";
const MB = 1024 * 1024;

const workspace = useWorkspace();

// Every request msw sees is answered here, so a check that lets one through shows up as a hit.
const hits: string[] = [];
const network = setupServer(
  mock.all("*", ({ request }) => {
    hits.push(request.url);
    return new Response("secret");
  }),
);

// 10 MB of list items, a page that takes about a second to convert (ready as bytes, so serving it costs nothing).
const LONG_LIST = Buffer.from(`<ul>${"<li>x".repeat(Math.floor((10 * MB - 100) / 5))}`);

const stages = await stagesWithTool("web_fetch");

describe.each(stages)("%s web_fetch", (_id, file) => {
  // The capstone's web-fetch region is s05's text (tests/full.test.ts holds it to that): what
  // happens inside the handler over seconds and megabytes (the time limits, the 10 MB cut) is
  // timed for the first group only, about 1.5 s of processor time the suite saves per group.
  const timedHere = file === stages[0][1];
  let stage: WebStage;
  let webFetch: ToolCall;
  beforeAll(async () => {
    stage = (await import(file)) as WebStage;
    webFetch = await toolOf(file, "web_fetch");
  });
  beforeEach(() => {
    stage.useResolver(stage.resolverFrom(HOSTS)); // no DNS in tests: names resolve from this table
    vi.spyOn(console, "log").mockImplementation(() => {});
  });
  afterEach(() => {
    stage.useResolver();
    stage.allowLoopbackForTests(false);
    vi.restoreAllMocks();
  });

  describe("what the model receives for a page", () => {
    const replay = useReplay();

    /** One web_fetch call through the real loop, with `web` served by the replay; the model's tool result. */
    async function modelSees(input: Record<string, unknown>, web: Record<string, ScenarioPage>) {
      const session = replay(scenarioOf([reply.tools([{ id: "toolu_fetch", name: "web_fetch", input }]), reply.text("ok")], { web }));
      await stage.agentLoop([{ role: "user", content: "fetch it" }]);
      expect(session.verdict()).toEqual([]);
      const [result] = toolResults(session, 1);
      expect(result.tool_use_id).toBe("toolu_fetch");
      return { text: resultText(result), isError: result.is_error === true };
    }

    it("gives an HTML page as readable text: the title first, one line per heading, paragraph and list item, no nav, script, style, footer, noscript or svg", async () => {
      // The conversion is lib's (tests/machinery/html-to-text.test.ts); this shows web_fetch uses it.
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

    it("reports an HTTP error whose body is not text by what it is, never its bytes", async () => {
      const web = { [`${DOCS}/missing.pdf`]: { status: 404, contentType: "application/pdf", body: "%PDF-1.7 secret-bytes", headers: { "content-length": "21" } } };
      expect(await modelSees({ url: `${DOCS}/missing.pdf` }, web)).toEqual({
        text: `Error: HTTP 404 Not Found from ${DOCS}/missing.pdf (a PDF document (application/pdf, 21 bytes))`,
        isError: true,
      });
    });

    it("refuses a redirect to a name that resolves to a private address, without requesting it", async () => {
      const web = {
        [`${DOCS}/moved`]: { status: 302, body: "", headers: { location: "http://intranet.example.com/admin" } },
        "http://intranet.example.com/admin": { body: "<p>the intranet's admin page</p>" },
      };
      expect(await modelSees({ url: `${DOCS}/moved` }, web)).toEqual({
        text: `Error: refused: intranet.example.com resolves to 10.0.0.7, which is in 10.0.0.0/8 (private)${PUBLIC_INTERNET}`,
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

  describe("where it may not go", () => {
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

    // Which ranges are not public, and why, is lib's table (tests/machinery/addresses.test.ts,
    // every range at both ends). Here: that every way of writing an address in a URL, and every
    // address a name resolves to, reaches that table before any request.
    it.each([
      ["http://127.0.0.1/", "loopback"],
      ["http://127.1/", "loopback, short"],
      ["http://0x7f.1/", "loopback, hex"],
      ["http://2130706433/", "loopback, one decimal number"],
      ["http://017700000001/", "loopback, octal"],
      ["http://localhost/", "localhost"],
      ["http://LOCALHOST/", "localhost in capitals"],
      ["http://localhost./", "localhost with a trailing dot"],
      ["http://api.localhost/", "a name under localhost"],
      ["http://[::1]/", "IPv6 loopback"],
      ["http://0.0.0.0/", "unspecified"],
      ["http://[::]/", "IPv6 unspecified"],
      ["http://10.1.2.3/", "private 10/8"],
      ["http://169.254.169.254/latest/meta-data/", "cloud metadata"],
      ["http://0251.0376.0251.0376/", "cloud metadata, octal"],
      ["http://0xa9fea9fe/", "cloud metadata, hex"],
      ["http://[fd00:ec2::254]/", "AWS IPv6 metadata"],
      ["http://[fe80::1]/", "IPv6 link-local"],
      ["http://255.255.255.255/", "broadcast"],
      // IPv4 addresses carried inside IPv6, as the URL spells them
      ["http://[::ffff:127.0.0.1]/", "loopback, IPv4-mapped"],
      ["http://[::ffff:a9fe:a9fe]/", "cloud metadata, IPv4-mapped"],
      ["http://[2002:a9fe:a9fe::1]/", "cloud metadata through 6to4"],
      ["http://[64:ff9b::a9fe:a9fe]/", "cloud metadata through NAT64"],
      ["http://[64:ff9b::10.0.0.1]/", "a private address through NAT64, written with dots"],
      // names, resolved by the stage's resolver (here the table HOSTS)
      ["http://intranet.example.com/", "a name that resolves to a private address"],
      ["http://metadata.google.internal/computeMetadata/v1/", "a name that resolves to the metadata address"],
      ["http://sixtofour.example.com/", "a name that resolves to loopback through 6to4"],
      ["http://mapped.example.com/", "a name that resolves to loopback, IPv4-mapped with dots"],
      ["http://zoned.example.com/", "a name that resolves to link-local with a zone"],
    ])("refuses %s (%s) without a request", async (url) => {
      await expect(webFetch({ url })).rejects.toThrow(/^refused: \S+ (is|resolves to \S+, which is) .+; web_fetch only reaches the public internet$/);
      expect(hits).toEqual([]);
    });

    it.each([
      ["http://[::127.0.0.1]/", "[::7f00:1] is outside 2000::/3, where every public IPv6 address is"],
      ["http://[2002:7f00:1::]/", "[2002:7f00:1::] is 127.0.0.1 through 6to4, in 127.0.0.0/8 (loopback)"],
      ["http://[::ffff:a9fe:a9fe]/", "[::ffff:a9fe:a9fe] is 169.254.169.254 written as IPv6, in 169.254.0.0/16 (link-local; cloud metadata is 169.254.169.254)"],
      ["http://[64:ff9b::10.0.0.1]/", "[64:ff9b::a00:1] is 10.0.0.1 through NAT64, in 10.0.0.0/8 (private)"],
      ["http://198.18.0.1/", "198.18.0.1 is in 198.18.0.0/15 (benchmarking)"],
      ["http://localhost./", "localhost. resolves to 127.0.0.1, which is in 127.0.0.0/8 (loopback)"],
      ["http://sixtofour.example.com/", "sixtofour.example.com resolves to 2002:7f00:1::, which is 127.0.0.1 through 6to4, in 127.0.0.0/8 (loopback)"],
      ["http://zoned.example.com/", "zoned.example.com resolves to fe80::1%eth0, which is in fe80::/10 (link-local)"],
    ])("says why it refuses %s", async (url, why) => {
      await expect(webFetch({ url })).rejects.toThrow(new Error(`refused: ${why}${PUBLIC_INTERNET}`));
    });

    it.each([
      ["http://93.184.215.14/", "a public IPv4 address"],
      ["http://[2606:2800:220:1:248:1893:25c8:1946]/", "a public IPv6 address"],
      ["http://[::ffff:93.184.215.14]/", "a public IPv4 address, IPv4-mapped"],
      [`${DOCS}/`, "a name that resolves to a public address"],
    ])("lets %s through (%s)", async (url) => {
      expect(await webFetch({ url })).toBe("secret");
      expect(hits).toEqual([new URL(url).href]);
    });

    it("refuses a name when any one of its addresses is private", async () => {
      stage.useResolver(async () => ["93.184.215.14", "192.168.0.10"]);
      await expect(webFetch({ url: "https://mixed.example.com/" })).rejects.toThrow(/resolves to 192\.168\.0\.10/);
      expect(hits).toEqual([]);
    });

    it.each(["https://user:s3cret@docs.example.com/", "https://user@docs.example.com/", "https://:s3cret@docs.example.com/"])(
      "refuses a URL with credentials in it (%s), and does not repeat them",
      async (url) => {
        const refusal = await webFetch({ url }).then(String, (error: Error) => error.message);
        expect(refusal).toBe("refused: the URL carries a user name or password (user:password@); web_fetch sends no credentials, so give the URL without them");
        expect(hits).toEqual([]);
      },
    );

    it("leaves no timer behind that fails later when it refuses a URL at once", async () => {
      // A pending time limit whose rejection nobody awaits would crash the program later on.
      await expect(webFetch({ url: "file:///etc/passwd", timeout: 0.05 })).rejects.toThrow(/^refused/);
      await expect(webFetch({ url: "not a url", timeout: 0.05 })).rejects.toThrow(/not a valid URL/);
      await new Promise((resolve) => setTimeout(resolve, 200)); // vitest fails the run on an unhandled rejection
    });

    it("takes a timeout of null as not given, as a model sends what it leaves out", async () => {
      await expect(webFetch({ url: "https://unknown.example.org/", timeout: null })).rejects.toThrow("cannot resolve unknown.example.org");
      expect(hits).toEqual([]);
    });

    it("does not fetch a name it cannot resolve", async () => {
      await expect(webFetch({ url: "https://unknown.example.org/" })).rejects.toThrow(
        "cannot resolve unknown.example.org: unknown.example.org is not in the scenario's hosts",
      );
      expect(hits).toEqual([]);
    });

    it("refuses a name whose resolver answers with something that is not an IP address", async () => {
      stage.useResolver(async () => ["intranet"]);
      await expect(webFetch({ url: "https://odd.example.com/" })).rejects.toThrow('odd.example.com resolved to "intranet", which is not an IP address');
      expect(hits).toEqual([]);
    });

    // A stage with a registry checks the types against the tool's JSON Schema first, in the
    // schema's words (the third column); the tool's own checks come after.
    it.each([
      [{}, '"url" must be a string', '"url" is required'],
      [{ url: 42 }, '"url" must be a string', '"url" must be a string'],
      [{ url: "docs.example.com/page" }, '"docs.example.com/page" is not a valid URL; give a full one such as https://example.com/page', undefined],
      [{ url: `${DOCS}/`, timeout: "soon" }, '"timeout" must be a number of seconds above 0 (default 30, at most 120)', '"timeout" must be a number'],
      [{ url: `${DOCS}/`, timeout: 0 }, '"timeout" must be a number of seconds above 0', undefined],
      [{ url: `${DOCS}/`, timeout: -5 }, '"timeout" must be a number of seconds above 0', undefined],
    ])("refuses bad input %j with a clear message", async (input, message, schemaMessage) => {
      await expect(webFetch(input)).rejects.toThrow(stage.TOOL_HANDLERS ? message : (schemaMessage ?? message));
      expect(hits).toEqual([]);
    });
  });

  describe("against a real server: the loopback switch", () => {
    const local = useLocalServer((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("local secret"));

    it("is off by default: a fresh copy of the stage refuses loopback and sends nothing", async () => {
      vi.resetModules();
      const fresh = await import(file);
      expect(fresh).not.toBe(stage);
      await expect(Promise.resolve().then(() => toolCall(fresh, "web_fetch")!({ url: `${local.url}/` }))).rejects.toThrow(/^refused: 127\.0\.0\.1 is in 127\.0\.0\.0\/8 \(loopback\)/);
      expect(local.requests).toEqual([]);
    });

    it("when a test turns it on, reaches 127.0.0.1 and nothing else private", async () => {
      stage.allowLoopbackForTests(true);
      expect(await webFetch({ url: `${local.url}/` })).toBe("local secret");
      await expect(webFetch({ url: "http://10.0.0.1/" })).rejects.toThrow(/^refused/);
    });

    it("connects to the address it checked, without asking DNS again (no rebinding)", async () => {
      stage.allowLoopbackForTests(true);
      let lookups = 0;
      // pinned.test exists only in this resolver: the system's DNS has never heard of it.
      stage.useResolver(async () => (lookups++, ["127.0.0.1"]));
      const { port } = new URL(local.url);
      expect(await webFetch({ url: `http://pinned.test:${port}/` })).toBe("local secret");
      expect(lookups).toBe(1);
    });

    it("takes localhost to mean this machine, whatever the resolver would say, and never asks it", async () => {
      stage.allowLoopbackForTests(true);
      let lookups = 0;
      stage.useResolver(async () => (lookups++, ["93.184.215.14"]));
      const { port } = new URL(local.url);
      expect(await webFetch({ url: `http://localhost:${port}/` })).toBe("local secret");
      expect(await webFetch({ url: `http://api.localhost.:${port}/` })).toBe("local secret");
      expect(lookups).toBe(0);
    });

    it("names no stage in its user agent, and asks for the compressions it can decode", async () => {
      stage.allowLoopbackForTests(true);
      await webFetch({ url: `${local.url}/` });
      expect(local.headers[0]["user-agent"]).toBe("agent-workbook (web_fetch)");
      expect(local.headers[0]["accept-encoding"]).toBe("gzip, deflate, br");
    });

    it("refuses credentials in the URL before any request, so the server never sees them", async () => {
      stage.allowLoopbackForTests(true);
      const withCredentials = local.url.replace("http://", "http://user:s3cret@");
      await expect(webFetch({ url: `${withCredentials}/` })).rejects.toThrow(/^refused: the URL carries a user name or password/);
      expect(local.requests).toEqual([]);
    });
  });

  describe("against a real server: redirects, time and size", () => {
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
          closed = true;
        });
      }
      if (route === "late") {
        // A page that takes a second to convert, all at once, and its end half a second later: the conversion starts then.
        res.writeHead(200, { "content-type": "text/html" });
        res.write(LONG_LIST);
        const timer = setTimeout(() => res.end(), 500);
        return void res.on("close", () => clearTimeout(timer));
      }
      if (route === "endless") {
        // No content-length, and it never ends: only the reader's cap can stop it.
        res.writeHead(200, { "content-type": "text/plain" });
        return pumpUntilClosed(res, "0123456789abcdef".repeat(4096), () => (closed = true));
      }
      res.writeHead(404).end();
    });
    let closed = false;
    beforeEach(() => {
      stage.allowLoopbackForTests(true);
      closed = false;
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
      ["http://169.254.169.254/latest/meta-data/iam/security-credentials/", /^refused: 169\.254\.169\.254 is in 169\.254\.0\.0\/16 \(link-local/],
      ["http://[::ffff:a9fe:a9fe]/latest/meta-data/", /^refused: \[::ffff:a9fe:a9fe\] is 169\.254\.169\.254 written as IPv6/],
      ["http://[2002:a9fe:a9fe::]/latest/meta-data/", /^refused: \[2002:a9fe:a9fe::\] is 169\.254\.169\.254 through 6to4/],
      ["http://192.168.1.1/admin", /^refused: 192\.168\.1\.1 is in 192\.168\.0\.0\/16 \(private\)/],
      ["http://[fd00:ec2::254]/latest/meta-data/", /^refused: \[fd00:ec2::254\] is in fc00::\/7 \(unique local/],
      ["http://intranet.example.com/admin", /^refused: intranet\.example\.com resolves to 10\.0\.0\.7, which is in 10\.0\.0\.0\/8 \(private\)/],
      ["http://user:s3cret@docs.example.com/", /^refused: the URL carries a user name or password/],
      ["file:///etc/passwd", /^refused: web_fetch fetches only http and https URLs, not file:$/],
    ])("checks every hop again: a redirect to %s is refused", async (target, refusal) => {
      await expect(webFetch({ url: `${local.url}/to/${encodeURIComponent(target)}` })).rejects.toThrow(refusal);
      expect(local.requests).toHaveLength(1);
    });

    it.runIf(timedHere)("gives up when the total time limit passes, even while bytes keep coming, and hangs up", async () => {
      const started = Date.now();
      await expect(webFetch({ url: `${local.url}/slow`, timeout: 0.4 })).rejects.toThrow(`timed out after 0.4s fetching ${local.url}/slow`);
      expect(Date.now() - started).toBeLessThan(1500);
      await vi.waitFor(() => expect(closed).toBe(true), { timeout: 1000 });
    });

    it("gives up when a name takes too long to resolve: the clock starts before the lookup", async () => {
      stage.useResolver(() => new Promise(() => {})); // a DNS server that never answers
      const started = Date.now();
      await expect(webFetch({ url: "https://hangs.example.com/", timeout: 0.2 })).rejects.toThrow("timed out after 0.2s fetching https://hangs.example.com/");
      expect(Date.now() - started).toBeLessThan(1000);
    });

    it.runIf(timedHere)("counts the conversion against the time limit: a page that takes too long to convert times out, and the conversion stops", async () => {
      // The page has arrived whole at 0.5 s; converting it takes longer than what is left.
      const started = Date.now();
      await expect(webFetch({ url: `${local.url}/late`, timeout: 0.6 })).rejects.toThrow(`timed out after 0.6s fetching ${local.url}/late`);
      // On time, give or take a busy machine. (That the conversion lets the timer fire at all is
      // lib's, tested in tests/machinery/html-to-text.test.ts.)
      expect(Date.now() - started).toBeLessThan(2500);
      // Converting this page whole takes about 1 s of CPU. A conversion the stage did not give its
      // clock goes on after the answer: 0.4 to 1.1 s of CPU in the next 1.5 s, measured on a
      // loaded 2-core machine, against 0.02 s at most when it stops; a collection of the garbage
      // the page left may take 0.1 s.
      const { seconds } = await cpuSeconds(() => new Promise((resolve) => setTimeout(resolve, 1500)));
      expect(seconds).toBeLessThan(0.25);
    });

    it.runIf(timedHere)("cuts an endless body off at 10 MB and closes the connection, and tells the model so", async () => {
      const text = await webFetch({ url: `${local.url}/endless`, timeout: 10 });
      expect(text).toMatch(/^(0123456789abcdef)+\n\.\.\. \[web_fetch shows 10000 of 10485760 characters; the body was cut off at 10 MB\]$/);
      await vi.waitFor(() => expect(closed).toBe(true), { timeout: 1000 });
    });
  });

  describe("against a real server: the body, read by lib", () => {
    // Decompressing, capping and decoding are lib's (tests/machinery/http-body.test.ts); this
    // shows web_fetch reads its bodies through them.
    const PAGE = Buffer.from("<title>Caf\xe9</title><h1>Packed</h1><p>This page came gzipped, in windows-1252: \x93quoted\x94.</p>", "latin1");
    const local = useLocalServer((req, res) => {
      const [, route] = req.url!.split("/");
      if (route === "page") {
        return void res.writeHead(200, { "content-type": "text/html; charset=windows-1252", "content-encoding": "gzip" }).end(zlib.gzipSync(PAGE));
      }
      if (route === "zstd") return void res.writeHead(200, { "content-type": "text/plain", "content-encoding": "zstd" }).end("\x28\xb5\x2f\xfd");
      res.writeHead(404).end();
    });
    beforeEach(() => stage.allowLoopbackForTests(true));

    it("decodes a gzip body in the charset the server names, and gives the page as text", async () => {
      expect(await webFetch({ url: `${local.url}/page` })).toBe("Café\n\n# Packed\nThis page came gzipped, in windows-1252: “quoted”.");
    });

    it("tells the model which encoding it could not decode", async () => {
      await expect(webFetch({ url: `${local.url}/zstd` })).rejects.toThrow(
        new Error('the server sent the body encoded as "zstd", which web_fetch cannot decode (it asks for gzip, deflate or br)'),
      );
    });
  });
});

describe("s04's demo", () => {
  const replay = useReplay();
  let s04: WebStage;
  beforeAll(async () => {
    s04 = (await import("../agents/s04_web_fetch.ts")) as unknown as WebStage;
  });
  beforeEach(() => vi.spyOn(console, "log").mockImplementation(() => {}));
  afterEach(() => {
    s04.useResolver();
    vi.restoreAllMocks();
  });

  it("gives the model the page as clean text, saves the notes, and refuses the metadata address", async () => {
    const scenario = loadScenario("s04");
    s04.prepareReplay(scenario);
    const session = replay(scenario);
    await runTurns(s04.agentLoop, scenario.prompts);
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
    expect(resultText(metadata)).toBe(`Error: refused: 169.254.169.254 is in 169.254.0.0/16 (link-local; cloud metadata is 169.254.169.254)${PUBLIC_INTERNET}`);
  });

  it("replays as a program with no key and no network: the page comes from the fixture, through the scenario's hosts", async () => {
    vi.restoreAllMocks(); // the program's own printing is what this test reads
    vi.stubEnv("TMPDIR", workspace.dir);
    const run = await runMain(stageFile("s04")).finally(() => vi.unstubAllEnvs());
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain("Expiry and eviction · kvcache docs");
    expect(run.output).toContain("Error: refused: 169.254.169.254");
    const [demo] = readdirSync(workspace.dir).filter((name) => name.startsWith("workbook-s04-"));
    expect(readFileSync(path.join(workspace.dir, demo, "notes/expiry.md"), "utf8")).toMatch(/^# kvcache: expiry and eviction/);
  });
});
