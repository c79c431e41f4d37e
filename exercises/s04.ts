// Exercise s04: web_fetch refuses private, loopback and link-local addresses, checked on the
// address a name resolves to and again at every redirect. The list of private ranges
// (PRIVATE), name resolution (lookUp), the pinned GET and the page reading are given;
// checkedAddresses and fetchFollowingRedirects are taken out.
//
// Pages are served by the replay engine's page handlers (lib/course/replay.ts) on a server that
// notes every request, so a check can tell "refused" from "fetched, then refused".
import { setupServer } from "msw/node";
import { replayHandlers } from "../lib/course/replay.ts";
import type { ScenarioPage } from "../lib/course/scenario.ts";
import { defineExercise, quote, reply, resultText, say, scenarioOf, toolResults, type CheckKit, type ToolAnswer } from "../lib/course/exercises.ts";

type Resolver = (host: string) => Promise<string[]>;

const PUBLIC = "93.184.215.14";
const HOSTS: Record<string, string[]> = {
  "docs.example.com": [PUBLIC],
  "mirror.example.org": ["93.184.215.20"],
  "intranet.example.com": ["10.0.0.7"],
  "metadata.google.internal": ["169.254.169.254"],
  localhost: ["127.0.0.1"],
  "two-faced.example.com": [PUBLIC, "192.168.1.10"],
  "v6-office.example.com": ["fd00::17"],
};
const INTERNAL = "internal page: must never be fetched";
const page = (title: string, text: string): ScenarioPage => ({ body: `<html><head><title>${title}</title></head><body><nav>menu</nav><p>${text}</p></body></html>` });
const redirect = (location: string, status = 302): ScenarioPage => ({ status, body: "", headers: { location } });

/**
 * Serve `pages` for this check (any URL not listed fails instead of reaching the network),
 * resolve names from HOSTS, and return web_fetch with the list of URLs it requested.
 */
