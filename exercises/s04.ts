// Exercise s04: web_fetch refuses private, loopback and link-local addresses, checked on the
// address a name resolves to and again at every redirect, and connects only to the addresses
// it checked. Which addresses are not public (notPublic, lib/machinery/addresses.ts), name
// resolution (lookUp), the pinned GET and the page reading are given; checkedAddresses and
// fetchFollowingRedirects are taken out.
//
// Pages are served by the replay engine's page handlers (lib/course/replay.ts) on a server that
// notes every request, so a check can tell "refused" from "fetched, then refused". That server
// answers without connecting anywhere, so the check of where the connection goes (DNS
// rebinding) carries each connection to a server on this machine instead, by the address the
// connection looked up, and stands in for DNS there as well.
import dns from "node:dns";
import http from "node:http";
import net, { type AddressInfo, type LookupFunction } from "node:net";
import { http as web } from "msw/core/http";
import { setupServer } from "msw/node";
import { replayHandlers } from "../lib/course/replay.ts";
import type { ScenarioPage } from "../lib/course/scenario.ts";
import { defineExercise, quote, reply, resultText, say, scenarioOf, toolResults, type CheckKit, type ToolAnswer } from "../lib/course/exercises.ts";

type Resolver = (host: string) => Promise<string[]>;

const PUBLIC = "93.184.215.14";
const PUBLIC_V6 = "2606:2800:21f:cb07:6820:80da:af6b:8b2c";
const HOSTS: Record<string, string[]> = {
  "docs.example.com": [PUBLIC],
  "mirror.example.org": ["93.184.215.20"],
  "intranet.example.com": ["10.0.0.7"],
  "metadata.google.internal": ["169.254.169.254"],
  localhost: ["127.0.0.1"],
  "two-faced.example.com": [PUBLIC, "192.168.1.10"],
  "v6-office.example.com": ["fd00::17"],
  "mapped.example.com": ["::ffff:169.254.169.254"], // IPv4 written as IPv6: the metadata address
  // A DNS server that does not know localhost's rule answers these like any other name.
  "localhost.": [PUBLIC],
  "api.localhost": [PUBLIC],
};
const INTERNAL = "internal page: must never be fetched";
const page = (title: string, text: string): ScenarioPage => ({ body: `<html><head><title>${title}</title></head><body><nav>menu</nav><p>${text}</p></body></html>` });
const redirect = (location: string, status = 302): ScenarioPage => ({ status, body: "", headers: { location } });

/**
 * Serve `pages` for this check (any URL not listed fails instead of reaching the network),
 * resolve names from HOSTS, and return web_fetch with the list of URLs it requested.
 */
