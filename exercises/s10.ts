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
/** The first request that holds `prompt` as a message of its own: a child's first, wherever its prompt stands. */
const firstWith = (requests: MessageCreateParams[], prompt: string) => requests.find((request) => request.messages.some((message) => message.content === prompt));

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

/** The files the reading child reads. */
function writeNotes(t: CheckKit): void {
  t.write("notes.txt", NOTES);
  t.write("a.txt", "AAA");
  t.write("b.txt", "BBB");
}

/** The child's first reply: three reads side by side, "Reading the notes." before them. */
const childReads = () =>
  costing(
    reply.tools(
      [
        { id: "toolu_child_read", name: "read_file", input: { path: "notes.txt" } },
        { id: "toolu_child_read_a", name: "read_file", input: { path: "a.txt" } },
        { id: "toolu_child_read_b", name: "read_file", input: { path: "b.txt" } },
      ],
      "Reading the notes.",
    ),
    300,
    20,
  );

/** The child reads three files in one reply, then answers: 2 model calls, 3 tool calls, 745 tokens. */
const readingChild = () => oneTurn([reply.tools([task("toolu_task")], "A subagent can read it."), childReads(), costing(reply.text(ANSWER), 410, 15), reply.text("Its first word is ZEBRA-SECRET.")], 1);

