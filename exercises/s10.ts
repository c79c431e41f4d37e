// Exercise s10: a subagent, its own small loop inside the task tool. The task tool, its
// figures line (figuresOf), lastAnswer, show and the rest of s06 are given; runChild (the
// child's loop) and runChildTools (its calls, without task) are taken out. The checks read the
// requests the model received: the child's own, and the parent's after it.
import type { Message, MessageCreateParams, MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { Scenario } from "../lib/course/scenario.ts";
import { defineExercise, quote, reply, resultText, say, toolResults, type CheckKit } from "../lib/course/exercises.ts";

const PROMPT = "Read notes.txt and tell me its first word.";
const NOTES = "ZEBRA-SECRET is the first word of these notes\n";
const ANSWER = "The first word is ZEBRA-SECRET.";

const task = (id: string, prompt = PROMPT) => ({ id, name: "task", input: { description: "read notes", prompt } });
/** A reply with its token counts, so the figures can be checked. */
const costing = (message: Message, input: number, output: number): Message => ({ ...message, usage: { input_tokens: input, output_tokens: output } }) as Message;
/** One prompt, `side` subagents' last replies among the replies. */
const oneTurn = (replies: Message[], side: number): Scenario => ({ description: "written for a check", prompts: ["go"], replies, sideTurns: side });
/** The requests of the child started with `prompt`: its conversation starts with that prompt. */
const childRequests = (requests: MessageCreateParams[], prompt = PROMPT) => requests.filter((request) => request.messages[0]?.content === prompt);
const parentRequests = (requests: MessageCreateParams[]) => requests.filter((request) => request.messages[0]?.content === "go");

async function played(t: CheckKit, scenario: Scenario) {
  const session = await t.replay(scenario);
  noTurnError(t, session);
  return session;
}

/** A turn that failed (the replay refused a request, say): what the check could not see past. */
function noTurnError(t: CheckKit, session: { turnErrors: unknown[] }): void {
  for (const error of session.turnErrors) {
    const text = error instanceof Error ? error.message : String(error);
    t.fail(say(`the turn ended with an error: ${text}`, `ターンがエラーで終わりました: ${text}`));
  }
}

/** The result the parent's model received for `id`, from the parent's last request. */
function parentResult(t: CheckKit, requests: MessageCreateParams[], id: string) {
  const parents = parentRequests(requests);
  const result = toolResults(parents, parents.length - 1).find((block) => block.tool_use_id === id);
  if (!result) {
    t.fail(say(`the parent's model never received a result for its task call ${id}`, `親のモデルが task 呼び出し ${id} の結果を受け取っていません`));
  }
  return result;
}

/** The child reads notes.txt once, then answers: 2 model calls, 1 tool call, 745 tokens. */
const readingChild = () =>
  oneTurn(
    [
      reply.tools([task("toolu_task")], "A subagent can read it."),
      costing(reply.tools([{ id: "toolu_child_read", name: "read_file", input: { path: "notes.txt" } }], "Reading the notes."), 300, 20),
      costing(reply.text(ANSWER), 410, 15),
      reply.text("Its first word is ZEBRA-SECRET."),
    ],
    1,
  );

const number = (text: string, n: number) => new RegExp(`(^|[^\\d])${n}([^\\d]|$)`).test(text);

export default defineExercise({
  stage: "s10",
  title: say("A subagent", "サブエージェント"),
  mechanism: say(
    "runChild and runChildTools: a child agent with fresh messages and no task tool, at most 30 model calls, that returns only its answer and its figures",
    "runChild と runChildTools: 新しい messages で始まり task ツールを持たない子のエージェント。モデル呼び出しは30回まで、返すのは答えと数字だけ",
  ),
  minutes: 40,
  takeOut: [
    {
      function: "runChild",
      task: say(
        "run the child's loop: messages that start with the prompt alone, childSystemPrompt() and childTools(), calls through runChildTools; stop at CHILD_MAX_CALLS with an error; return lastAnswer(...) and figuresOf(...); a failure throws an error naming the subagent, with the figures.",
        "子のループを回します。messages はプロンプトだけで始め、childSystemPrompt() と childTools() を送り、ツール呼び出しは runChildTools に渡します。CHILD_MAX_CALLS で止めてエラーにし、lastAnswer(...) と figuresOf(...) を返します。失敗はサブエージェントの名前と数字を入れたエラーにして throw します。",
      ),
    },
    {
      function: "runChildTools",
      task: say(
        "run the child's calls through runTools, but only those to tools in childTools(); answer any other (a forged task call) with an is_error result; every result in call order.",
        "子の呼び出しを runTools で実行します。ただし childTools() にあるツールへの呼び出しだけです。それ以外(偽の task 呼び出し)には is_error の結果で答え、結果はすべて呼び出し順に返します。",
      ),
    },
  ],
  requirements: [
    {
      id: "fresh-context",
      title: say(
        "The child starts from its prompt alone, with its own system prompt and without the task tool; the parent's next request holds nothing of the child's messages",
        "子はプロンプトだけから始まり、専用のシステムプロンプトを持ち、task ツールを持たない。親の次のリクエストには子の messages が何も入っていない",
      ),
      hints: [
        say("The child is a second conversation. What is in its messages array when it starts, and who keeps that array?", "子は2つ目の会話です。始めたとき、その messages 配列には何が入っていますか。その配列を持っているのは誰でしょう。"),
        say(
          "Make a new array in runChild with one user message, the prompt. Send it with childSystemPrompt() and childTools(), never the parent's systemPrompt() or TOOLS. Nothing of it is returned but the answer.",
          "runChild の中で、プロンプトだけのユーザーメッセージ1つで新しい配列を作ります。送るのは childSystemPrompt() と childTools() で、親の systemPrompt() や TOOLS ではありません。返すのは答えだけです。",
        ),
        say(
          "const messages: MessageParam[] = [{ role: \"user\", content: prompt }]; const response = await client.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: childSystemPrompt(), tools: childTools(), messages }, { signal });",
          "const messages: MessageParam[] = [{ role: \"user\", content: prompt }]; const response = await client.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: childSystemPrompt(), tools: childTools(), messages }, { signal });",
        ),
      ],
      async check(t) {
        t.write("notes.txt", NOTES);
        const { requests } = await played(t, readingChild());
        const [first] = childRequests(requests);
        if (!first) t.fail(say("no request of the child reached the model: it must start from the task's prompt", "子のリクエストがモデルに届いていません。子は task の prompt から始まるはずです"));
        if (first.messages.length !== 1) {
          t.fail(say(`the child's first request holds ${first.messages.length} messages: ${quote(first.messages)}`, `子の最初のリクエストに ${first.messages.length} 件のメッセージがあります: ${quote(first.messages)}`));
        }
        const [parentFirst, parentAfter] = parentRequests(requests);
        if (first.system === parentFirst.system) t.fail(say("the child was sent the parent's system prompt", "子に親のシステムプロンプトが送られました"));
        const names = ((first.tools ?? []) as { name: string }[]).map((tool) => tool.name);
        if (names.includes("task")) t.fail(say(`the child was offered the task tool: ${quote(names)}`, `子に task ツールが渡されています: ${quote(names)}`));
        if (!names.includes("read_file")) t.fail(say(`the child was not given the core tools: ${quote(names)}`, `子にコアのツールが渡されていません: ${quote(names)}`));
        if (!parentAfter) t.fail(say("the parent never made its next request", "親が次のリクエストを出していません"));
        const sent = JSON.stringify(parentAfter.messages);
        for (const trace of [NOTES.trim(), "toolu_child_read", "Reading the notes."]) {
          if (sent.includes(trace)) {
            t.fail(say(`the parent's next request holds part of the child's messages: ${quote(trace)}`, `親の次のリクエストに子の messages の一部が入っています: ${quote(trace)}`));
          }
        }
      },
    },
    {
      id: "only-the-answer",
      title: say(
        "The task's result is the child's last answer, then one line of figures: its model calls, tool calls and tokens",
        "task の結果は子の最後の答えと、そのあとの数字の1行(モデル呼び出し、ツール呼び出し、トークンの数)",
      ),
      hints: [
        say("When the child stops asking for tools, what should the parent read?", "子がツールを求めなくなったとき、親は何を読むべきでしょう。"),
        say(
          "Count as you go: each model call, each tool result, and each reply's usage (input_tokens, output_tokens). At the end, return lastAnswer(response) and figuresOf(spent); the task tool joins them.",
          "進みながら数えます。モデル呼び出し、ツールの結果、各応答の usage(input_tokens と output_tokens)です。最後に lastAnswer(response) と figuresOf(spent) を返せば、task ツールがつなげます。",
        ),
        say(
          "spent.calls += 1; spent.input += response.usage?.input_tokens ?? 0; spent.output += response.usage?.output_tokens ?? 0; ... if (response.stop_reason !== \"tool_use\") return { answer: lastAnswer(response), figures: figuresOf(spent) };",
          "spent.calls += 1; spent.input += response.usage?.input_tokens ?? 0; spent.output += response.usage?.output_tokens ?? 0; ... if (response.stop_reason !== \"tool_use\") return { answer: lastAnswer(response), figures: figuresOf(spent) };",
        ),
      ],
      async check(t) {
        t.write("notes.txt", NOTES);
        const { requests } = await played(t, readingChild());
        const result = parentResult(t, requests, "toolu_task");
        const text = resultText(result);
        if (result.is_error) t.fail(say(`the task failed: ${quote(text)}`, `task が失敗しました: ${quote(text)}`));
        if (!text.startsWith(ANSWER)) t.fail(say(`the result does not start with the child's answer: ${quote(text)}`, `結果が子の答えで始まっていません: ${quote(text)}`));
        const figures = text.slice(ANSWER.length);
        const tokens = number(figures, 745) || (number(figures, 710) && number(figures, 35));
        if (!number(figures, 2) || !number(figures, 1) || !tokens) {
          t.fail(
            say(`after the answer, the figures do not give 2 model calls, 1 tool call and 745 tokens: ${quote(figures)}`, `答えのあとの数字に、モデル呼び出し2回、ツール呼び出し1回、745トークンがありません: ${quote(figures)}`),
          );
        }
      },
    },
    {
      id: "no-recursion",
      title: say(
        "A task call from the child is refused with an error result and starts no subagent; the other calls of its reply still run, every result in call order",
        "子からの task 呼び出しはエラーの結果で拒否され、サブエージェントは始まらない。同じ応答のほかの呼び出しは実行され、結果はすべて呼び出し順",
      ),
      hints: [
        say("The child was never shown task. What if its model sends the call anyway?", "子には task を見せていません。それでもモデルが呼び出しを送ってきたらどうしますか。"),
        say(
          "Give runTools only the calls whose name is in childTools(); then answer every call in its order: with runTools' result when it ran, otherwise with an is_error result of your own.",
          "runTools に渡すのは、名前が childTools() にある呼び出しだけにします。そのうえで、すべての呼び出しに順番どおり答えます。実行したものは runTools の結果で、それ以外は自分で作った is_error の結果で答えます。",
        ),
        say(
          "const results = await runTools(calls.filter((call) => given.includes(call.name))); return calls.map((call) => results.find((r) => r.tool_use_id === call.id) ?? { type: \"tool_result\", tool_use_id: call.id, is_error: true, content: \"Error: a subagent cannot start another subagent\" });",
          "const results = await runTools(calls.filter((call) => given.includes(call.name))); return calls.map((call) => results.find((r) => r.tool_use_id === call.id) ?? { type: \"tool_result\", tool_use_id: call.id, is_error: true, content: \"Error: a subagent cannot start another subagent\" });",
        ),
      ],
      async check(t) {
        t.write("a.txt", "AAA");
        t.write("b.txt", "BBB");
        // Replayed without failing on a turn error first: a subagent of the subagent would take a
        // reply meant for another request, and that is what this check must name.
        const session = await t.replay(
          oneTurn(
            [
              reply.tools([task("toolu_task")]),
              reply.tools([
                { id: "toolu_a", name: "read_file", input: { path: "a.txt" } },
                { id: "toolu_forged", name: "task", input: { description: "deeper", prompt: "GO DEEPER" } },
                { id: "toolu_b", name: "read_file", input: { path: "b.txt" } },
              ]),
              reply.text("I read a and b."),
              reply.text("done"),
            ],
            1,
          ),
        );
        const { requests } = session;
        if (childRequests(requests, "GO DEEPER").length > 0) t.fail(say("the forged task call started a subagent of the subagent", "偽の task 呼び出しで、サブエージェントのサブエージェントが始まりました"));
        noTurnError(t, session);
        const child = childRequests(requests);
        const results = child[1] ? toolResults(child, 1) : [];
        const ids = results.map((result) => result.tool_use_id);
        if (ids.join(",") !== "toolu_a,toolu_forged,toolu_b") {
          t.fail(say(`the child's next request answers [${ids.join(", ")}], not [toolu_a, toolu_forged, toolu_b]`, `子の次のリクエストが答えているのは [${ids.join(", ")}] で、[toolu_a, toolu_forged, toolu_b] ではありません`));
        }
        const [a, forged, b] = results;
        if (!forged.is_error) t.fail(say(`the forged task call was not refused: ${quote(resultText(forged))}`, `偽の task 呼び出しが拒否されていません: ${quote(resultText(forged))}`));
        if (resultText(a) !== "AAA" || resultText(b) !== "BBB") {
          t.fail(say(`the other calls did not run: ${quote(resultText(a))}, ${quote(resultText(b))}`, `ほかの呼び出しが実行されていません: ${quote(resultText(a))}、${quote(resultText(b))}`));
        }
      },
    },
    {
      id: "limit-and-failure",
      title: say(
        "A child that never stops is ended after 30 model calls, and one whose reply is cut off fails: each gives the parent an error result, and the parent goes on",
        "止まらない子はモデル呼び出し30回で終わり、応答が途切れた子は失敗になる。どちらも親にはエラーの結果が返り、親は先へ進む",
      ),
      hints: [
        say("A loop that waits for the model to stop may wait for ever. Who stops it?", "モデルが止まるのを待つループは、永遠に待つかもしれません。誰が止めるのでしょう。"),
        say(
          "Count the calls. When the reply of the last allowed call still asks for tools, throw an error saying the limit was reached. lastAnswer throws for a reply cut off; let the error go up to runTool, which makes it an is_error result.",
          "呼び出しを数えます。許された最後の呼び出しの応答がまだツールを求めていたら、上限に達したというエラーを throw します。途切れた応答には lastAnswer が throw します。そのエラーを runTool まで上げれば、is_error の結果になります。",
        ),
        say(
          "if (spent.calls === CHILD_MAX_CALLS) throw new Error(`it reached its limit of ${CHILD_MAX_CALLS} model calls without finishing`); ... catch (error) { if (signal.aborted) throw error; throw new Error(`the subagent [${label}] stopped: ${why}. [${figuresOf(spent)}]`); }",
          "if (spent.calls === CHILD_MAX_CALLS) throw new Error(`it reached its limit of ${CHILD_MAX_CALLS} model calls without finishing`); ... catch (error) { if (signal.aborted) throw error; throw new Error(`the subagent [${label}] stopped: ${why}. [${figuresOf(spent)}]`); }",
        ),
      ],
      async check(t) {
        t.write("notes.txt", NOTES);
        const endless = Array.from({ length: 30 }, () => reply.tools([{ name: "read_file", input: { path: "notes.txt" } }]));
        const limited = await t.replay(oneTurn([reply.tools([task("toolu_endless")]), ...endless, reply.text("I will read it myself.")], 0));
        const calls = childRequests(limited.requests).length;
        if (calls !== 30) t.fail(say(`the child that never stops made ${calls} model calls, not 30`, `止まらない子のモデル呼び出しは ${calls} 回で、30回ではありません`));
        noTurnError(t, limited);
        if (limited.problems.length > 0) t.fail(say(`the session did not match the recording: ${limited.problems[0]}`, `記録どおりに進みませんでした: ${limited.problems[0]}`));
        const over = parentResult(t, limited.requests, "toolu_endless");
        if (!over.is_error) t.fail(say(`the parent was not told the child failed: ${quote(resultText(over))}`, `子が失敗したことが親に伝わっていません: ${quote(resultText(over))}`));

        const cut = await played(t, oneTurn([reply.tools([task("toolu_cut")]), reply.text("The first word is", "max_tokens"), reply.text("I will read it myself.")], 0));
        if (cut.problems.length > 0) t.fail(say(`the session did not match the recording: ${cut.problems[0]}`, `記録どおりに進みませんでした: ${cut.problems[0]}`));
        const failed = parentResult(t, cut.requests, "toolu_cut");
        if (!failed.is_error) t.fail(say(`a reply cut off was taken as the answer: ${quote(resultText(failed))}`, `途切れた応答が答えとして扱われました: ${quote(resultText(failed))}`));
      },
    },
    {
      id: "same-approval",
      title: say(
        "The child's edits go through the same approval as the parent's: with no one at the terminal, its write_file is refused and nothing is written",
        "子の編集も親と同じ承認を通る。端末に誰もいなければ、子の write_file は拒否され、何も書かれない",
      ),
      hints: [
        say("Could a subagent write a file the parent would have had to ask about?", "親なら確認が必要なファイルを、サブエージェントが書けてしまわないでしょうか。"),
        say(
          "Run the child's calls through runTools (and so runTool), never by calling a tool's execute yourself: runTool is where validation, approval and Ctrl-C happen.",
          "子の呼び出しは runTools(つまり runTool)で実行し、ツールの execute を自分で呼ばないことです。検証、承認、Ctrl-C はどれも runTool で行われます。",
        ),
        say("const results = await runTools(allowedCalls); // the nine steps of s06, for the child too", "const results = await runTools(allowedCalls); // s06 の9つのステップを、子にも"),
      ],
      async check(t) {
        const { requests } = await played(
          t,
          oneTurn(
            [
              reply.tools([task("toolu_task", "Write out.txt.")]),
              reply.tools([{ id: "toolu_write", name: "write_file", input: { path: "out.txt", content: "written by the child" } }]),
              reply.text("Tried to write out.txt."),
              reply.text("done"),
            ],
            1,
          ),
        );
        if (t.read("out.txt") !== undefined) t.fail(say("the child wrote out.txt without anyone's approval", "子が誰の承認も得ずに out.txt を書きました"));
        const child = childRequests(requests, "Write out.txt.");
        const [result] = child[1] ? toolResults(child, 1) : [];
        if (!result) t.fail(say("the child's write_file call got no result", "子の write_file 呼び出しに結果が返っていません"));
      },
    },
    {
      id: "demo",
      title: say(
        "The stage's demo replays through your code: the parent writes docs/modules.md from the subagent's summary alone",
        "ステージのデモがあなたのコードで再生できる。親はサブエージェントの要約だけから docs/modules.md を書く",
      ),
      hints: [
        say("Run npx tsx workshop/s10.ts and read what the replay says.", "npx tsx workshop/s10.ts を実行して、再生が何と言うかを読んでください。"),
        say(
          "The demo's subagent runs one command (the recorded person allows it), reads three files in one reply, and answers; then the parent writes the page. Each of those steps goes through your runChild and runChildTools.",
          "デモのサブエージェントはコマンドを1つ実行し(記録された人が許可します)、1つの応答で3つのファイルを読み、答えます。そのあと親がページを書きます。どのステップもあなたの runChild と runChildTools を通ります。",
        ),
        say("Every check above passing is most of the way; the replay then names the first request that differs from the recording.", "ここまでのチェックが通れば、ほとんど終わっています。あとは再生が、記録と違う最初のリクエストを教えてくれます。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        const page = t.read("docs/modules.md");
        if (!page?.includes("## src/receipt.js")) t.fail(say(`docs/modules.md is not the demo's page: ${quote(page)}`, `docs/modules.md がデモのページになっていません: ${quote(page)}`));
        const parent = parentRequestsOf(session.messages, session.requests);
        if (parent.some((request) => JSON.stringify(request).includes("Math.round(euros * 100)"))) {
          t.fail(say("a source file the subagent read reached the parent's requests", "サブエージェントが読んだソースファイルが、親のリクエストに入っています"));
        }
      },
    },
  ],
});

/** The parent's requests in a replayed session: those that start with the session's first prompt. */
function parentRequestsOf(messages: MessageParam[], requests: MessageCreateParams[]): MessageCreateParams[] {
  const first = messages[0]?.content;
  return requests.filter((request) => request.messages[0]?.content === first);
}
