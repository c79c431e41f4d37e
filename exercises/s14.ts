// Exercise s14: the cache's breakpoints and the session's accounting. The client the loop
// calls (it places the breakpoints, counts the usage and starts a turn's tally), the price
// table, the turn's line and /cost are given; withBreakpoints, addUsage and costOf are taken
// out. The checks read the requests the model received as the API's cache would
// (lib/course/cache.ts: what each request reads back of the ones before), and what the
// program printed after each turn.
import type { Message, MessageCreateParams, MessageCreateParamsNonStreaming, MessageParam, Tool } from "@anthropic-ai/sdk/resources/messages";
import { CACHE_RULE, promptCache, requestTokens } from "../lib/course/cache.ts";
import { apiProblem } from "../lib/course/replay.ts";
import { defineExercise, quote, reply, say, scenarioOf, type CheckKit, type ReplayedSession } from "../lib/course/exercises.ts";

type Price = { input: number; output: number; cache_write: number; cache_read: number };
type Tally = { requests: number; input: number; output: number; cacheRead: number; cacheWrite: number };

/** The stage's own functions the checks call besides the loop. */
const stageOf = (t: CheckKit) =>
  t.stage as unknown as {
    withBreakpoints(request: MessageCreateParamsNonStreaming): MessageCreateParamsNonStreaming;
    costOf(tally: Tally, price: Price, options?: { cached?: boolean }): number;
    sessionTally(): Tally;
    prepareReplay(): void;
    TOOLS: Tool[];
  };

/** The API's rule with no shortest prefix: the checks' requests are short, and what matters is where the breakpoints are. */
const anyLength = { ...CACHE_RULE, minTokens: 0 };

const read = (path: string) => ({ name: "read_file", input: { path } });
const costing = (message: Message, usage: Record<string, unknown> | undefined): Message => ({ ...message, usage }) as unknown as Message;
const turnLines = (t: CheckKit) => t.printed.filter((line) => line.startsWith("[this turn:"));

/** Where a request's breakpoints are, in words: "the tool bash", "the system prompt's block 0", "message 3's block 1". */
function breakpointsOf(request: MessageCreateParams): string[] {
  type Block = { cache_control?: unknown; content?: unknown };
  const places: string[] = [];
  for (const tool of request.tools ?? []) if ((tool as Block).cache_control) places.push(`the tool ${(tool as Tool).name}`);
  if (Array.isArray(request.system)) request.system.forEach((block, i) => (block as Block).cache_control && places.push(`the system prompt's block ${i}`));
  request.messages.forEach((message, i) => {
    if ((message as Block).cache_control) places.push(`message ${i + 1} itself`);
    if (Array.isArray(message.content)) (message.content as Block[]).forEach((block, j) => block.cache_control && places.push(`message ${i + 1}'s block ${j}`));
  });
  return places;
}

/** The session, once no turn ended with an error and it replayed as recorded. */
async function played(t: CheckKit, replies: Message[]): Promise<ReplayedSession> {
  stageOf(t).prepareReplay();
  const session = await t.replay(scenarioOf(replies));
  for (const error of session.turnErrors) {
    const text = error instanceof Error ? error.message : String(error);
    t.fail(say(`a turn ended with an error: ${text}`, `ターンがエラーで終わりました: ${text}`));
  }
  return t.asRecorded(session);
}

/** A request of the stage's own shape, with its breakpoints placed by the learner's withBreakpoints. */
function request(t: CheckKit, system: string, messages: MessageParam[]): MessageCreateParamsNonStreaming {
  return stageOf(t).withBreakpoints({ model: "claude-sonnet-5-5", max_tokens: 100, system, tools: stageOf(t).TOOLS, messages });
}