function useWeb(t: CheckKit, pages: Record<string, ScenarioPage>) {
  // msw reads the colons of an IPv6 host ([2606:...]) as parameters: those pages match as a pattern.
  const v6 = (url: string) => new URL(url).hostname.startsWith("[");
  const { handlers } = replayHandlers(scenarioOf([reply.text("unused")], { web: Object.fromEntries(Object.entries(pages).filter(([url]) => !v6(url))) }));
  for (const [url, served] of Object.entries(pages).filter(([url]) => v6(url))) {
    const exactly = new RegExp(`^${new URL(url).href.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
    handlers.push(web.get(exactly, () => new Response(served.body, { status: served.status ?? 200, headers: { "content-type": "text/html; charset=utf-8", ...served.headers } })));
  }
  const server = setupServer(...handlers);
  const requested: string[] = [];
  server.events.on("request:start", ({ request }) => void requested.push(request.url));
  server.listen({ onUnhandledRequest: "error" });
  t.cleanup(() => server.close());
  const useResolver = t.stage.useResolver as ((resolver?: Resolver) => void) | undefined;
  if (typeof useResolver !== "function") t.fail(say("the copy no longer exports useResolver, which the checks use instead of DNS", "コピーが useResolver を export していません（チェックは DNS の代わりにこれを使います）"));
  useResolver(async (host) => {
    if (!Object.hasOwn(HOSTS, host)) throw new Error(`${host} does not resolve`);
    return HOSTS[host];
  });
  // A fetch the check gave up on must not reach the network afterwards.
  t.cleanup(() => useResolver(async (host) => Promise.reject(new Error(`no network during the checks (${host})`))));
  return { fetch: t.tool("web_fetch"), requested };
}

const REBINDING = "rebinding.example.com";
const REBOUND = "10.0.0.7";
const CHECKED_PAGE = "The page at the address that was checked.";

/**
 * A name that changes its answer (DNS rebinding), and a network to connect through, both
 * played on this machine. Through the stage's resolver REBINDING answers PUBLIC the first time
 * and REBOUND (private) every time after; the system's DNS (dns.lookup, which a connection
 * uses when nothing pins it) knows no name at all. A connection made with node:http looks the
 * name up as it would (its own lookup, pinned or not) and is then carried to a server on
 * 127.0.0.1 that plays the address it got: PUBLIC serves CHECKED_PAGE, REBOUND notes what
 * reached it; any other address is refused. Nothing leaves the machine.
 */
async function rebindingSite(t: CheckKit): Promise<{ seen: { lookups: number; systemLookups: number; reached: string[] } }> {
  const useResolver = t.stage.useResolver as ((resolver?: Resolver) => void) | undefined;
  if (typeof useResolver !== "function") t.fail(say("the copy no longer exports useResolver, which the checks use instead of DNS", "コピーが useResolver を export していません（チェックは DNS の代わりにこれを使います）"));
  const seen = { lookups: 0, systemLookups: 0, reached: [] as string[] };
  const plain = (text: string) => http.createServer((_request, response) => response.writeHead(200, { "content-type": "text/plain" }).end(text));
  const servers = new Map([
    [PUBLIC, await listen(plain(CHECKED_PAGE))],
    [REBOUND, await listen(plain(INTERNAL))],
  ]);
  t.cleanup(() => servers.forEach(stop));

  useResolver(async (host) => {
    if (host !== REBINDING) throw new Error(`${host} does not resolve`);
    seen.lookups += 1;
    return [seen.lookups === 1 ? PUBLIC : REBOUND];
  });
  t.cleanup(() => useResolver(async (host) => Promise.reject(new Error(`no network during the checks (${host})`))));

  const systemLookup = dns.lookup;
  dns.lookup = ((host: string, ...rest: unknown[]) => {
    seen.systemLookups += 1;
    const callback = rest.at(-1) as (error: Error) => void;
    process.nextTick(callback, Object.assign(new Error(`getaddrinfo ENOTFOUND ${host} (no DNS during the checks)`), { code: "ENOTFOUND" }));
  }) as unknown as typeof dns.lookup;
  t.cleanup(() => (dns.lookup = systemLookup));

  const agent = http.globalAgent as unknown as { createConnection: (options: { host?: string; lookup?: LookupFunction }, callback?: () => void) => net.Socket };
  const own = Object.hasOwn(agent, "createConnection");
  const connect = agent.createConnection;
  agent.createConnection = (options, callback) => {
    const socket = new net.Socket();
    const lookup = options.lookup ?? dns.lookup;
    lookup(options.host ?? "localhost", { all: false }, (error, address) => {
      if (error) return void socket.destroy(error);
      const where = typeof address === "string" ? address : address[0]?.address;
      seen.reached.push(where);
      const server = servers.get(where);
      if (!server) return void socket.destroy(new Error(`connect ECONNREFUSED ${where} (no network during the checks)`));
      socket.connect((server.address() as AddressInfo).port, "127.0.0.1", callback);
    });
    return socket;
  };
  t.cleanup(() => (own ? (agent.createConnection = connect) : delete (agent as Partial<typeof agent>).createConnection));
  return { seen };
}

function stop(server: http.Server): void {
  server.closeAllConnections();
  server.close();
}

function listen(server: http.Server): Promise<http.Server> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

function mustRefuse(t: CheckKit, url: string, answer: ToolAnswer, requested: string[], forbidden: string[]): void {
  const reached = requested.filter((href) => forbidden.some((f) => new URL(href).href === new URL(f).href));
  if (reached.length > 0) {
    t.fail(say(`web_fetch(${quote(url)}) requested ${reached.join(", ")}; a private address must be refused before any request`, `web_fetch(${quote(url)}) が ${reached.join(", ")} にリクエストしました。プライベートなアドレスはリクエストの前に拒否します`));
  }
  if (!answer.isError || answer.text.includes(INTERNAL)) {
    t.fail(say(`web_fetch(${quote(url)}) was not refused; the model got ${quote(answer.text)}`, `web_fetch(${quote(url)}) が拒否されず、モデルに ${quote(answer.text)} が返りました`));
  }
}

function mustRead(t: CheckKit, url: string, answer: ToolAnswer, text: string): void {
  if (answer.isError || !answer.text.includes(text)) {
    t.fail(say(`web_fetch(${quote(url)}) gave the model ${quote(answer.text)}, not the page`, `web_fetch(${quote(url)}) がページではなく ${quote(answer.text)} をモデルに返しました`), say(`the page's text, with ${quote(text)}`, `${quote(text)} を含むページのテキスト`));
  }
}

export default defineExercise({
  stage: "s04",
  title: say("Refusing private addresses", "プライベートなアドレスを拒否する"),
  mechanism: say(
    "checkedAddresses (every address a host resolves to, checked) and fetchFollowingRedirects (the check again at every redirect)",
    "checkedAddresses（ホストが解決されるすべてのアドレスを調べる）と fetchFollowingRedirects（リダイレクトのたびにもう一度調べる）",
  ),
  minutes: 30,
  takeOut: [
    {
      function: "checkedAddresses",
      task: say(
        "the addresses url's host stands for (an IP as it is, localhost and *.localhost as 127.0.0.1, a name through lookUp); throw if any of them is not public (notPublic says why).",
        "url のホストが指すアドレス（IP ならそのまま、localhost と *.localhost は 127.0.0.1、名前なら lookUp で解決）を返します。どれか1つでも公開されたアドレスでなければ throw します（notPublic が理由を返します）。",
      ),
    },
    {
      function: "fetchFollowingRedirects",
      task: say(
        "GET start, connected to the addresses checkedAddresses returned; on a 3xx with a Location, check the new URL again and follow it, at most MAX_REDIRECTS times; otherwise read the page (readResponse).",
        "checkedAddresses が返したアドレスに接続して start を GET します。Location 付きの 3xx なら、新しい URL をもう一度調べてからたどります（最大 MAX_REDIRECTS 回）。それ以外はページを読みます（readResponse）。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "only the first URL is checked, not each redirect",
      change: [
        [
          "    const response = await get(url, await checkedAddresses(url), signal);",
          "    const addresses = url === start ? await checkedAddresses(url) : (await lookUp(url.hostname)).map((address) => ({ address, family: isIP(address) }));\n    const response = await get(url, addresses, signal);",
        ],
      ],
      fails: "redirect-to-private",
    },
    {
      name: "the name is checked, not the addresses it resolves to",
      change: [["  for (const address of addresses) {", "  for (const address of isIP(host) ? addresses : []) {"]],
      fails: "private-names",
    },
    {
      name: "only the first address of a name is checked",
      change: [["  for (const address of addresses) {", "  for (const address of addresses.slice(0, 1)) {"]],
      fails: "private-names",
    },
    {
      name: "IPv6 addresses judged by their own prefixes, so IPv4 written as IPv6 goes through",
      change: [["    const why = notPublic(address);", '    const why = family === 4 ? notPublic(address) : /^(::1?$|f[c-f])/i.test(address) ? "not a public IPv6 address" : undefined;']],
      fails: "private-literals",
    },
    {
      name: "only the name localhost itself is this machine",
      change: [["/^(.+\\.)?localhost\\.?$/i.test(host)", 'host === "localhost"']],
      fails: "localhost",
    },
    {
      name: "localhost left to the resolver",
      change: [['isIP(host) ? [host] : /^(.+\\.)?localhost\\.?$/i.test(host) ? ["127.0.0.1"] : await lookUp(host)', "isIP(host) ? [host] : await lookUp(host)"]],
      fails: "localhost",
    },
    {
      name: "the brackets of an IPv6 host kept, so no IPv6 address can be fetched",
      change: [['  const host = url.hostname.replace(/^\\[(.*)\\]$/, "$1"); // [::1] -> ::1', "  const host = url.hostname;"]],
      fails: "public-page",
    },
    {
      name: "checked, then looked up again for the connection (DNS rebinding)",
      change: [
        [
          "    const response = await get(url, await checkedAddresses(url), signal);",
          "    await checkedAddresses(url);\n    const response = await get(url, (await lookUp(url.hostname)).map((address) => ({ address, family: isIP(address) })), signal);",
        ],
      ],
      fails: "pinned",
    },
    {
      name: "the connection's own lookup not pinned to the checked addresses",
      change: [["{ headers, signal, lookup: pinnedLookup(addresses) }", "{ headers, signal }"]],
      fails: "pinned",
    },
    {
      name: "the addresses checked, but not handed to the connection",
      change: [["    const response = await get(url, await checkedAddresses(url), signal);", "    await checkedAddresses(url);\n    const response = await get(url, [], signal);"]],
      fails: "pinned",
    },
    {
      name: "a relative Location resolved against the first URL",
      change: [["    url = webUrl(location, url);", "    url = webUrl(location, start);"]],
      fails: "redirects-followed",
    },
    {
      name: "a Location taken as a whole URL, so a relative one fails",
      change: [["    url = webUrl(location, url);", "    url = webUrl(location);"]],
      fails: "redirects-followed",
    },
    {
      name: "off by one: stops after four redirects",
      change: [["if (redirects === MAX_REDIRECTS) throw", "if (redirects + 1 === MAX_REDIRECTS) throw"]],
      fails: "redirect-limit",
    },
    {
      name: "off by one: follows six redirects",
      change: [["if (redirects === MAX_REDIRECTS) throw", "if (redirects > MAX_REDIRECTS) throw"]],
      fails: "redirect-limit",
    },
  ],
  requirements: [
    {
      id: "public-page",
      title: say("A public page is fetched and comes back as text, by name or by its IP address (IPv4 or IPv6)", "公開されたページは、名前でも IP アドレス（IPv4 でも IPv6 でも）でも取得され、テキストとして返る"),
      hints: [
        say("Start with the path that works: a public name, one GET, the page as text. The pieces are in the file.", "まずうまくいく道筋から: 公開された名前、1回の GET、テキストにしたページ。部品はファイルにそろっています。"),
        say(
          "checkedAddresses resolves the host (lookUp; an IP address needs none, and an IPv6 host comes in brackets, [::1]) and returns the addresses as { address, family }; fetchFollowingRedirects passes them to get(), then hands the response to readResponse().",
          "checkedAddresses はホストを解決し（lookUp。IP アドレスなら解決は不要で、IPv6 のホストは [::1] のように角かっこ付きで来ます）、アドレスを { address, family } の形で返します。fetchFollowingRedirects はそれを get() に渡し、レスポンスを readResponse() に渡します。",
        ),
        say(
          'const response = await get(url, await checkedAddresses(url), signal); return readResponse(response, url, url.href !== start.href, signal); and in checkedAddresses: const host = url.hostname.replace(/^\\[(.*)\\]$/, "$1"); const addresses = isIP(host) ? [host] : await lookUp(host); return addresses.map((address) => ({ address, family: isIP(address) }));',
          'const response = await get(url, await checkedAddresses(url), signal); return readResponse(response, url, url.href !== start.href, signal); checkedAddresses では const host = url.hostname.replace(/^\\[(.*)\\]$/, "$1"); const addresses = isIP(host) ? [host] : await lookUp(host); return addresses.map((address) => ({ address, family: isIP(address) }));',
        ),
      ],
      async check(t) {
        const pages: [url: string, text: string][] = [
          ["https://docs.example.com/guide", "Entries expire after their TTL."],
          [`http://${PUBLIC}/status`, "All systems normal."],
          [`http://[${PUBLIC_V6}]/about`, "Served over IPv6."],
        ];
        const { fetch } = useWeb(t, Object.fromEntries(pages.map(([url, text]) => [url, page("Page", text)])));
        for (const [url, text] of pages) mustRead(t, url, await fetch({ url }), text);
      },
    },
    {
      id: "private-literals",
      title: say("A URL whose host is a private, loopback or link-local IP address is refused before any request", "ホストがプライベート、ループバック、リンクローカルの IP アドレスである URL は、リクエストの前に拒否される"),
      hints: [
        say("Which addresses must an agent on your laptop or in the cloud never reach? The stage imports a function that knows them all.", "ノートパソコンやクラウドで動くエージェントが決して行ってはいけないアドレスはどれでしょう。そのすべてを知っている関数を、ステージが import しています。"),
        say("An IP address in the URL needs no lookup: check it as it is, IPv4 and IPv6 alike. notPublic(address) knows every range, including IPv4 written as IPv6, and says why. Mind the brackets of an IPv6 host: [::1].", "URL の中の IP アドレスは解決不要なので、IPv4 も IPv6 も同じように、そのまま調べます。notPublic(address) がすべての範囲を知っていて（IPv6 で書いた IPv4 も）、理由を返します。IPv6 のホストの角かっこ [::1] に注意します。"),
        say("const host = url.hostname.replace(/^\\[(.*)\\]$/, \"$1\"); const addresses = isIP(host) ? [host] : await lookUp(host); for (const a of addresses) { const why = notPublic(a); if (why) throw new Error(`refused: ${host} is ${why}`); }", "const host = url.hostname.replace(/^\\[(.*)\\]$/, \"$1\"); const addresses = isIP(host) ? [host] : await lookUp(host); for (const a of addresses) { const why = notPublic(a); if (why) throw new Error(`refused: ${host} is ${why}`); }"),
      ],
      async check(t) {
        const urls = [
          "http://10.0.0.7/admin",
          "http://192.168.1.1/",
          "http://127.0.0.1:8080/",
          "http://2130706433/", // 127.0.0.1 written as one number
          "http://169.254.169.254/latest/meta-data/",
          "http://0.0.0.0:8080/", // "this network": a connection to it reaches this machine
          "http://[::1]/",
          "http://[fe80::1]/",
          "http://[::ffff:127.0.0.1]/", // IPv4 written as IPv6
          "http://[fd00:ec2::254]/", // AWS's metadata over IPv6
        ];
        const { fetch, requested } = useWeb(t, Object.fromEntries(urls.map((url) => [url, page("Internal", INTERNAL)])));
        for (const url of urls) mustRefuse(t, url, await fetch({ url }), requested, urls);
      },
    },
    {
      id: "private-names",
      title: say(
        "A name is judged by every address it resolves to: refused when any of them is not public (an intranet name, cloud metadata, IPv4 written as IPv6)",
        "名前は解決先のすべてのアドレスで判断する（どれか1つでも公開されたアドレスでなければ拒否: 社内の名前、クラウドのメタデータ、IPv6 で書いた IPv4）",
      ),
      hints: [
        say("intranet.example.com looks public. What does it stand for?", "intranet.example.com は公開された名前に見えます。実際には何を指しているでしょう。"),
        say("Resolve the name (lookUp) and check every address it returns: one private address is enough to refuse, since the connection may use any of them.", "名前を解決し（lookUp）、返ってきたアドレスをすべて調べます。接続にはどれが使われるか分からないので、1つでもプライベートなら拒否します。"),
        say("const addresses = isIP(host) ? [host] : await lookUp(host); for (const address of addresses) { const why = notPublic(address); if (why) throw ... } return addresses.map((address) => ({ address, family: isIP(address) }));", "const addresses = isIP(host) ? [host] : await lookUp(host); for (const address of addresses) { const why = notPublic(address); if (why) throw ... } return addresses.map((address) => ({ address, family: isIP(address) }));"),
      ],
      async check(t) {
        const urls = [
          "http://intranet.example.com/admin",
          "http://metadata.google.internal/computeMetadata/v1/",
          "http://localhost:3000/",
          "https://two-faced.example.com/",
          "http://v6-office.example.com/",
          "http://mapped.example.com/",
        ];
        const { fetch, requested } = useWeb(t, Object.fromEntries(urls.map((url) => [url, page("Internal", INTERNAL)])));
        for (const url of urls) mustRefuse(t, url, await fetch({ url }), requested, urls);
      },
    },
    {
      id: "localhost",
      title: say(
        "localhost, localhost. and any name ending in .localhost are this machine, whatever the resolver answers: refused before any request",
        "localhost、localhost.、.localhost で終わる名前はこのマシンのことで、リゾルバが何と答えても、リクエストの前に拒否される",
      ),
      hints: [
        say("Which names mean this machine? Is localhost the only way to write it?", "このマシンを指す名前はどれでしょう。書き方は localhost だけでしょうか。"),
        say(
          "localhost, localhost. (with the final dot) and every name under .localhost are this machine by rule, and a resolver may not know the rule: take them as 127.0.0.1 without asking lookUp, then check that address as any other.",
          "localhost、最後に点のある localhost.、.localhost の下のすべての名前は、決まりとしてこのマシンを指します。リゾルバがその決まりを知っているとは限りません。lookUp に尋ねずに 127.0.0.1 として扱い、そのアドレスをほかと同じように調べます。",
        ),
        say(
          'const addresses = isIP(host) ? [host] : /^(.+\\.)?localhost\\.?$/i.test(host) ? ["127.0.0.1"] : await lookUp(host);',
          'const addresses = isIP(host) ? [host] : /^(.+\\.)?localhost\\.?$/i.test(host) ? ["127.0.0.1"] : await lookUp(host);',
        ),
      ],
      async check(t) {
        // The check's resolver answers localhost with 127.0.0.1, and the other two with a public
        // address, as a DNS server that does not know the rule would.
        const urls = ["http://localhost:3000/", "http://localhost.:3000/", "http://api.localhost:3000/"];
        const { fetch, requested } = useWeb(t, Object.fromEntries(urls.map((url) => [url, page("This machine", INTERNAL)])));
        for (const url of urls) mustRefuse(t, url, await fetch({ url }), requested, urls);
      },
    },
    {
      id: "redirects-followed",
      title: say(
        "A redirect to a public page is followed, absolute or relative (to the page that sent it), and the model gets the final page",
        "公開されたページへのリダイレクトは（絶対でも、送ってきたページからの相対でも）たどられ、モデルには最後のページが返る",
      ),
      hints: [
        say("A 301 or 302 answer has no page in it, only a Location header that says where the page went.", "301 や 302 の応答にはページが入っていません。ページの移った先を示す Location ヘッダがあるだけです。"),
        say("Loop: GET, and if the status is 3xx with a Location, make the next URL from it (webUrl(location, url) also handles a relative one) and go round again.", "ループにします。GET して、ステータスが 3xx で Location があれば、そこから次の URL を作り（webUrl(location, url) は相対の Location も扱えます）、もう一度回ります。"),
        say("for (let redirects = 0; ; redirects++) { const response = await get(url, await checkedAddresses(url), signal); const location = response.headers.location; if (status < 300 || status > 399 || !location) return readPage(...); response.destroy(); url = webUrl(location, url); }", "for (let redirects = 0; ; redirects++) { const response = await get(url, await checkedAddresses(url), signal); const location = response.headers.location; if (status < 300 || status > 399 || !location) return readPage(...); response.destroy(); url = webUrl(location, url); }"),
      ],
      async check(t) {
        const { fetch } = useWeb(t, {
          "https://docs.example.com/old": redirect("/new", 301),
          "https://docs.example.com/new": page("New", "The page moved here."),
          "https://docs.example.com/elsewhere": redirect("https://mirror.example.org/copy"),
          "https://mirror.example.org/copy": page("Mirror", "A copy on the mirror."),
          // A relative Location is relative to the page that sent it, not to the first URL.
          "https://docs.example.com/archive": redirect("https://mirror.example.org/v1/"),
          "https://mirror.example.org/v1/": redirect("latest", 301),
          "https://mirror.example.org/v1/latest": page("Latest", "The latest version, on the mirror."),
        });
        mustRead(t, "https://docs.example.com/old", await fetch({ url: "https://docs.example.com/old" }), "The page moved here.");
        mustRead(t, "https://docs.example.com/elsewhere", await fetch({ url: "https://docs.example.com/elsewhere" }), "A copy on the mirror.");
        mustRead(t, "https://docs.example.com/archive", await fetch({ url: "https://docs.example.com/archive" }), "The latest version, on the mirror.");
      },
    },
    {
      id: "redirect-to-private",
      title: say("A redirect to a private address is refused before it is requested, at any hop", "プライベートなアドレスへのリダイレクトは、何回目であっても、リクエストの前に拒否される"),
      hints: [
        say("The first URL was public. Is the second one?", "最初の URL は公開されたものでした。2つ目もそうでしょうか。"),
        say("A redirect is a new URL from outside: check it exactly as you checked the first, before requesting it. Calling checkedAddresses inside the loop, for every URL, does that.", "リダイレクトは外から来た新しい URL です。リクエストする前に、最初の URL とまったく同じように調べます。ループの中で、どの URL にも checkedAddresses を呼べばそうなります。"),
        say("Inside the loop: const response = await get(url, await checkedAddresses(url), signal); so the check runs again after url = webUrl(location, url).", "ループの中で const response = await get(url, await checkedAddresses(url), signal); とすれば、url = webUrl(location, url) のあとにも調べ直されます。"),
      ],
      async check(t) {
        const forbidden = ["http://intranet.example.com/admin", "http://169.254.169.254/latest/meta-data/"];
        const { fetch, requested } = useWeb(t, {
          "https://docs.example.com/to-intranet": redirect(forbidden[0]),
          "https://docs.example.com/to-metadata": redirect(forbidden[1]),
          "https://docs.example.com/hop": redirect("https://mirror.example.org/hop"),
          "https://mirror.example.org/hop": redirect(forbidden[0]),
          [forbidden[0]]: page("Intranet", INTERNAL),
          [forbidden[1]]: page("Metadata", INTERNAL),
        });
        for (const url of ["https://docs.example.com/to-intranet", "https://docs.example.com/to-metadata", "https://docs.example.com/hop"]) {
          mustRefuse(t, url, await fetch({ url }), requested, forbidden);
        }
      },
    },
    {
      id: "redirect-limit",
      title: say(
        "MAX_REDIRECTS (5) redirects are followed, and one more is an error, so a redirect loop cannot keep the agent busy",
        "リダイレクトは MAX_REDIRECTS（5回）までたどり、それを超えるとエラーになる。リダイレクトのループでエージェントが足止めされない",
      ),
      hints: [
        say("What does your loop do with a page that redirects to itself?", "自分自身にリダイレクトするページがあったら、あなたのループはどうなるでしょう。"),
        say(
          "Count the redirects followed; when MAX_REDIRECTS have been followed and the answer is yet another redirect, throw an error that says so. A chain of exactly MAX_REDIRECTS still reaches its page.",
          "たどったリダイレクトを数えます。MAX_REDIRECTS 回たどったのにまたリダイレクトが来たら、そう書いたエラーを throw します。ちょうど MAX_REDIRECTS 回のリダイレクトなら、最後のページまで届きます。",
        ),
        say("if (redirects === MAX_REDIRECTS) throw new Error(`stopped after ${MAX_REDIRECTS} redirects: ${url} redirects again, to ${location}`);", "if (redirects === MAX_REDIRECTS) throw new Error(`stopped after ${MAX_REDIRECTS} redirects: ${url} redirects again, to ${location}`);"),
      ],
      async check(t) {
        const url = "https://docs.example.com/loop";
        // chain/0 -> chain/1 -> ... -> chain/5, the page: exactly five redirects.
        const chain = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`https://docs.example.com/chain/${i}`, redirect(`/chain/${i + 1}`)]));
        const { fetch, requested } = useWeb(t, { [url]: redirect(url), ...chain, "https://docs.example.com/chain/5": page("End", "The end of the chain.") });
        const first = "https://docs.example.com/chain/0";
        mustRead(t, first, await fetch({ url: first }), "The end of the chain.");
        const before = requested.length;
        const answer = await t.within(5000, fetch({ url }), say(`web_fetch(${quote(url)}) was still following redirects after 5 s (${requested.length - before} requests)`, `web_fetch(${quote(url)}) が 5 秒たってもリダイレクトをたどり続けていました（リクエスト ${requested.length - before} 回）`));
        if (!answer.isError) t.fail(say(`a page that redirects to itself gave ${quote(answer.text)}`, `自分自身にリダイレクトするページで ${quote(answer.text)} が返りました`));
        const made = requested.length - before;
        if (made > 6) t.fail(say(`for a page that redirects to itself, web_fetch made ${made} requests before it stopped`, `自分自身にリダイレクトするページで、web_fetch は止まるまでに ${made} 回リクエストしました`), say("at most 6 requests: the first and 5 redirects", "リクエストは最大6回（最初の1回とリダイレクト5回）"));
      },
    },
    {
      id: "pinned",
      title: say(
        "The connection goes to the addresses that were checked: the name is not looked up again, so a name that changes its answer (DNS rebinding) cannot lead elsewhere",
        "接続先は調べたアドレスそのもので、名前をもう一度引かない。答えを変える名前（DNS リバインディング）でも別の場所には行かない",
      ),
      hints: [
        say(
          "A name can answer one address when you check it, and another a moment later, when the connection looks it up again.",
          "名前は、調べたときには1つのアドレスを答え、少しあとに接続がもう一度引いたときには別のアドレスを答えることがあります。",
        ),
        say(
          "checkedAddresses returns the addresses it checked: hand exactly those to get(), which answers the connection's own lookup with them (pinnedLookup). Never resolve the name a second time for the connection.",
          "checkedAddresses は調べたアドレスを返します。それをそのまま get() に渡します。get() は接続自身の名前解決に、そのアドレスで答えます（pinnedLookup）。接続のために名前をもう一度解決してはいけません。",
        ),
        say(
          "const response = await get(url, await checkedAddresses(url), signal); // the checked addresses, and no other lookup",
          "const response = await get(url, await checkedAddresses(url), signal); // 調べたアドレスを渡し、ほかに名前解決はしない",
        ),
      ],
      async check(t) {
        const { seen } = await rebindingSite(t);
        const url = `http://${REBINDING}/page`;
        const answer = await t.within(5000, t.tool("web_fetch")({ url }), say(`web_fetch(${quote(url)}) had not answered after 5 s`, `web_fetch(${quote(url)}) が 5 秒たっても答えませんでした`));
        const elsewhere = seen.reached.filter((address) => address !== PUBLIC);
        if (seen.systemLookups > 0 || seen.lookups > 1 || elsewhere.length > 0) {
          const how =
            seen.systemLookups > 0
              ? say("the connection looked the name up again by itself (the system's DNS)", "接続が自分で名前をもう一度引きました（システムの DNS）")
              : seen.lookups > 1
                ? say(`the name was looked up ${seen.lookups} times for one fetch`, `1回の取得で名前が ${seen.lookups} 回引かれました`)
                : say("the connection did not use the address that was checked", "接続が調べたアドレスを使いませんでした");
          const went = elsewhere.length > 0 ? say(`, and the request went to ${elsewhere.join(", ")}`, `。リクエストは ${elsewhere.join(", ")} に行きました`) : say("", "");
          t.fail(
            say(
              `${REBINDING} answered ${PUBLIC} when it was checked and ${REBOUND} after that; ${how.en}${went.en}. web_fetch gave the model ${quote(answer.text)}`,
              `${REBINDING} は調べたときには ${PUBLIC}、そのあとは ${REBOUND} と答えました。${how.ja}${went.ja}。web_fetch がモデルに返したのは ${quote(answer.text)} です`,
            ),
            say(`one lookup, and the request to ${PUBLIC}, the address that was checked`, `名前解決は1回で、リクエストは調べたアドレス ${PUBLIC} へ`),
          );
        }
        mustRead(t, url, answer, CHECKED_PAGE);
      },
    },
    {
      id: "demo",
      title: say("Plays the stage's recorded demo: the documentation page is read and saved, the metadata address is refused", "ステージの記録済みデモを再生できる（ドキュメントのページを読んで保存し、メタデータのアドレスは拒否する）"),
      hints: [
        say("Run your copy: npx tsx workshop/s04.ts, and read the two web_fetch results.", "コピーを動かして、2つの web_fetch の結果を読んでみます: npx tsx workshop/s04.ts"),
        say("The demo fetches a page on docs.example.com (which the replay resolves to a public address), then http://169.254.169.254/, which must be refused.", "デモは docs.example.com のページ（再生では公開アドレスに解決されます）を取得し、次に http://169.254.169.254/ を頼みます。こちらは拒否されなければいけません。"),
        say("If the checks above pass and this one fails, read the message: it names the result or the file that differs.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを読んでください。違っている結果やファイルを示しています。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        const [fetched] = toolResults(session.requests, 1);
        if (!fetched || fetched.is_error) t.fail(say(`the documentation page gave the model ${quote(fetched ? resultText(fetched) : "nothing")}`, `ドキュメントのページでモデルに ${quote(fetched ? resultText(fetched) : "なし")} が返りました`));
        if (!t.read("notes/expiry.md")) t.fail(say("notes/expiry.md was not written", "notes/expiry.md が書かれていません"));
        const [metadata] = toolResults(session.requests, session.requests.length - 1);
        if (!metadata?.is_error) t.fail(say(`http://169.254.169.254/ gave the model ${quote(metadata ? resultText(metadata) : "nothing")}, not a refusal`, `http://169.254.169.254/ で拒否ではなく ${quote(metadata ? resultText(metadata) : "なし")} がモデルに返りました`));
      },
    },
  ],
});