function useWeb(t: CheckKit, pages: Record<string, ScenarioPage>) {
  const { handlers } = replayHandlers(scenarioOf([reply.text("unused")], { web: pages }));
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
        "the addresses url's host stands for (an IP as it is, a name through lookUp); throw if any of them is private, loopback or link-local (PRIVATE.check).",
        "url のホストが指すアドレス（IP ならそのまま、名前なら lookUp で解決）を返します。どれか1つでもプライベート、ループバック、リンクローカルなら throw します（PRIVATE.check）。",
      ),
    },
    {
      function: "fetchFollowingRedirects",
      task: say(
        "GET start; on a 3xx with a Location, check the new URL again and follow it, at most MAX_REDIRECTS times; otherwise read the page (readPage).",
        "start を GET します。Location 付きの 3xx なら、新しい URL をもう一度調べてからたどります（最大 MAX_REDIRECTS 回）。それ以外はページを読みます（readPage）。",
      ),
    },
  ],
  requirements: [
    {
      id: "public-page",
      title: say("A public page is fetched and comes back as text", "公開されたページは取得され、テキストとして返る"),
      hints: [
        say("Start with the path that works: a public name, one GET, the page as text. The pieces are in the file.", "まずうまくいく道筋から: 公開された名前、1回の GET、テキストにしたページ。部品はファイルにそろっています。"),
        say("checkedAddresses resolves the host (lookUp) and returns the addresses as { address, family }; fetchFollowingRedirects passes them to get(), then hands the response to readPage().", "checkedAddresses はホストを解決し（lookUp）、アドレスを { address, family } の形で返します。fetchFollowingRedirects はそれを get() に渡し、レスポンスを readPage() に渡します。"),
        say("const response = await get(url, await checkedAddresses(url), signal); return readPage(response, url, url.href !== start.href); and in checkedAddresses: return (await lookUp(host)).map((address) => ({ address, family: isIP(address) }));", "const response = await get(url, await checkedAddresses(url), signal); return readPage(response, url, url.href !== start.href); checkedAddresses では return (await lookUp(host)).map((address) => ({ address, family: isIP(address) }));"),
      ],
      async check(t) {
        const url = "https://docs.example.com/guide";
        const { fetch } = useWeb(t, { [url]: page("Guide", "Entries expire after their TTL.") });
        mustRead(t, url, await fetch({ url }), "Entries expire after their TTL.");
      },
    },
    {
      id: "private-literals",
      title: say("A URL whose host is a private, loopback or link-local IP address is refused before any request", "ホストがプライベート、ループバック、リンクローカルの IP アドレスである URL は、リクエストの前に拒否される"),
      hints: [
        say("Which addresses must an agent on your laptop or in the cloud never reach? Look at the list above checkedAddresses.", "ノートパソコンやクラウドで動くエージェントが決して行ってはいけないアドレスはどれでしょう。checkedAddresses の上のリストを見てください。"),
        say("An IP address in the URL needs no lookup: check it as it is. PRIVATE.check(address, \"ipv4\" or \"ipv6\") knows every range, including IPv4 written as IPv6. Mind the brackets of an IPv6 host: [::1].", "URL の中の IP アドレスは解決不要なので、そのまま調べます。PRIVATE.check(address, \"ipv4\" か \"ipv6\") がすべての範囲を知っています（IPv6 で書いた IPv4 も）。IPv6 のホストの角かっこ [::1] に注意します。"),
        say("const host = url.hostname.replace(/^\\[(.*)\\]$/, \"$1\"); const addresses = isIP(host) ? [host] : await lookUp(host); for (const a of addresses) if (PRIVATE.check(a, isIP(a) === 6 ? \"ipv6\" : \"ipv4\")) throw new Error(`refused: ${host} is a private address`);", "const host = url.hostname.replace(/^\\[(.*)\\]$/, \"$1\"); const addresses = isIP(host) ? [host] : await lookUp(host); for (const a of addresses) if (PRIVATE.check(a, isIP(a) === 6 ? \"ipv6\" : \"ipv4\")) throw new Error(`refused: ${host} is a private address`);"),
      ],
      async check(t) {
        const urls = [
          "http://10.0.0.7/admin",
          "http://192.168.1.1/",
          "http://127.0.0.1:8080/",
          "http://2130706433/", // 127.0.0.1 written as one number
          "http://169.254.169.254/latest/meta-data/",
          "http://[::1]/",
          "http://[fe80::1]/",
          "http://[::ffff:127.0.0.1]/",
        ];
        const { fetch, requested } = useWeb(t, Object.fromEntries(urls.map((url) => [url, page("Internal", INTERNAL)])));
        for (const url of urls) mustRefuse(t, url, await fetch({ url }), requested, urls);
      },
    },
    {
      id: "private-names",
      title: say(
        "A name is judged by the addresses it resolves to: refused when any of them is private (localhost, an intranet name, cloud metadata)",
        "名前は解決先のアドレスで判断する（どれか1つでもプライベートなら拒否: localhost、社内の名前、クラウドのメタデータ）",
      ),
      hints: [
        say("intranet.example.com looks public. What does it stand for?", "intranet.example.com は公開された名前に見えます。実際には何を指しているでしょう。"),
        say("Resolve the name (lookUp) and check every address it returns: one private address is enough to refuse, since the connection may use any of them.", "名前を解決し（lookUp）、返ってきたアドレスをすべて調べます。接続にはどれが使われるか分からないので、1つでもプライベートなら拒否します。"),
        say("const addresses = isIP(host) ? [host] : await lookUp(host); for (const address of addresses) { ...PRIVATE.check(...) -> throw } return addresses.map((address) => ({ address, family: isIP(address) }));", "const addresses = isIP(host) ? [host] : await lookUp(host); for (const address of addresses) { ...PRIVATE.check(...) -> throw } return addresses.map((address) => ({ address, family: isIP(address) }));"),
      ],
      async check(t) {
        const urls = [
          "http://intranet.example.com/admin",
          "http://metadata.google.internal/computeMetadata/v1/",
          "http://localhost:3000/",
          "https://two-faced.example.com/",
          "http://v6-office.example.com/",
        ];
        const { fetch, requested } = useWeb(t, Object.fromEntries(urls.map((url) => [url, page("Internal", INTERNAL)])));
        for (const url of urls) mustRefuse(t, url, await fetch({ url }), requested, urls);
      },
    },
    {
      id: "redirects-followed",
      title: say("A redirect to a public page is followed, relative or absolute, and the model gets the final page", "公開されたページへのリダイレクトは（相対でも絶対でも）たどられ、モデルには最後のページが返る"),
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
        });
        mustRead(t, "https://docs.example.com/old", await fetch({ url: "https://docs.example.com/old" }), "The page moved here.");
        mustRead(t, "https://docs.example.com/elsewhere", await fetch({ url: "https://docs.example.com/elsewhere" }), "A copy on the mirror.");
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
      title: say("Redirects stop after MAX_REDIRECTS (5) with an error, so a redirect loop cannot keep the agent busy", "リダイレクトは MAX_REDIRECTS（5回）で止まってエラーになり、リダイレクトのループでエージェントが足止めされない"),
      hints: [
        say("What does your loop do with a page that redirects to itself?", "自分自身にリダイレクトするページがあったら、あなたのループはどうなるでしょう。"),
        say("Count the redirects; when the count reaches MAX_REDIRECTS and the answer is yet another redirect, throw an error that says so.", "リダイレクトを数えます。数が MAX_REDIRECTS に達したのにまたリダイレクトが来たら、そう書いたエラーを throw します。"),
        say("if (redirects === MAX_REDIRECTS) throw new Error(`stopped after ${MAX_REDIRECTS} redirects: ${url} redirects again, to ${location}`);", "if (redirects === MAX_REDIRECTS) throw new Error(`stopped after ${MAX_REDIRECTS} redirects: ${url} redirects again, to ${location}`);"),
      ],
      async check(t) {
        const url = "https://docs.example.com/loop";
        const { fetch, requested } = useWeb(t, { [url]: redirect(url) });
        const answer = await t.within(5000, fetch({ url }), say(`web_fetch(${quote(url)}) was still following redirects after 5 s (${requested.length} requests)`, `web_fetch(${quote(url)}) が 5 秒たってもリダイレクトをたどり続けていました（リクエスト ${requested.length} 回）`));
        if (!answer.isError) t.fail(say(`a page that redirects to itself gave ${quote(answer.text)}`, `自分自身にリダイレクトするページで ${quote(answer.text)} が返りました`));
        if (requested.length > 6) t.fail(say(`web_fetch made ${requested.length} requests before it stopped`, `web_fetch は止まるまでに ${requested.length} 回リクエストしました`), say("at most 6 requests: the first and 5 redirects", "リクエストは最大6回（最初の1回とリダイレクト5回）"));
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