export default defineExercise({
  stage: "s14",
  title: say("Caching and cost", "キャッシュと費用"),
  mechanism: say(
    "withBreakpoints, addUsage and costOf: cache_control on the last tool, the system prompt and the newest message of a copy of each request; each reply's usage added to the turn and the session; their cost in dollars, with the cache and without it",
    "withBreakpoints、addUsage、costOf: リクエストのコピーの最後のツール、システムプロンプト、最新のメッセージに cache_control を置く。返答ごとの usage をターンとセッションに足す。その費用をキャッシュありとなしのドルで出す",
  ),
  minutes: 35,
  takeOut: [
    {
      function: "withBreakpoints",
      task: say(
        "return a copy of the request with cache_control (CACHED) on its last tool, on its system prompt (a string becomes one text block) and on the last block of its newest message that can take one (cacheable); never change the request you were given.",
        "リクエストのコピーを返します。最後のツール、システムプロンプト(文字列なら1つのテキストブロックにします)、最新のメッセージのうち cache_control を付けられる最後のブロック(cacheable)に cache_control(CACHED)を置きます。渡されたリクエストは変えません。",
      ),
    },
    {
      function: "addUsage",
      task: say(
        "add one request and its usage (input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens) to both tallies, `session` and `turn`; a count that is missing or no count (tokens() says) adds nothing.",
        "リクエスト1つとその usage(input_tokens、output_tokens、cache_read_input_tokens、cache_creation_input_tokens)を `session` と `turn` の両方の集計に足します。ない値や数でない値は何も足しません(tokens() で判断します)。",
      ),
    },
    {
      function: "costOf",
      task: say(
        "the dollars of a tally at a price (per million tokens): input at input, output at output, cache reads at cache_read and cache writes at cache_write; with { cached: false }, every input token at the input price.",
        "集計のドルを価格(100万トークンあたり)から計算します。input は input、output は output、キャッシュの読み込みは cache_read、書き込みは cache_write の価格です。{ cached: false } のときは、入力のトークンをすべて input の価格で数えます。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the newest message marked in the loop's own history: the markers pile up until the API refuses a fifth",
      change: [["  const withMark = content.map((block, i) => (i === at ? ({ ...block, cache_control: CACHED } as ContentBlockParam) : block));", "  (content[at] as { cache_control?: unknown }).cache_control = CACHED;\n  const withMark = content;"]],
      fails: "a-copy",
    },
    {
      name: "the last block of every message marked, to cache more",
      change: [["  marked.messages = [...messages.slice(0, -1), { ...newest, content: withMark } as MessageParam];", "  const lastMarked = (m: MessageParam) => (typeof m.content === \"string\" ? [{ type: \"text\" as const, text: m.content }] : m.content).map((b, i, all) => (i === all.length - 1 ? { ...b, cache_control: CACHED } : b));\n  marked.messages = [...messages.slice(0, -1).map((m) => ({ ...m, content: lastMarked(m) }) as MessageParam), { ...newest, content: withMark } as MessageParam];"]],
      fails: "a-copy",
    },
    {
      name: "the first block of the newest message marked, not the last",
      change: [["  let at = content.length - 1;\n  while (at >= 0 && !cacheable(content[at])) at--;", "  let at = content.findIndex(cacheable);"]],
      fails: "reads-back",
    },
    {
      name: "the newest message not marked: only the tools and the system prompt are cached",
      change: [["  marked.messages = [...messages.slice(0, -1), { ...newest, content: withMark } as MessageParam];", "  void withMark;"]],
      fails: "reads-back",
    },
    {
      name: "the marker on the message itself, not on its block",
      change: [["  marked.messages = [...messages.slice(0, -1), { ...newest, content: withMark } as MessageParam];", "  void withMark;\n  marked.messages = [...messages.slice(0, -1), { ...newest, cache_control: CACHED } as MessageParam];"]],
      fails: "reads-back",
    },
    {
      name: "the first tool marked, not the last",
      change: [["marked.tools = [...tools.slice(0, -1), { ...tools[tools.length - 1], cache_control: CACHED }];", "marked.tools = [{ ...tools[0], cache_control: CACHED }, ...tools.slice(1)];"]],
      fails: "layers",
    },
    {
      name: "no breakpoint on the system prompt (a string cannot carry one, so it is left as it is)",
      change: [["  if (systemBlocks.length > 0) marked.system =", "  if (systemBlocks.length < 0) marked.system ="]],
      fails: "layers",
    },
    {
      name: "the newest message's last block marked whatever it is, a thinking block or an empty text too",
      change: [["  while (at >= 0 && !cacheable(content[at])) at--;\n", ""]],
      fails: "cacheable",
    },
    {
      name: "the turn's tally not counted, only the session's: every turn's line reads zero",
      change: [["  for (const tally of [session, turn]) {", "  for (const tally of [session]) {"]],
      fails: "usage-counted",
    },
    {
      name: "the cache's tokens not counted: only input and output",
      change: [["    tally.cacheRead += tokens(usage?.cache_read_input_tokens);\n    tally.cacheWrite += tokens(usage?.cache_creation_input_tokens);\n", ""]],
      fails: "usage-counted",
    },
    {
      name: "cache reads and cache writes swapped",
      change: [["    tally.cacheRead += tokens(usage?.cache_read_input_tokens);\n    tally.cacheWrite += tokens(usage?.cache_creation_input_tokens);", "    tally.cacheRead += tokens(usage?.cache_creation_input_tokens);\n    tally.cacheWrite += tokens(usage?.cache_read_input_tokens);"]],
      fails: "usage-counted",
    },
    {
      name: "the usage added as it comes: a count that is missing or no number makes NaN",
      change: [
        ["    tally.input += tokens(usage?.input_tokens);", "    tally.input += usage?.input_tokens as number;"],
        ["    tally.output += tokens(usage?.output_tokens);", "    tally.output += usage?.output_tokens as number;"],
      ],
      fails: "bad-usage",
    },
    {
      name: "cache reads priced as plain input",
      change: [["  const read = cached ? price.cache_read : price.input;", "  const read = price.input;"]],
      fails: "cost",
    },
    {
      name: "cache writes priced as plain input",
      change: [["  const write = cached ? price.cache_write : price.input;", "  const write = price.input;"]],
      fails: "cost",
    },
    {
      name: "the cost without the cache still at the cache's prices",
      change: [
        ["  const read = cached ? price.cache_read : price.input;", "  const read = price.cache_read;"],
        ["  const write = cached ? price.cache_write : price.input;", "  const write = price.cache_write;"],
      ],
      fails: "cost",
    },
    {
      name: "per thousand tokens, not per million",
      change: [["tally.output * price.output) / 1e6;", "tally.output * price.output) / 1e3;"]],
      fails: "cost",
    },
  ],
  requirements: [
    {
      id: "reads-back",
      title: say(
        "Each request carries a breakpoint on its newest message's last block, so a cache that follows the API's rule reads back, at every request, everything the one before sent",
        "どのリクエストも最新のメッセージの最後のブロックにブレークポイントを持ち、API の規則どおりのキャッシュが、毎回そのひとつ前のリクエストが送ったものをすべて読み戻す",
      ),
      hints: [
        say(
          "The next request starts with everything this one sends. Where must this one end its cached prefix so that the next can read it all?",
          "次のリクエストは、今回送るものすべてで始まります。次がすべてを読めるように、今回キャッシュする部分をどこで終えればよいでしょう。",
        ),
        say(
          "Copy the newest message and its content: a string becomes [{ type: \"text\", text }]; put cache_control on the last block that can take one (cacheable), on the copy, never on the message itself.",
          "最新のメッセージとその content をコピーします。文字列なら [{ type: \"text\", text }] にします。cache_control を付けられる最後のブロック(cacheable)に、コピーの上で付けます。メッセージそのものには付けません。",
        ),
        say(
          "let at = content.length - 1; while (at >= 0 && !cacheable(content[at])) at--; marked.messages = [...messages.slice(0, -1), { ...newest, content: content.map((b, i) => (i === at ? { ...b, cache_control: CACHED } : b)) }];",
          "let at = content.length - 1; while (at >= 0 && !cacheable(content[at])) at--; marked.messages = [...messages.slice(0, -1), { ...newest, content: content.map((b, i) => (i === at ? { ...b, cache_control: CACHED } : b)) }];",
        ),
      ],
      async check(t) {
        t.write("a.txt", "A");
        t.write("b.txt", "B");
        // Two results side by side: the newest message of the third request has two blocks.
        const session = await played(t, [reply.tools([read("a.txt"), read("b.txt")]), reply.tools([read("a.txt")]), reply.text("done"), reply.text("again")]);
        const cache = promptCache(anyLength);
        session.requests.forEach((sent, i) => {
          const got = cache.send(sent).cache_read_input_tokens;
          const before = i > 0 ? requestTokens(session.requests[i - 1]) : 0;
          if (i > 0 && got !== before) {
            t.fail(
              say(
                `request ${i + 1} read back ${got} of the ${before} tokens (estimated) request ${i} sent; its breakpoints: ${quote(breakpointsOf(sent))}, request ${i}'s: ${quote(breakpointsOf(session.requests[i - 1]))}`,
                `リクエスト ${i + 1} が読み戻したのは、リクエスト ${i} が送った ${before} トークン(推定)のうち ${got} でした。ブレークポイントは ${quote(breakpointsOf(sent))}、リクエスト ${i} は ${quote(breakpointsOf(session.requests[i - 1]))} です`,
              ),
            );
          }
        });
      },
    },
    {
      id: "layers",
      title: say(
        "The last tool and the system prompt carry a breakpoint too: with a new conversation the tools and the system prompt are read back, with a new system prompt the tools still are",
        "最後のツールとシステムプロンプトにもブレークポイントがある。会話が変わってもツールとシステムプロンプトが、システムプロンプトが変わってもツールが読み戻される",
      ),
      hints: [
        say(
          "A cache reads only up to a breakpoint, in the order tools, system, messages. What can a request reuse when only its messages differ? When its system prompt differs?",
          "キャッシュはブレークポイントまでしか読みません。順番はツール、システム、メッセージです。メッセージだけが違うリクエストは何を使い回せるでしょう。システムプロンプトが違うときは?",
        ),
        say(
          "Mark the last tool of a copy of the tools array, and the last block of the system prompt; a string system prompt becomes one text block, which can carry cache_control.",
          "tools 配列のコピーの最後のツールと、システムプロンプトの最後のブロックに印を付けます。文字列のシステムプロンプトは1つのテキストブロックにすれば、cache_control を付けられます。",
        ),
        say(
          "marked.tools = [...tools.slice(0, -1), { ...tools[tools.length - 1], cache_control: CACHED }]; marked.system = [{ type: \"text\", text: system, cache_control: CACHED }];",
          "marked.tools = [...tools.slice(0, -1), { ...tools[tools.length - 1], cache_control: CACHED }]; marked.system = [{ type: \"text\", text: system, cache_control: CACHED }];",
        ),
      ],
      async check(t) {
        const tools = stageOf(t).TOOLS;
        const cache = promptCache(anyLength);
        cache.send(request(t, "System prompt A.", [{ role: "user", content: "first question" }]));
        const cases: [string, { en: string; ja: string }, MessageCreateParamsNonStreaming, number][] = [
          [
            "messages",
            say("a second conversation with the same system prompt", "同じシステムプロンプトの2つ目の会話"),
            request(t, "System prompt A.", [{ role: "user", content: "another question" }]),
            requestTokens({ model: "claude-sonnet-5-5", max_tokens: 100, system: "System prompt A.", tools, messages: [] }),
          ],
          [
            "system",
            say("a conversation with another system prompt", "別のシステムプロンプトの会話"),
            request(t, "System prompt B.", [{ role: "user", content: "first question" }]),
            requestTokens({ model: "claude-sonnet-5-5", max_tokens: 100, tools, messages: [] }),
          ],
        ];
        for (const [, what, sent, expected] of cases) {
          const got = cache.send(sent).cache_read_input_tokens;
          if (got !== expected) {
            t.fail(
              say(`${what.en} read back ${got} tokens (estimated), not the ${expected} before it that did not change; its breakpoints: ${quote(breakpointsOf(sent))}`, `${what.ja}が読み戻したのは ${got} トークン(推定)で、変わっていない前半の ${expected} ではありませんでした。ブレークポイントは ${quote(breakpointsOf(sent))} です`),
            );
          }
        }
      },
    },
    {
      id: "a-copy",
      title: say(
        "The breakpoints go on a copy: the request given is not changed, the loop's history never holds one, and no request of a long session carries more than the API's 4",
        "ブレークポイントはコピーに置く。渡されたリクエストは変わらず、ループの履歴には1つも残らず、長いセッションでもどのリクエストも API の上限の4つを超えない",
      ),
      hints: [
        say(
          "The loop passes its own messages array. What happens to the next request if you put cache_control on a block of that array?",
          "ループは自分の messages 配列をそのまま渡します。その配列のブロックに cache_control を付けたら、次のリクエストはどうなるでしょう。",
        ),
        say(
          "Build new objects on the way to every block you mark: a new request object, a new tools array, a new messages array, a new newest message, a new content array, a new block.",
          "印を付けるブロックまでの途中は、すべて新しいオブジェクトにします。新しいリクエスト、新しい tools 配列、新しい messages 配列、新しい最新メッセージ、新しい content 配列、新しいブロックです。",
        ),
        say(
          "const marked = { ...request }; ... marked.messages = [...messages.slice(0, -1), { ...newest, content: content.map((b, i) => (i === at ? { ...b, cache_control: CACHED } : b)) }];",
          "const marked = { ...request }; ... marked.messages = [...messages.slice(0, -1), { ...newest, content: content.map((b, i) => (i === at ? { ...b, cache_control: CACHED } : b)) }];",
        ),
      ],
      async check(t) {
        const before: MessageCreateParamsNonStreaming = {
          model: "m",
          max_tokens: 10,
          system: "the system prompt",
          tools: stageOf(t).TOOLS,
          messages: [{ role: "user", content: "go" }, { role: "assistant", content: [{ type: "text", text: "a" }] }, { role: "user", content: [{ type: "text", text: "b" }, { type: "text", text: "c" }] }],
        };
        const copy = structuredClone(before);
        stageOf(t).withBreakpoints(copy);
        if (JSON.stringify(copy) !== JSON.stringify(before)) t.fail(say(`withBreakpoints changed the request it was given: ${quote(copy)}`, `withBreakpoints が渡されたリクエストを変えました: ${quote(copy)}`));
        t.write("a.txt", "A");
        const reads = Array.from({ length: 8 }, () => reply.tools([read("a.txt")]));
        stageOf(t).prepareReplay();
        const session = await t.replay(scenarioOf([...reads, reply.text("done"), reply.text("again")]));
        const refused = session.problems.find((problem) => problem.includes("cache_control"));
        if (refused) t.fail(say(`the API would refuse a request of a ten-request session: ${refused}`, `10回のリクエストのセッションで、API が拒否するリクエストがありました: ${refused}`));
        t.asRecorded(session);
        const marked = JSON.stringify(session.messages).includes("cache_control");
        if (marked) t.fail(say("after the session, the loop's own history holds cache_control markers", "セッションのあと、ループ自身の履歴に cache_control の印が残っていました"));
        const most = Math.max(...session.requests.map((sent) => breakpointsOf(sent).length));
        if (most > 4) t.fail(say(`a request carried ${most} breakpoints`, `ブレークポイントを ${most} 個持つリクエストがありました`));
      },
    },
    {
      id: "cacheable",
      title: say(
        "Never a breakpoint the API refuses: not on a thinking block nor an empty text (the last block before them takes it), and none in the message when no block can take one",
        "API が拒否するブレークポイントは置かない。thinking ブロックや空のテキストには付けず(その前の最後のブロックに付ける)、付けられるブロックがなければメッセージには置かない",
      ),
      hints: [
        say("A paused turn's newest message is the model's, and it may end with a thinking block. Can that block carry cache_control?", "一時停止したターンの最新メッセージはモデルのもので、thinking ブロックで終わることがあります。そのブロックに cache_control を付けられるでしょうか。"),
        say("Walk back from the last block with cacheable() until one can take the marker; if none can, leave the messages as they are.", "最後のブロックから cacheable() で後ろ向きにたどり、印を付けられるブロックを探します。1つもなければ messages はそのままにします。"),
        say("let at = content.length - 1; while (at >= 0 && !cacheable(content[at])) at--; if (at < 0) return marked;", "let at = content.length - 1; while (at >= 0 && !cacheable(content[at])) at--; if (at < 0) return marked;"),
      ],
      async check(t) {
        const thinking = { type: "thinking" as const, thinking: "Let me see.", signature: "sig" };
        const cases: [string, MessageParam["content"], string[]][] = [
          ["text, a tool call, then a thinking block", [{ type: "text", text: "a" }, { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "ls" } }, thinking], ["message 2's block 1"]],
          ["text, then an empty text block", [{ type: "text", text: "a" }, { type: "text", text: "  " }], ["message 2's block 0"]],
          ["a thinking block only", [thinking], []],
        ];
        for (const [what, content, expected] of cases) {
          const marked = request(t, "A system prompt.", [{ role: "user", content: "go" }, { role: "assistant", content }]);
          const got = breakpointsOf(marked).filter((place) => place.startsWith("message"));
          const refused = apiProblem(marked);
          if (refused || got.join() !== expected.join()) {
            t.fail(
              say(`the newest message holds ${what}: its breakpoints were ${quote(got)}${refused ? `, and the API would refuse it: ${refused}` : ""}`, `最新メッセージが ${what} のとき、ブレークポイントは ${quote(got)} でした${refused ? `。API は拒否します: ${refused}` : ""}`),
              say(`${quote(expected)}`, `${quote(expected)}`),
            );
          }
        }
      },
    },
    {
      id: "usage-counted",
      title: say(
        "Each reply's usage is added to the turn and to the session: the line after each turn gives that turn's input, output, cache read and cache write, and the session's tally all of them",
        "返答ごとの usage をターンとセッションに足す。各ターンのあとの行はそのターンの input、output、キャッシュの読み込みと書き込みを示し、セッションの集計はそのすべてを示す",
      ),
      hints: [
        say("A turn may take several requests, and a session several turns: which tallies does one reply's usage belong to?", "1つのターンに何回もリクエストがあり、1つのセッションに何回もターンがあります。1つの返答の usage は、どの集計に入るでしょう。"),
        say(
          "For both tallies, session and turn: one more request, and each of the four counts of the usage, read with tokens(): cache_read_input_tokens is the cache read, cache_creation_input_tokens the cache write.",
          "session と turn の両方に、リクエストを1つと、usage の4つの値を tokens() で読んで足します。cache_read_input_tokens がキャッシュの読み込み、cache_creation_input_tokens が書き込みです。",
        ),
        say(
          "for (const tally of [session, turn]) { tally.requests += 1; tally.input += tokens(usage?.input_tokens); ... tally.cacheWrite += tokens(usage?.cache_creation_input_tokens); }",
          "for (const tally of [session, turn]) { tally.requests += 1; tally.input += tokens(usage?.input_tokens); ... tally.cacheWrite += tokens(usage?.cache_creation_input_tokens); }",
        ),
      ],
      async check(t) {
        t.write("a.txt", "A");
        await played(t, [
          costing(reply.tools([read("a.txt")]), { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 1000, cache_creation_input_tokens: 500 }),
          costing(reply.text("first"), { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2000, cache_creation_input_tokens: 50 }),
          costing(reply.text("second"), { input_tokens: 3, output_tokens: 7, cache_read_input_tokens: 4000, cache_creation_input_tokens: 0 }),
        ]);
        const expected = ["110 in, 25 out, 3,000 cache read, 550 cache write", "3 in, 7 out, 4,000 cache read, 0 cache write"];
        const lines = turnLines(t);
        if (lines.length !== 2 || expected.some((figures, i) => !lines[i].includes(figures))) {
          t.fail(say(`the lines after the two turns were ${quote(lines)}`, `2つのターンのあとの行は ${quote(lines)} でした`), say(`lines with ${quote(expected)}`, `${quote(expected)} を含む行`));
        }
        const tally = stageOf(t).sessionTally();
        const total = { requests: 3, input: 113, output: 32, cacheRead: 7000, cacheWrite: 550 };
        if (JSON.stringify(tally) !== JSON.stringify(total)) t.fail(say(`the session's tally was ${quote(tally)}`, `セッションの集計は ${quote(tally)} でした`), say(quote(total), quote(total)));
      },
    },
    {
      id: "bad-usage",
      title: say("A usage that is missing, or a count that is no number (negative, text, NaN, null), adds nothing: no NaN in any line", "usage がない、または数でない値(負の数、文字列、NaN、null)は何も足さない。どの行にも NaN が出ない"),
      hints: [
        say("Providers are not all the API: some send no usage, some send odd values. What does NaN plus anything give?", "プロバイダがすべて API どおりとは限りません。usage を送らないものも、おかしな値を送るものもあります。NaN に何を足すと、どうなるでしょう。"),
        say("Read each count through tokens(), which gives 0 for anything that is not a positive number, and usage?. for a reply with none.", "値はどれも tokens() を通して読みます。正の数でなければ 0 になります。usage のない返答には usage?. を使います。"),
        say("tally.input += tokens(usage?.input_tokens);", "tally.input += tokens(usage?.input_tokens);"),
      ],
      async check(t) {
        await played(t, [costing(reply.text("one"), undefined), costing(reply.text("two"), { input_tokens: -5, output_tokens: "many", cache_read_input_tokens: Number.NaN, cache_creation_input_tokens: null })]);
        const lines = turnLines(t);
        const wrong = lines.find((line) => !line.includes("0 in, 0 out, 0 cache read, 0 cache write") || line.includes("NaN"));
        if (lines.length !== 2 || wrong) t.fail(say(`the lines after two replies with no usable usage were ${quote(lines)}`, `使える usage のない2つの返答のあとの行は ${quote(lines)} でした`), say("zeros, and no NaN", "すべて 0 で、NaN がない"));
      },
    },
    {
      id: "cost",
      title: say(
        "costOf: input, output, cache reads and cache writes each at their price per million tokens; without the cache, every input token at the input price",
        "costOf: input、output、キャッシュの読み込みと書き込みを、それぞれ100万トークンあたりの価格で数える。キャッシュなしなら、入力のトークンをすべて input の価格で数える",
      ),
      hints: [
        say("A cache read costs a tenth of the input price or less, a cache write a quarter more. Without a cache, what would those same tokens cost?", "キャッシュの読み込みは input の10分の1以下、書き込みは4分の1増しです。キャッシュがなければ、同じトークンはいくらになるでしょう。"),
        say("Multiply each count by its price and divide by a million; with cached: false, the cache's tokens are plain input.", "それぞれの数に価格を掛けて100万で割ります。cached: false なら、キャッシュのトークンは普通の input です。"),
        say("const read = cached ? price.cache_read : price.input; const write = cached ? price.cache_write : price.input; return (tally.input * price.input + tally.cacheRead * read + tally.cacheWrite * write + tally.output * price.output) / 1e6;", "const read = cached ? price.cache_read : price.input; const write = cached ? price.cache_write : price.input; return (tally.input * price.input + tally.cacheRead * read + tally.cacheWrite * write + tally.output * price.output) / 1e6;"),
      ],
      async check(t) {
        const tally = { requests: 2, input: 1000, output: 2000, cacheRead: 3000, cacheWrite: 4000 };
        const price = { input: 2, output: 10, cache_write: 2.5, cache_read: 0.1 };
        const cases: [string, number, number][] = [
          ["with the cache", stageOf(t).costOf(tally, price), (1000 * 2 + 2000 * 10 + 3000 * 0.1 + 4000 * 2.5) / 1e6],
          ["without the cache", stageOf(t).costOf(tally, price, { cached: false }), ((1000 + 3000 + 4000) * 2 + 2000 * 10) / 1e6],
        ];
        for (const [what, got, expected] of cases) {
          if (!(Math.abs(got - expected) < 1e-12)) {
            t.fail(say(`${quote(tally)} at ${quote(price)} ${what}: $${got}`, `${quote(tally)} を ${quote(price)} で、${what === "with the cache" ? "キャッシュあり" : "キャッシュなし"}: $${got}`), say(`$${expected}`, `$${expected}`));
          }
        }
      },
    },
    {
      id: "demo",
      title: say(
        "Plays the stage's recorded demo: the invoice is fixed and tested, and the two turns' lines give the recorded tokens and their cost",
        "ステージの記録済みデモを再生できる(請求書が直ってテストされ、2つのターンの行が記録どおりのトークンと費用を示す)",
      ),
      hints: [
        say("Run your copy: npx tsx workshop/s14.ts, and read the line after each turn.", "コピーを動かして、各ターンのあとの行を読みます: npx tsx workshop/s14.ts"),
        say("The first turn's line adds up four replies' usage, the second's three; fixtures/s14/demo.json holds each reply's usage.", "1つ目のターンの行は4つの返答の usage を、2つ目は3つを足したものです。各返答の usage は fixtures/s14/demo.json にあります。"),
        say("If the checks above pass and this one fails, compare the message with the demo's description in fixtures/s14/demo.json.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを fixtures/s14/demo.json のデモの説明と比べてみてください。"),
      ],
      async check(t) {
        stageOf(t).prepareReplay();
        t.asRecorded(await t.demo());
        const expected = ["[this turn: 621 in, 300 out, 3,375 cache read, 1,896 cache write; $0.0093]", "[this turn: 0 in, 272 out, 6,072 cache read, 366 cache write; $0.0042]"];
        if (turnLines(t).join("\n") !== expected.join("\n")) t.fail(say(`the lines after the demo's turns were ${quote(turnLines(t))}`, `デモのターンのあとの行は ${quote(turnLines(t))} でした`), say(quote(expected), quote(expected)));
        if (!(t.read("src/invoice.js") ?? "").includes("taxCents(subtotal - discount, region)")) t.fail(say("src/invoice.js was not fixed", "src/invoice.js が直っていません"));
        if (!t.read("test/invoice.test.js")) t.fail(say("test/invoice.test.js was not written", "test/invoice.test.js が書かれていません"));
      },
    },
  ],
});