const SECOND = "Say how long notes.txt is.";
/** The reading child, then a second task in the parent's next reply: each child must start afresh. */
const twoChildren = () =>
  oneTurn(
    [
      reply.tools([task("toolu_task")], "A subagent can read it."),
      childReads(),
      reply.text(ANSWER),
      reply.tools([task("toolu_task_2", SECOND)]),
      reply.text("It is one line long."),
      reply.text("Its first word is ZEBRA-SECRET, and it is one line long."),
    ],
    2,
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
        "run the child's loop: messages that start with the prompt alone, childSystemPrompt() and childTools(), calls through runChildTools; a paused reply (pause_turn) is sent back as it is; a reply that still asks to go on (tools, or paused) at CHILD_MAX_CALLS is an error; otherwise return lastAnswer(...) and figuresOf(...); a failure throws an error naming the subagent, with the figures.",
        "子のループを回します。messages はプロンプトだけで始め、childSystemPrompt() と childTools() を送り、ツール呼び出しは runChildTools に渡します。一時停止した応答(pause_turn)はそのまま送り返します。CHILD_MAX_CALLS 回目の応答がまだ続けようとしていたら(ツールの要求や一時停止)エラーにします。それ以外は lastAnswer(...) と figuresOf(...) を返します。失敗はサブエージェントの名前と数字を入れたエラーにして throw します。",
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
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "a failure's message without the figures (model calls, tool calls, tokens)",
      change: [[". Nothing it found came back. [${figuresOf(spent)}]`);", ". Nothing it found came back.`);"]],
      fails: "limit-and-failure",
    },
    {
      name: "the child continues the parent's conversation instead of a fresh one",
      change: [
        ["export async function agentLoop(messages: MessageParam[]): Promise<void> {", "let parentMessages: MessageParam[] = [];\nexport async function agentLoop(messages: MessageParam[]): Promise<void> {\n  parentMessages = messages;"],
        ["  const messages: MessageParam[] = [{ role: \"user\", content: prompt }];", "  const messages: MessageParam[] = [...parentMessages, { role: \"user\", content: prompt }];"],
      ],
      fails: "fresh-context",
    },
    {
      name: "one conversation kept for every subagent: the second starts after the first's messages",
      change: [
        ["const CHILD_MAX_CALLS = 30;", "const CHILD_MAX_CALLS = 30;\nconst childMessages: MessageParam[] = [];"],
        ["  const messages: MessageParam[] = [{ role: \"user\", content: prompt }];", "  const messages = childMessages;\n  messages.push({ role: \"user\", content: prompt });"],
      ],
      fails: "fresh-context",
    },
    {
      name: "the child sent the parent's system prompt",
      change: [["system: childSystemPrompt(), tools: childTools(), messages", "system: systemPrompt(), tools: childTools(), messages"]],
      fails: "fresh-context",
    },
    {
      name: "the child offered the parent's tools, task included",
      change: [["system: childSystemPrompt(), tools: childTools(), messages", "system: childSystemPrompt(), tools: TOOLS, messages"]],
      fails: "fresh-context",
    },
    {
      name: "the child's whole conversation returned, not its last answer",
      change: [["return { answer: lastAnswer(response), figures: figuresOf(spent) };", "return { answer: JSON.stringify(messages), figures: figuresOf(spent) };"]],
      fails: "fresh-context",
    },
    {
      name: "every text the child wrote returned, not only its last answer",
      change: [
        [
          "return { answer: lastAnswer(response), figures: figuresOf(spent) };",
          "return { answer: messages.flatMap((m) => (m.role === \"assistant\" && Array.isArray(m.content) ? m.content : [])).flatMap((b) => (b.type === \"text\" ? [b.text] : [])).join(\"\\n\"), figures: figuresOf(spent) };",
        ],
      ],
      fails: "only-the-answer",
    },
    {
      name: "tool calls counted once per reply",
      change: [["spent.toolCalls += results.length;", "spent.toolCalls += 1;"]],
      fails: "only-the-answer",
    },
    {
      name: "the tokens of the last reply only",
      change: [
        ["spent.input += response.usage?.input_tokens ?? 0;", "spent.input = response.usage?.input_tokens ?? 0;"],
        ["spent.output += response.usage?.output_tokens ?? 0;", "spent.output = response.usage?.output_tokens ?? 0;"],
      ],
      fails: "only-the-answer",
    },
    {
      name: "the child may call task: every call goes to runTools (a subagent of the subagent)",
      change: [["const results = await runTools(calls.filter((call) => given.includes(call.name)));", "const results = await runTools(calls);"]],
      fails: "no-recursion",
    },
    {
      name: "a forged task call left without a result",
      change: [["  const results = await runTools(calls.filter((call) => given.includes(call.name)));", "  return runTools(calls.filter((call) => given.includes(call.name)));\n  const results: ToolResultBlockParam[] = [];"]],
      fails: "no-recursion",
    },
    {
      name: "the refusals put after the other results, out of call order",
      change: [
        ["  return calls.map((call) => {\n    const result = results.find((done) => done.tool_use_id === call.id);\n    if (result) return result;", "  return [...results, ...calls.filter((call) => !given.includes(call.name)).map((call): ToolResultBlockParam => {"],
        ["content: `Error: ${why}. Your tools: ${given.join(\", \")}.` };\n  });", "content: `Error: ${why}. Your tools: ${given.join(\", \")}.` };\n  })];"],
      ],
      fails: "no-recursion",
    },
    {
      name: "no limit on the child's model calls",
      change: [["        if (spent.calls === CHILD_MAX_CALLS) throw new Error(`it reached its limit of ${CHILD_MAX_CALLS} model calls without finishing; give it a smaller task`);\n", ""]],
      fails: "limit-and-failure",
    },
    {
      name: "off by one: the child ended after 31 model calls",
      change: [["if (spent.calls === CHILD_MAX_CALLS) throw", "if (spent.calls > CHILD_MAX_CALLS) throw"]],
      fails: "limit-and-failure",
    },
    {
      name: "a paused reply (pause_turn) at the limit taken as the answer, though the child was not done",
      change: [['if (response.stop_reason !== "tool_use" && response.stop_reason !== "pause_turn") return', 'if (response.stop_reason !== "tool_use" && (response.stop_reason !== "pause_turn" || spent.calls === CHILD_MAX_CALLS)) return']],
      fails: "limit-and-failure",
    },
    {
      name: "a paused reply (pause_turn) sent back whatever the count: the limit never ends a paused child",
      change: [["        // It asked to go on (its tools, or a server tool at work), but it could never read what comes next.\n", "        if (response.stop_reason === \"pause_turn\") continue; // sent back, whatever the count\n"]],
      fails: "limit-and-failure",
    },
    {
      name: "a child's failure returned as its answer, so the parent cannot tell it failed",
      change: [["      throw new Error(`the subagent [${label}] stopped: ${why}. Nothing it found came back. [${figuresOf(spent)}]`);", "      return { answer: `the subagent [${label}] stopped: ${why}.`, figures: figuresOf(spent) };"]],
      fails: "limit-and-failure",
    },
    {
      name: "a reply cut off taken as the answer",
      change: [["return { answer: lastAnswer(response), figures: figuresOf(spent) };", "return { answer: response.content.flatMap((block) => (block.type === \"text\" ? [block.text] : [])).join(\"\\n\"), figures: figuresOf(spent) };"]],
      fails: "limit-and-failure",
    },
    {
      name: "the child's calls run by each tool's execute, past the approval step",
      change: [
        [
          "  const results = await runTools(calls.filter((call) => given.includes(call.name)));",
          "  const allowed = calls.filter((call) => given.includes(call.name));\n  const results = await Promise.all(allowed.map(async (call): Promise<ToolResultBlockParam> => ({ type: \"tool_result\", tool_use_id: call.id, content: (await registry.getTool(call.name)!.execute(call.input as Params, new AbortController().signal)).llmContent })));",
        ],
      ],
      fails: "same-approval",
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
        writeNotes(t);
        const { requests } = await played(t, twoChildren());
        const first = firstWith(requests, PROMPT);
        if (!first) return t.fail(say("no request of the child reached the model: it must start from the task's prompt", "子のリクエストがモデルに届いていません。子は task の prompt から始まるはずです"));
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
        // A second subagent, in the parent's next reply: fresh too, with nothing of the first.
        const second = firstWith(requests, SECOND);
        if (!second) return t.fail(say("no request of the second task's child reached the model", "2つ目の task の子のリクエストがモデルに届いていません"));
        if (second.messages.length !== 1) {
          t.fail(
            say(
              `the second task's child did not start from its prompt alone: its first request holds ${second.messages.length} messages: ${quote(second.messages)}`,
              `2つ目の task の子がプロンプトだけから始まっていません。最初のリクエストに ${second.messages.length} 件のメッセージがあります: ${quote(second.messages)}`,
            ),
          );
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
        writeNotes(t);
        const { requests } = await played(t, readingChild());
        const result = parentResult(t, requests, "toolu_task");
        const text = resultText(result);
        if (result.is_error) t.fail(say(`the task failed: ${quote(text)}`, `task が失敗しました: ${quote(text)}`));
        if (!text.startsWith(ANSWER)) t.fail(say(`the result does not start with the child's answer: ${quote(text)}`, `結果が子の答えで始まっていません: ${quote(text)}`));
        const figures = text.slice(ANSWER.length);
        const tokens = number(figures, 745) || (number(figures, 710) && number(figures, 35));
        if (!number(figures, 2) || !number(figures, 3) || !tokens) {
          t.fail(
            say(
              `the child made 2 model calls and 3 tool calls (three reads in one reply), and spent 745 tokens, but the figures after its answer say ${quote(figures)}`,
              `子のモデル呼び出しは2回、ツール呼び出しは3回(1つの応答で3つ読んだ)、トークンは745でしたが、答えのあとの数字は ${quote(figures)} でした`,
            ),
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
        "A child that never stops (asking for tools, or paused) is ended after 30 model calls, and one whose reply is cut off fails: each gives the parent an error result with the child's figures, and the parent goes on",
        "止まらない子(ツールを求め続ける子も、一時停止を続ける子も)はモデル呼び出し30回で終わり、応答が途切れた子は失敗になる。どちらも親には子の数字の入ったエラーの結果が返り、親は先へ進む",
      ),
      hints: [
        say("A loop that waits for the model to stop may wait for ever. Who stops it?", "モデルが止まるのを待つループは、永遠に待つかもしれません。誰が止めるのでしょう。"),
        say(
          "Count the calls. When the reply of the last allowed call still asks for tools, or is paused (pause_turn), throw an error saying the limit was reached. lastAnswer throws for a reply cut off. Catch either in runChild and throw again with figuresOf(spent) in the message: the parent should know what a failed child cost. runTool makes the error an is_error result.",
          "呼び出しを数えます。許された最後の呼び出しの応答がまだツールを求めていたり一時停止(pause_turn)していたりしたら、上限に達したというエラーを throw します。途切れた応答には lastAnswer が throw します。どちらも runChild で受け止め、figuresOf(spent) をメッセージに入れて throw し直します。失敗した子がどれだけ使ったかも、親は知るべきです。runTool がそのエラーを is_error の結果にします。",
        ),
        say(
          "if (spent.calls === CHILD_MAX_CALLS) throw new Error(`it reached its limit of ${CHILD_MAX_CALLS} model calls without finishing`); ... catch (error) { if (signal.aborted) throw error; throw new Error(`the subagent [${label}] stopped: ${why}. [${figuresOf(spent)}]`); }",
          "if (spent.calls === CHILD_MAX_CALLS) throw new Error(`it reached its limit of ${CHILD_MAX_CALLS} model calls without finishing`); ... catch (error) { if (signal.aborted) throw error; throw new Error(`the subagent [${label}] stopped: ${why}. [${figuresOf(spent)}]`); }",
        ),
      ],
      async check(t) {
        t.write("notes.txt", NOTES);
        // 30 replies of 100 tokens in and 7 out: 3,210 tokens (3,000 in, 210 out) when the limit ends it.
        const endless = Array.from({ length: 30 }, () => costing(reply.tools([{ name: "read_file", input: { path: "notes.txt" } }]), 100, 7));
        const limited = await t.replay(oneTurn([reply.tools([task("toolu_endless")]), ...endless, reply.text("I will read it myself.")], 0));
        const calls = childRequests(limited.requests).length;
        if (calls !== 30) t.fail(say(`the child that never stops made ${calls} model calls, not 30`, `止まらない子のモデル呼び出しは ${calls} 回で、30回ではありません`));
        noTurnError(t, limited);
        if (limited.problems.length > 0) t.fail(say(`the session did not match the recording: ${limited.problems[0]}`, `記録どおりに進みませんでした: ${limited.problems[0]}`));
        const over = parentResult(t, limited.requests, "toolu_endless");
        if (!over.is_error) t.fail(say(`the parent was not told the child failed: ${quote(resultText(over))}`, `子が失敗したことが親に伝わっていません: ${quote(resultText(over))}`));
        // What the child spent before it failed: 30 model calls, 29 tool calls (the last reply's never
        // ran; a count of 30 is let pass, and 30 is in the words of the limit anyway), and the tokens.
        const overText = resultText(over);
        const overTokens = number(overText, 3210) || (number(overText, 3000) && number(overText, 210));
        if (!number(overText, 30) || !overTokens) {
          t.fail(
            say(`the error does not give what the child spent (30 model calls, 29 tool calls, 3210 tokens): ${quote(overText)}`, `エラーに子が使った分(モデル呼び出し30回、ツール呼び出し29回、3210トークン)がありません: ${quote(overText)}`),
            say("an error result with the child's figures: its model calls, tool calls and tokens", "子の数字(モデル呼び出し、ツール呼び出し、トークン)の入ったエラーの結果"),
          );
        }

        const cut = await played(t, oneTurn([reply.tools([task("toolu_cut")]), costing(reply.text("The first word is", "max_tokens"), 500, 8000), reply.text("I will read it myself.")], 0));
        if (cut.problems.length > 0) t.fail(say(`the session did not match the recording: ${cut.problems[0]}`, `記録どおりに進みませんでした: ${cut.problems[0]}`));
        const failed = parentResult(t, cut.requests, "toolu_cut");
        if (!failed.is_error) t.fail(say(`a reply cut off was taken as the answer: ${quote(resultText(failed))}`, `途切れた応答が答えとして扱われました: ${quote(resultText(failed))}`));
        const cutText = resultText(failed);
        if (!number(cutText, 1) || !number(cutText, 0) || !(number(cutText, 8500) || (number(cutText, 500) && number(cutText, 8000)))) {
          t.fail(
            say(`the error does not give what the child spent (1 model call, 0 tool calls, 8500 tokens): ${quote(cutText)}`, `エラーに子が使った分(モデル呼び出し1回、ツール呼び出し0回、8500トークン)がありません: ${quote(cutText)}`),
            say("an error result with the child's figures: its model calls, tool calls and tokens", "子の数字(モデル呼び出し、ツール呼び出し、トークン)の入ったエラーの結果"),
          );
        }

        // A reply cut off because the child's context window is full: no answer either.
        const full = await played(t, oneTurn([reply.tools([task("toolu_full")]), reply.text("The first word is", "model_context_window_exceeded"), reply.text("I will read it myself.")], 0));
        const fullResult = parentResult(t, full.requests, "toolu_full");
        if (!fullResult.is_error) t.fail(say(`a reply cut off by a full context window was taken as the answer: ${quote(resultText(fullResult))}`, `コンテキストウィンドウがいっぱいで途切れた応答が答えとして扱われました: ${quote(resultText(fullResult))}`));

        // A server tool that never finishes: each reply is paused (pause_turn) and sent back, 30 in all.
        const pauses = Array.from({ length: 30 }, () => reply.text("Still searching; so far", "pause_turn"));
        const paused = await t.replay(oneTurn([reply.tools([task("toolu_paused")]), ...pauses, reply.text("I will search myself.")], 30));
        const pausedCalls = childRequests(paused.requests).length;
        if (pausedCalls !== 30) t.fail(say(`the child paused at every reply made ${pausedCalls} model calls, not 30`, `毎回一時停止する子のモデル呼び出しは ${pausedCalls} 回で、30回ではありません`));
        noTurnError(t, paused);
        const halfDone = parentResult(t, paused.requests, "toolu_paused");
        if (!halfDone.is_error || !number(resultText(halfDone), 30)) {
          t.fail(say(`a child still paused at its 30th model call was not ended by the limit: ${quote(resultText(halfDone))}`, `30回目のモデル呼び出しでまだ一時停止している子が、上限で終わっていません: ${quote(resultText(halfDone))}`));
        }
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
