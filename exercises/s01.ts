// Exercise s01: the agent loop itself. bash and runTool are given; agentLoop is taken out.
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { defineExercise, quote, reply, resultText, say, scenarioOf, toolResults, type CheckKit } from "../lib/course/exercises.ts";

/** Replay `replies` through the learner's loop and fail with the replay's own words if it did not match. */
async function replayed(t: CheckKit, ...args: Parameters<typeof scenarioOf>) {
  const session = await t.replay(scenarioOf(...args));
  for (const error of session.turnErrors) {
    const text = error instanceof Error ? error.message : String(error);
    if (session.problems.length === 0) t.fail(say(`the loop threw: ${text}`, `ループが例外を投げました: ${text}`));
  }
  return session;
}

export default defineExercise({
  stage: "s01",
  title: say("The agent loop", "エージェントループ"),
  mechanism: say("agentLoop: call the model, run the tools it asks for, feed the results back, stop when it stops asking", "agentLoop: モデルを呼び、頼まれたツールを実行し、結果を返し、頼まれなくなったら止まる"),
  minutes: 25,
  takeOut: [
    {
      function: "agentLoop",
      task: say(
        "call the model, run the tools it asks for (runTool), send the results back, and return when it stops asking.",
        "モデルを呼び、頼まれたツールを runTool で実行して結果を返し、頼まれなくなったら return します。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the calls run at once, each result pushed as it finishes",
      change: [
        [
          "    const results = await runTools(response.content);",
          "    const results: ToolResultBlockParam[] = [];\n    await Promise.all(response.content.map(async (block) => {\n      if (block.type === \"tool_use\") results.push(await runTool(block));\n    }));",
        ],
      ],
      fails: "runs-tools",
    },
    {
      name: "the calls run at once, the results kept in order",
      change: [["    const results = await runTools(response.content);", "    const results = await Promise.all(response.content.filter((block) => block.type === \"tool_use\").map((block) => runTool(block)));"]],
      fails: "runs-tools",
    },
    {
      name: "one user message per result",
      change: [["    messages.push({ role: \"user\", content: results });", "    for (const result of results) messages.push({ role: \"user\", content: [result] });"]],
      fails: "runs-tools",
    },
    {
      name: "only the first tool call of a reply is run",
      change: [
        [
          "    const results = await runTools(response.content);",
          "    const first = response.content.find((block) => block.type === \"tool_use\");\n    const results = first ? [await runTool(first)] : [];",
        ],
      ],
      fails: "runs-tools",
    },
    {
      name: "each result carries the reply's id, not its call's tool_use id",
      change: [["    const results = await runTools(response.content);", "    const results = (await runTools(response.content)).map((result) => ({ ...result, tool_use_id: response.id }));"]],
      fails: "runs-tools",
    },
    {
      name: "handlers called directly: a failure goes back as text, without is_error",
      change: [
        [
          "    const results = await runTools(response.content);",
          [
            "    const results: ToolResultBlockParam[] = [];",
            "    for (const block of response.content) {",
            "      if (block.type !== \"tool_use\") continue;",
            "      try {",
            "        results.push({ type: \"tool_result\", tool_use_id: block.id, content: await TOOL_HANDLERS[block.name](block.input as Record<string, unknown>) });",
            "      } catch (error) {",
            "        results.push({ type: \"tool_result\", tool_use_id: block.id, content: `Error: ${(error as Error).message}` });",
            "      }",
            "    }",
          ].join("\n"),
        ],
      ],
      fails: "tool-errors",
    },
    {
      name: "the loop stops after the first tool round",
      change: [["    messages.push({ role: \"user\", content: results });", "    messages.push({ role: \"user\", content: results });\n    return;"]],
      fails: "keeps-going",
    },
    {
      name: "the reply is not added to messages (the history loses it)",
      change: [["    messages.push({ role: \"assistant\", content: response.content });\n", ""]],
      fails: "keeps-history",
    },
    {
      name: "only the reply's text is added to messages",
      change: [["    messages.push({ role: \"assistant\", content: response.content });", "    messages.push({ role: \"assistant\", content: response.content.filter((block) => block.type === \"text\") });"]],
      fails: "keeps-history",
    },
    {
      name: "the turn is kept in a copy of messages, so the next prompt starts without it",
      change: [["export async function agentLoop(messages: MessageParam[]): Promise<void> {\n", "export async function agentLoop(conversation: MessageParam[]): Promise<void> {\n  const messages = [...conversation];\n"]],
      fails: "keeps-history",
    },
    {
      name: "the loop does not return at end_turn: it asks the model again",
      change: [["    if (response.stop_reason !== \"tool_use\") return endTurn(response, messages);", "    if (response.stop_reason !== \"tool_use\") endTurn(response, messages);"]],
      fails: "stops",
    },
    {
      name: "only end_turn ends the turn: a reply cut off at max_tokens is asked again",
      change: [["    if (response.stop_reason !== \"tool_use\") return endTurn(response, messages);", "    if (response.stop_reason === \"end_turn\") return endTurn(response, messages);"]],
      fails: "stops",
    },
    {
      name: "the text is shown only when the turn ends",
      change: [
        ["    showText(response);\n", ""],
        ["    if (response.stop_reason !== \"tool_use\") return endTurn(response, messages);", "    if (response.stop_reason !== \"tool_use\") {\n      showText(response);\n      return endTurn(response, messages);\n    }"],
      ],
      fails: "shows-text",
    },
    {
      name: "the request carries no tools",
      change: [["      tools: TOOLS,\n      messages,", "      messages,"]],
      fails: "asks-the-model",
    },
  ],
  requirements: [
    {
      id: "asks-the-model",
      title: say("Sends the conversation and the tool schemas to the model", "会話とツールのスキーマをモデルに送る"),
      hints: [
        say("The loop starts by asking the model. What must the model see to answer and to use a tool?", "ループはまずモデルに尋ねます。答えたりツールを使ったりするために、モデルには何が見えている必要があるでしょう。"),
        say("Call client.messages.create with the model, max_tokens, the system prompt, the tool schemas (TOOLS) and the messages so far.", "client.messages.create を、モデル名、max_tokens、システムプロンプト、ツールのスキーマ（TOOLS）、ここまでの messages で呼びます。"),
        say(
          "const response = await client.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, messages });",
          "const response = await client.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, messages });",
        ),
      ],
      async check(t) {
        const session = await replayed(t, [reply.text("Hello.")]);
        const [first] = session.requests;
        if (!first) t.fail(say("the loop never called the model (client.messages.create)", "ループが一度もモデルを呼びませんでした（client.messages.create）"));
        const sent = first.messages[0] as MessageParam | undefined;
        if (sent?.role !== "user" || sent.content !== "prompt 1") {
          t.fail(say(`the first request's messages began with ${quote(sent)}, not the person's prompt`, `最初のリクエストの messages が人のプロンプトではなく ${quote(sent)} で始まっていました`));
        }
        const tools = (first.tools ?? []).map((tool) => ("name" in tool ? tool.name : "?"));
        if (!tools.includes("bash")) t.fail(say(`the request offered the tools [${tools.join(", ")}], so the model cannot ask for bash`, `リクエストのツールが [${tools.join(", ")}] で、モデルは bash を頼めません`));
      },
    },
    {
      id: "runs-tools",
      title: say(
        "Runs the tool calls of a reply one after another and sends all the results back in one message, in the order asked, each with its tool_use id",
        "返信のツール呼び出しを1つずつ順に実行し、結果を1つのメッセージにまとめ、頼まれた順に、tool_use の id を付けて返す",
      ),
      hints: [
        say("One reply can hold several tool_use blocks, and the model expects an answer to each of them, in the order it asked.", "1つの返信に tool_use ブロックがいくつも入ることがあり、モデルはそのすべてに、頼んだ順で答えを待っています。"),
        say(
          "Go through response.content; run each tool_use block with runTool, waiting for one to finish before the next starts (a later call may need what an earlier one did), and collect the results; then add them to messages as one user message.",
          "response.content を順に見て、tool_use ブロックを runTool で実行します。次を始める前に前のものが終わるのを待ち（後の呼び出しは前の呼び出しの結果を使うかもしれません）、結果を集めます。集めた結果は1つの user メッセージとして messages に足します。",
        ),
        say(
          'const results = []; for (const block of response.content) if (block.type === "tool_use") results.push(await runTool(block)); messages.push({ role: "user", content: results });',
          'const results = []; for (const block of response.content) if (block.type === "tool_use") results.push(await runTool(block)); messages.push({ role: "user", content: results });',
        ),
      ],
      async check(t) {
        // The first command takes its time and the second needs what it writes: run at the same
        // time, the second finishes first and finds nothing, and its result comes back first.
        const calls = [
          { id: "toolu_first", name: "bash", input: { command: "sleep 0.3; printf first > a.txt; echo one" } },
          { id: "toolu_second", name: "bash", input: { command: "cat a.txt" } },
        ];
        const session = await replayed(t, [reply.tools(calls), reply.text("Done.")]);
        if (session.requests.length < 2) t.fail(say("the model asked for two bash calls, and the loop never sent their results back", "モデルが bash を2回頼んだのに、ループが結果を返しませんでした"));
        const results = toolResults(session.requests, 1);
        const got = results.map((r) => `${r.tool_use_id}: ${quote(resultText(r))}`).join(", ");
        const expected = say('[toolu_first: "one\\n", toolu_second: "first"], in one user message', '[toolu_first: "one\\n", toolu_second: "first"] を1つの user メッセージで');
        if (results.length !== 2) {
          t.fail(say(`the request after the two calls ended with a message holding ${results.length === 1 ? "one result" : `${results.length} results`}: [${got}]`, `2つの呼び出しのあとのリクエストは、結果が ${results.length} 件のメッセージで終わっていました: [${got}]`), expected);
        }
        const ids = results.map((r) => r.tool_use_id).join(",");
        if (ids === "toolu_second,toolu_first") {
          t.fail(say(`the results came back in the order the calls finished, not the order asked: [${got}]`, `結果が頼まれた順ではなく、終わった順に返りました: [${got}]`), expected);
        }
        if (ids !== "toolu_first,toolu_second") t.fail(say(`the results sent back were [${got}]`, `返された結果は [${got}] でした`), expected);
        if (resultText(results[1]) !== "first") {
          t.fail(
            say(
              `toolu_second ran before toolu_first had finished (it found no a.txt): [${got}]. A later call may need what an earlier one did`,
              `toolu_first が終わる前に toolu_second が動きました（a.txt がありませんでした）: [${got}]。後の呼び出しは前の呼び出しの結果を使うかもしれません`,
            ),
            expected,
          );
        }
        if (resultText(results[0]) !== "one\n") t.fail(say(`the results sent back were [${got}]`, `返された結果は [${got}] でした`), expected);
        t.asRecorded(session);
        if (t.read("a.txt") !== "first") t.fail(say("bash did not run in the workspace: a.txt is not there", "bash がワークスペースで動いていません（a.txt がありません）"));
      },
    },
    {
      id: "keeps-going",
      title: say("Keeps calling the model while it asks for tools", "モデルがツールを頼み続ける限り、モデルを呼び続ける"),
      hints: [
        say("After the results, the model usually wants to speak again, or to ask for another tool.", "結果を受け取ったモデルは、たいていまた何か言うか、別のツールを頼みます。"),
        say("Put the call and the tool round inside a loop that goes round until the model stops asking.", "モデル呼び出しとツール実行を、モデルが頼まなくなるまで回るループの中に入れます。"),
        say("while (true) { const response = await client.messages.create({ ... }); ...; messages.push({ role: \"user\", content: results }); }", "while (true) { const response = await client.messages.create({ ... }); ...; messages.push({ role: \"user\", content: results }); }"),
      ],
      async check(t) {
        const round = (n: number) => reply.tools([{ name: "bash", input: { command: `echo round ${n} >> rounds.txt` } }]);
        const session = await replayed(t, [round(1), round(2), round(3), reply.text("Three rounds.")]);
        if (session.requests.length < 4) {
          t.fail(say(`the loop called the model ${session.requests.length === 1 ? "once" : `${session.requests.length} times`} and stopped while it was still asking for tools`, `ループはモデルを ${session.requests.length} 回呼んだところで、まだツールを頼まれているのに止まりました`), say("4 calls: three tool rounds, then the final answer", "4回の呼び出し（ツール3往復と最後の答え）"));
        }
        t.asRecorded(session);
        const rounds = t.read("rounds.txt") ?? "";
        if (rounds !== "round 1\nround 2\nround 3\n") t.fail(say(`the three bash calls left rounds.txt holding ${quote(rounds)}`, `3回の bash のあと、rounds.txt の中身は ${quote(rounds)} でした`));
      },
    },
    {
      id: "stops",
      title: say("Returns when the model stops asking for tools (stop_reason is not \"tool_use\")", "モデルがツールを頼まなくなったら（stop_reason が \"tool_use\" でなければ）return する"),
      hints: [
        say("How does a reply say that the model is done?", "モデルが「終わった」ことは、返信のどこに表れるでしょう。"),
        say('Look at response.stop_reason: anything but "tool_use" ends the turn, and the loop returns without calling the model again.', 'response.stop_reason を見ます。"tool_use" 以外なら、そのターンは終わりです。もう一度モデルを呼ばずに return します。'),
        say('if (response.stop_reason !== "tool_use") return endTurn(response, messages);', 'if (response.stop_reason !== "tool_use") return endTurn(response, messages);'),
      ],
      async check(t) {
        const session = await t.replay(scenarioOf([reply.text("Nothing to do."), reply.text("Cut off", "max_tokens")]));
        if (session.requests.length === 0) t.fail(say("the loop never called the model", "ループが一度もモデルを呼びませんでした"));
        if (session.requests.length > 2 || session.problems.some((p) => /after the last recorded reply/.test(p))) {
          t.fail(say("after a reply with no tool call, the loop called the model again", "ツール呼び出しのない返信のあと、ループがまたモデルを呼びました"));
        }
        t.asRecorded(session);
      },
    },
    {
      id: "keeps-history",
      title: say(
        "Adds each reply and each batch of results to messages, so the next request (and the next prompt) carries the whole conversation",
        "返信と結果を messages に足していき、次のリクエスト（次のプロンプト）が会話全体を運ぶようにする",
      ),
      hints: [
        say("The model remembers nothing between requests: it knows only what messages holds.", "モデルはリクエストとリクエストの間で何も覚えていません。知っているのは messages の中身だけです。"),
        say("Push the model's reply onto messages as an assistant message before running its tools, and the results after, as a user message.", "ツールを実行する前にモデルの返信を assistant メッセージとして messages に足し、実行後に結果を user メッセージとして足します。"),
        say('messages.push({ role: "assistant", content: response.content }); ... messages.push({ role: "user", content: results });', 'messages.push({ role: "assistant", content: response.content }); ... messages.push({ role: "user", content: results });'),
      ],
      async check(t) {
        const call = reply.tools([{ id: "toolu_remember", name: "bash", input: { command: "echo kept" } }], "Let me look.");
        const session = await replayed(t, [call, reply.text("First turn done."), reply.text("Second turn done.")]);
        t.asRecorded(session);
        const roles = session.messages.map((m) => m.role).join(", ");
        if (roles !== "user, assistant, user, assistant, user, assistant") {
          t.fail(say(`after two prompts the conversation holds [${roles}]`, `2つのプロンプトのあと、会話は [${roles}] でした`), say("[user, assistant, user, assistant, user, assistant]: prompt, reply, results, reply, prompt, reply", "[user, assistant, user, assistant, user, assistant]（プロンプト、返信、結果、返信、プロンプト、返信）"));
        }
        const kept = session.messages[1].content;
        if (!Array.isArray(kept) || !kept.some((b) => b.type === "tool_use" && b.id === "toolu_remember")) {
          t.fail(say("the assistant message in the conversation is not the model's reply (its tool_use block is missing)", "会話の assistant メッセージがモデルの返信になっていません（tool_use ブロックがありません）"));
        }
        const last = session.requests.at(-1)!;
        if (last.messages.length !== 5) {
          t.fail(say(`the request for the second prompt carried ${last.messages.length === 1 ? "one message" : `${last.messages.length} messages`}, not the 5 of the conversation so far`, `2つ目のプロンプトのリクエストが運んだメッセージは ${last.messages.length} 件で、それまでの会話の5件ではありませんでした`));
        }
      },
    },
    {
      id: "shows-text",
      title: say("Shows the model's text to the person", "モデルのテキストを人に見せる"),
      hints: [
        say("The person at the terminal should see what the model says, not only what it runs.", "端末の前の人には、モデルが何を実行したかだけでなく、何を言ったかも見えるべきです。"),
        say("Print every text block of each reply; the file already has a function for that.", "返信ごとに text ブロックをすべて表示します。そのための関数はもうファイルにあります。"),
        say("showText(response); right after the reply is added to messages.", "返信を messages に足した直後に showText(response);"),
      ],
      async check(t) {
        const call = reply.tools([{ name: "bash", input: { command: "true" } }], "Checking the folder first.");
        const session = await replayed(t, [call, reply.text("All clear.")]);
        t.asRecorded(session);
        const shown = t.printed.join("\n");
        for (const text of ["Checking the folder first.", "All clear."]) {
          if (!shown.includes(text)) t.fail(say(`the model said ${quote(text)}, and the person never saw it`, `モデルが ${quote(text)} と言ったのに、人には表示されませんでした`));
        }
      },
    },
    {
      id: "tool-errors",
      title: say("Turns a failing tool call into an error result and carries on", "失敗したツール呼び出しをエラーの結果にして、ループを続ける"),
      hints: [
        say("What happens to your loop when the model names a tool that does not exist, or gives bad input?", "存在しないツールをモデルが指定したり、入力がおかしかったりすると、あなたのループはどうなるでしょう。"),
        say("runTool never throws: it turns a failure into a result with is_error. Send every call through it instead of calling handlers yourself.", "runTool は例外を投げません。失敗を is_error 付きの結果に変えます。ハンドラを直接呼ばず、すべての呼び出しを runTool に通します。"),
        say("results.push(await runTool(block)); rather than TOOL_HANDLERS[block.name](block.input)", "TOOL_HANDLERS[block.name](block.input) ではなく results.push(await runTool(block));"),
      ],
      async check(t) {
        const calls = [
          { id: "toolu_nowhere", name: "teleport", input: {} },
          { id: "toolu_bad", name: "bash", input: { command: 42 } },
        ];
        const session = await replayed(t, [reply.tools(calls), reply.text("I will try something else.")]);
        if (session.requests.length < 2) t.fail(say("the loop stopped at the failing tool calls instead of answering them", "失敗したツール呼び出しに答えず、ループが止まりました"));
        t.asRecorded(session);
        const results = toolResults(session.requests, 1);
        if (results.length !== 2 || !results.every((r) => r.is_error === true)) {
          const got = results.map((r) => `${r.tool_use_id}: is_error ${r.is_error ?? false}, ${quote(resultText(r))}`).join("; ");
          t.fail(say(`the results were [${got}]`, `結果は [${got}] でした`), say("two results, each with is_error: true and a message", "is_error: true とメッセージの付いた結果が2つ"));
        }
      },
    },
    {
      id: "demo",
      title: say("Plays the stage's recorded demo to the end: hello.txt is made and every recorded reply is used", "ステージの記録済みデモを最後まで再生できる（hello.txt ができ、記録した返信をすべて使う）"),
      hints: [
        say("Run your copy: npx tsx workshop/s01.ts. Does the recorded session play to the end?", "コピーを動かしてみます: npx tsx workshop/s01.ts。記録したセッションが最後まで進むでしょうか。"),
        say("The demo has a reply with two tool calls and a second prompt, so every requirement above must hold.", "デモには、ツール呼び出しが2つある返信と2つ目のプロンプトがあります。ここまでの要件がすべて満たされている必要があります。"),
        say("Compare the order of your steps with this: call the model, push the reply, show its text, return if it is done, run the tools, push the results.", "手順の順番を比べてみます: モデルを呼ぶ、返信を足す、テキストを見せる、終わりなら return、ツールを実行、結果を足す。"),
      ],
      async check(t) {
        const session = await t.demo();
        t.asRecorded(session);
        const hello = t.read("hello.txt");
        if (hello === undefined) t.fail(say("hello.txt was not made", "hello.txt ができていません"));
        if (hello !== "Hello from s01\n") t.fail(say(`hello.txt holds ${quote(hello)}`, `hello.txt の中身は ${quote(hello)} でした`));
      },
    },
  ],
});
