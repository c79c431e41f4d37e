// Exercise s13: the reply streams. The loop, the tools, runTool, endTurn and the check of a
// finished reply (wholeReply) are given; the learner writes how the stream is read and stopped
// (streamReply), how its events build the message (addEvent), what the person sees as they
// come (showEvent) and what a reply stopped by Ctrl-C keeps (whatWasComplete). The replies
// that must arrive slowly, or stop half way, come from a provider on 127.0.0.1 that writes
// the API's event stream (lib/course/stream-provider.ts); the rest from the replay engine.
import type { Message, MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { defineExercise, quote, reply, say, scenarioOf, type CheckKit } from "../lib/course/exercises.ts";
import { startReplay } from "../lib/course/replay.ts";
import { eventsOf, splitAt, startStreamProvider, type StreamProvider } from "../lib/course/stream-provider.ts";
import { checkedReply } from "../lib/runtime/model.ts";
import { interrupt } from "../lib/runtime/terminal.ts";

type Loop = (messages: MessageParam[]) => Promise<void>;
type Client = { messages: { create(request: object): Promise<Message> } };

/** A text reply of one block per text. */
const texts = (...parts: string[]): Message => ({ ...reply.text(parts[0]), content: parts.map((text) => ({ type: "text", text, citations: null })) }) as Message;

/** Every block kind a reply may hold, the stop fields and the usage a stream sends last. */
const EVERYTHING = {
  ...reply.text("x"),
  content: [
    { type: "thinking", thinking: "The version is in package.json.", signature: "sig-0123456789abcdef" },
    { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP" },
    { type: "text", text: "Reading the two files the version lives in, then the changelog.", citations: null },
    { type: "tool_use", id: "toolu_check_a", name: "read_file", input: { path: "package.json" } },
    { type: "tool_use", id: "toolu_check_b", name: "read_file", input: { path: "CHANGELOG.md", limit: 40 } },
  ],
  stop_reason: "stop_sequence",
  stop_sequence: "END",
  usage: { input_tokens: 2100, output_tokens: 310, cache_creation_input_tokens: 0, cache_read_input_tokens: 1800 },
} as unknown as Message;

/** Everything the person saw, console.log and writes to stdout alike, in order, until the check ends. */
function watchScreen(t: CheckKit): () => string {
  let screen = "";
  const [write, log] = [process.stdout.write, console.log];
  process.stdout.write = ((chunk: string | Uint8Array) => ((screen += String(chunk)), true)) as typeof process.stdout.write;
  console.log = (...parts: unknown[]) => void (screen += `${parts.join(" ")}\n`);
  t.cleanup(() => {
    process.stdout.write = write;
    console.log = log;
  });
  return () => screen;
}

/** The learner's stage pointed at a provider on loopback that streams slowly; the screen watched. */
async function slowly(t: CheckKit): Promise<{ loop: Loop; provider: StreamProvider; screen: () => string }> {
  const provider = await startStreamProvider();
  t.cleanup(() => provider.close());
  const stage = await t.withSettings({ ANTHROPIC_API_KEY: "sk-ant-check-0123456789", ANTHROPIC_BASE_URL: provider.url });
  return { loop: stage.agentLoop as Loop, provider, screen: watchScreen(t) };
}

/** Resolves once `check()` holds; fails with `late` after three seconds. */
async function until(t: CheckKit, check: () => boolean, late: { en: string; ja: string }): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > 3000) t.fail(late);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Once the provider holds the reply half way, and what it sent is on the screen (`shown`), or
 * has had time to be read: the moment a person presses Ctrl-C.
 */
async function whileHeld(t: CheckKit, provider: StreamProvider, shown: () => boolean): Promise<void> {
  await until(t, () => provider.isWaiting(), say("the request never came", "リクエストが来ませんでした"));
  const started = Date.now();
  while (!shown() && Date.now() - started < 300) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Ctrl-C, as the terminal sends it: with nothing to cancel it would end the program, which here is a failure. */
function pressCtrlC(t: CheckKit): void {
  const exit = process.exit;
  process.exit = (() => {
    throw new Error("process.exit");
  }) as typeof process.exit;
  try {
    interrupt();
  } catch {
    t.fail(
      say("Ctrl-C during the reply would have ended the program: nothing was cancellable while the reply streamed", "返答の途中の Ctrl-C でプログラムが終わってしまいます。返答が流れている間、取り消せるものが登録されていません"),
      say("the request aborted by Ctrl-C (cancellable from lib/runtime/terminal.ts)", "Ctrl-C でリクエストが中断される(lib/runtime/terminal.ts の cancellable)"),
    );
  } finally {
    process.exit = exit;
  }
}

/** The next prompt after an interrupted turn must be a request the API accepts (the provider refuses what it would not). */
async function nextPromptWorks(t: CheckKit, loop: Loop, provider: StreamProvider, messages: MessageParam[]): Promise<void> {
  provider.scripts.push(await eventsOf(reply.text("Here is a shorter answer.")));
  messages.push({ role: "user", content: "a shorter answer, please" });
  try {
    await t.within(3000, loop(messages), say("the next prompt's turn did not end", "次のプロンプトのターンが終わりませんでした"));
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    t.fail(say(`after the interrupted reply, the next prompt failed: ${text}`, `中断した返答のあと、次のプロンプトが失敗しました: ${text}`));
  }
}

export default defineExercise({
  stage: "s13",
  title: say("The reply as it is written", "書かれるそばから見せる返答"),
  mechanism: say(
    "read the reply's events as they come: show text at once and a call once whole, build the message the loop gets, and stop at Ctrl-C keeping what was complete",
    "返答のイベントを届いた順に読む。テキストはすぐに、呼び出しはそろった時点で見せ、ループに渡すメッセージを組み立て、Ctrl-C では完成した部分だけを残して止める",
  ),
  minutes: 45,
  takeOut: [
    {
      function: "streamReply",
      task: say(
        "send the request as a stream (api.messages.events, with an AbortSignal), make Ctrl-C abort it (cancellable), feed each event to addEvent and showEvent; at the end return wholeReply, or whatWasComplete after Ctrl-C.",
        "リクエストをストリームで送り(api.messages.events に AbortSignal を渡す)、Ctrl-C で中断できるようにし(cancellable)、イベントを1つずつ addEvent と showEvent に渡します。最後は wholeReply を、Ctrl-C のあとは whatWasComplete を返します。",
      ),
    },
    {
      function: "addEvent",
      task: say(
        "add one event to the reply being built: message_start gives the message, each block starts, grows by its deltas (a call's input as JSON pieces, parsed when the block stops) and stops; message_delta gives the stop reason and the usage.",
        "イベントを1つ、組み立て中の返答に加えます。message_start がメッセージを、各ブロックは start で始まり、delta で育ち(呼び出しの入力は JSON の断片で、ブロックの stop で解析)、stop で完成します。message_delta は終了理由と使用量です。",
      ),
    },
    {
      function: "showEvent",
      task: say(
        "show the person each event as it comes: a text delta at once (escapes shown, never obeyed), a line break when a text block ends, a call with showCall once its input is whole.",
        "イベントが届くたびに人に見せます。テキストの差分はすぐに(エスケープは見える形で)、テキストのブロックが終わったら改行を、呼び出しは入力がそろった時点で showCall で表示します。",
      ),
    },
    {
      function: "whatWasComplete",
      task: say(
        "after Ctrl-C, keep only the complete blocks (no empty text), with stop_reason null; if nothing was complete, throw an error saying the reply was interrupted.",
        "Ctrl-C のあとは、完成したブロックだけを残し(空のテキストは除く)、stop_reason を null にします。完成したものが何もなければ、返答が中断されたと伝えるエラーを投げます。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the text printed when the reply ends (s06's showText), not as it arrives",
      change: [
        ["    process.stdout.write(visible(text.slice(0, text.length - reply.held.length))); // model text: escapes shown, never obeyed\n", ""],
        ["  // s13: the text is on the screen already, shown as it streamed (showEvent): nothing twice.\n", "  for (const block of _response.content) if (block.type === \"text\") console.log(visible(block.text));\n"],
      ],
      fails: "as-it-comes",
    },
    {
      name: "the text shown twice: as it streams, and again by showText",
      change: [["  // s13: the text is on the screen already, shown as it streamed (showEvent): nothing twice.\n", "  for (const block of _response.content) if (block.type === \"text\") console.log(visible(block.text));\n"]],
      fails: "as-it-comes",
    },
    {
      name: "the model's text written raw: its escape sequences reach the terminal",
      change: [["    process.stdout.write(visible(text.slice(0, text.length - reply.held.length)));", "    process.stdout.write(text.slice(0, text.length - reply.held.length));"]],
      fails: "as-it-comes",
    },
    {
      name: "a call shown when its block starts, before its input has come",
      change: [
        ["  if (event.type !== \"content_block_stop\") return;", "  if (event.type === \"content_block_start\" && event.content_block.type === \"tool_use\") showCall(event.content_block);\n  if (event.type !== \"content_block_stop\") return;"],
        ["  if (block?.type === \"tool_use\" && reply.complete[event.index]) showCall(block);\n", ""],
      ],
      fails: "call-when-whole",
    },
    {
      name: "a call shown only once the whole reply is there",
      change: [
        ["  if (block?.type === \"tool_use\" && reply.complete[event.index]) showCall(block);\n", ""],
        ["  const content = message.content.filter((_, i) => reply.complete[i]);\n", "  const content = message.content.filter((_, i) => reply.complete[i]);\n  for (const block of content) if (block.type === \"tool_use\") showCall(block);\n"],
      ],
      fails: "call-when-whole",
    },
    {
      name: "the call line printed twice: runTool still prints it at step 5",
      change: [["  // 5. Describe, in one line, what is about to happen: s13's stream showed it when the call was whole (showCall).\n", "  // 5. Describe, in one line, what is about to happen.\n  console.log(dim(`> ${tool.displayName} ${visible(clip(tool.getDescription(params).split(\"\\n\")[0], 120, \"head\"))}`));\n"]],
      fails: "call-when-whole",
    },
    {
      name: "each JSON piece taken for the whole input, not joined to the ones before",
      change: [["reply.json[index] = (reply.json[index] ?? \"\") + delta.partial_json;", "reply.json[index] = delta.partial_json;"]],
      fails: "assembles",
    },
    {
      name: "a thinking block's signature dropped: the API refuses thinking sent back unsigned",
      change: [["    if (delta.type === \"signature_delta\" && block?.type === \"thinking\") block.signature = delta.signature;\n", ""]],
      fails: "assembles",
    },
    {
      name: "only text and tool_use kept: blocks that come whole in their start (redacted thinking) lost",
      change: [["  if (event.type === \"content_block_start\") message.content[event.index] = { ...event.content_block };", "  if (event.type === \"content_block_start\" && (event.content_block.type === \"text\" || event.content_block.type === \"tool_use\" || event.content_block.type === \"thinking\")) message.content[event.index] = { ...event.content_block };"]],
      fails: "assembles",
    },
    {
      name: "message_delta's stop reason and stop sequence ignored",
      change: [["    for (const [name, value] of Object.entries(event.delta)) if (value != null) Object.assign(message, { [name]: value });\n", ""]],
      fails: "assembles",
    },
    {
      name: "the final usage of message_delta ignored: the output tokens stay 0",
      change: [["    for (const [name, value] of Object.entries(event.usage)) if (value != null) Object.assign(message.usage, { [name]: value });\n", ""]],
      fails: "assembles",
    },
    {
      name: "Ctrl-C not wired to the request: it ends the program instead of the reply",
      change: [
        ["    await cancellable(() => stop.abort(), async () => {", "    await (async () => {"],
        ["        showEvent(reply, event);\n      }\n    });", "        showEvent(reply, event);\n      }\n    })();"],
      ],
      fails: "interrupt-keeps",
    },
    {
      name: "after Ctrl-C the text block cut mid-sentence is kept too",
      change: [["filter((block, i) => reply.complete[i] && !(block.type === \"text\" && block.text.trim() === \"\"))", "filter((block, i) => (reply.complete[i] || block.type === \"text\") && !(block.type === \"text\" && block.text.trim() === \"\"))"]],
      fails: "interrupt-keeps",
    },
    {
      name: "after Ctrl-C a call whose input was still arriving is kept (and answered as not run)",
      change: [["filter((block, i) => reply.complete[i] && !(block.type === \"text\" && block.text.trim() === \"\"))", "filter((block, i) => (reply.complete[i] || block.type === \"tool_use\") && !(block.type === \"text\" && block.text.trim() === \"\"))"]],
      fails: "interrupt-calls",
    },
    {
      name: "a reply stopped by Ctrl-C keeps a stop reason: its complete calls run",
      change: [["  return { ...reply.message, content: kept, stop_reason: null };", "  return { ...reply.message, content: kept, stop_reason: kept.some((block) => block.type === \"tool_use\") ? \"tool_use\" : \"end_turn\" };"]],
      fails: "interrupt-calls",
    },
    {
      name: "nothing complete at Ctrl-C: an empty assistant message enters the history",
      change: [["  if (!reply.message || kept.length === 0) throw new Error(", "  if (!reply.message) throw new Error("]],
      fails: "interrupt-calls",
    },
    {
      name: "a complete call of an interrupted reply left without its result",
      change: [["    why = \"Not run: the person interrupted your reply (Ctrl-C) before this call could run.\";\n", "    return;\n"]],
      fails: "interrupt-calls",
    },
  ],
  requirements: [
    {
      id: "assembles",
      title: say(
        "The loop gets the reply a request sent whole would give: every block (text, a call's input from its JSON pieces, thinking with its signature, blocks that come whole), the stop reason and sequence, the usage",
        "ループには、ストリームにしない場合と同じ返答が渡る。すべてのブロック(テキスト、JSON の断片から組み立てた呼び出しの入力、署名つきの思考、まるごと届くブロック)、終了理由と停止シーケンス、使用量",
      ),
      hints: [
        say("The events tell you, in order, everything the whole reply holds. Which event carries what?", "イベントは、返答全体が持つものを順番にすべて伝えます。どのイベントが何を運ぶでしょう。"),
        say(
          "message_start gives the message with empty content; content_block_start puts block i in place; the deltas add to it (text, thinking, signature, a call's JSON string); content_block_stop parses a call's JSON; message_delta sets stop_reason, stop_sequence and the usage.",
          "message_start は content が空のメッセージを、content_block_start はブロック i を置きます。delta がそこに足し(テキスト、思考、署名、呼び出しの JSON 文字列)、content_block_stop で呼び出しの JSON を解析し、message_delta が stop_reason、stop_sequence、使用量を設定します。",
        ),
        say(
          "if (event.type === \"content_block_delta\" && event.delta.type === \"input_json_delta\") reply.json[event.index] = (reply.json[event.index] ?? \"\") + event.delta.partial_json; … at content_block_stop: block.input = JSON.parse(reply.json[event.index]); reply.complete[event.index] = true;",
          "if (event.type === \"content_block_delta\" && event.delta.type === \"input_json_delta\") reply.json[event.index] = (reply.json[event.index] ?? \"\") + event.delta.partial_json; … content_block_stop で block.input = JSON.parse(reply.json[event.index]); reply.complete[event.index] = true;",
        ),
      ],
      async check(t) {
        // Through the loop: the message it keeps, and the calls it runs, are the recorded ones.
        t.write("package.json", '{ "version": "1.4.2" }\n');
        t.write("CHANGELOG.md", "# 1.4.2\n");
        const session = t.asRecorded(await t.replay(scenarioOf([EVERYTHING, reply.text("1.4.2")], { prompts: ["which version is it?"] })));
        const got = JSON.stringify(session.messages[1]?.content);
        const recorded = JSON.stringify(JSON.parse(JSON.stringify(EVERYTHING.content)));
        if (got !== recorded) t.fail(say(`the loop kept ${quote(got)}`, `ループが残したのは ${quote(got)} でした`), say(`the reply as recorded: ${quote(recorded)}`, `記録どおりの返答: ${quote(recorded)}`));
        if (session.requests.some((request) => request.stream !== true)) t.fail(say("a request went out without stream: true", "stream: true のないリクエストがありました"));
        // The client itself: the stop fields and the usage, as a request sent whole returns them.
        const replay = startReplay(scenarioOf([EVERYTHING]));
        t.cleanup(() => replay.close());
        watchScreen(t);
        const message = await (t.stage.client as Client).messages.create({ model: "m", max_tokens: 100, messages: [{ role: "user", content: "go" }] });
        const whole = checkedReply(JSON.parse(JSON.stringify(EVERYTHING)), undefined);
        for (const field of ["stop_reason", "stop_sequence", "usage"] as const) {
          const [mine, theirs] = [JSON.stringify(message[field]), JSON.stringify(whole[field])];
          if (mine !== theirs) t.fail(say(`the message's ${field} is ${mine}`, `メッセージの ${field} が ${mine} でした`), say(`${field} ${theirs}, as message_delta gave it`, `message_delta のとおり ${field} が ${theirs}`));
        }
      },
    },
    {
      id: "as-it-comes",
      title: say(
        "Text is on the screen while the reply is still arriving, each piece as it comes, shown once, with its escapes shown and not obeyed",
        "返答が届いている最中に、テキストが届いた分だけ画面に出る。表示は1回だけで、エスケープは実行されず見える形で出る",
      ),
      hints: [
        say("A person who waits for the whole reply sees nothing for seconds. What can be printed the moment a text_delta arrives?", "返答全体を待つと、人は何秒も何も見られません。text_delta が届いた瞬間に何を表示できるでしょう。"),
        say(
          "In showEvent, write each text_delta's text to stdout with process.stdout.write (no line break), through visible(); end the line when the text block stops. The loop's showText must then print nothing.",
          "showEvent で、text_delta のテキストを visible() に通して process.stdout.write で書きます(改行なし)。テキストのブロックが止まったら行を終えます。ループが呼ぶ showText は、もう何も表示しません。",
        ),
        say(
          "if (event.type === \"content_block_delta\" && event.delta.type === \"text_delta\") process.stdout.write(visible(event.delta.text));",
          "if (event.type === \"content_block_delta\" && event.delta.type === \"text_delta\") process.stdout.write(visible(event.delta.text));",
        ),
      ],
      async check(t) {
        const { loop, provider, screen } = await slowly(t);
        const text = "Reading the files now.\x1b[2J Then I will explain what I found.";
        const [first, rest] = splitAt(await eventsOf(texts(text)), /text_delta/);
        provider.scripts.push([...first, "wait", ...rest]);
        const turn = loop([{ role: "user", content: "explain" }]);
        turn.catch(() => {});
        await until(t, () => screen().includes("Reading the "), say(`nothing of the text was on the screen while the reply was still arriving (the screen: ${quote(screen())})`, `返答が届いている間、テキストが画面に出ていませんでした(画面: ${quote(screen())})`));
        provider.release();
        await t.within(3000, turn, say("the turn did not end once the reply had", "返答が終わってもターンが終わりませんでした"));
        const shown = "Reading the files now.\\e[2J Then I will explain what I found.";
        if (screen() !== `${shown}\n`) t.fail(say(`the screen showed ${quote(screen())}`, `画面の表示は ${quote(screen())} でした`), say(`the text once, its escape written out: ${quote(`${shown}\n`)}`, `テキストが1回、エスケープは書き出した形で: ${quote(`${shown}\n`)}`));
      },
    },
    {
      id: "call-when-whole",
      title: say(
        "A call is shown once its input is whole, before the reply ends, never from half its input, and only once",
        "呼び出しは入力がそろった時点で、返答が終わる前に表示される。入力が半分のうちは表示されず、表示は1回だけ",
      ),
      hints: [
        say("A call's input arrives as pieces of JSON. When can you say what the call will do?", "呼び出しの入力は JSON の断片で届きます。いつなら、その呼び出しが何をするか言えるでしょう。"),
        say("At the tool block's content_block_stop, once addEvent has parsed its input, call showCall(block). runTool no longer prints the line (its step 5 says so).", "ツールのブロックの content_block_stop で、addEvent が入力を解析したあとに showCall(block) を呼びます。runTool はもうその行を表示しません(手順 5 にそう書いてあります)。"),
        say(
          "if (event.type === \"content_block_stop\") { const block = reply.message?.content[event.index]; if (block?.type === \"tool_use\" && reply.complete[event.index]) showCall(block); }",
          "if (event.type === \"content_block_stop\") { const block = reply.message?.content[event.index]; if (block?.type === \"tool_use\" && reply.complete[event.index]) showCall(block); }",
        ),
      ],
      async check(t) {
        const { loop, provider, screen } = await slowly(t);
        t.write("notes.md", "the notes\n");
        const call = reply.tools([{ id: "toolu_check_read", name: "read_file", input: { path: "notes.md", limit: 40 } }], "Reading the notes.");
        const [firstPiece, afterFirst] = splitAt(await eventsOf(call), /input_json_delta/);
        const [toTheStop, toTheEnd] = splitAt(afterFirst, /content_block_stop/);
        provider.scripts.push([...firstPiece, "wait", ...toTheStop, "wait", ...toTheEnd], await eventsOf(reply.text("Read.")));
        const turn = loop([{ role: "user", content: "read the notes" }]);
        turn.catch(() => {});
        await until(t, () => screen().includes("Reading the notes."), say(`the text before the call never came on the screen: ${quote(screen())}`, `呼び出しの前のテキストが画面に出ませんでした: ${quote(screen())}`));
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (/ReadFile|read_file|notes\.md/.test(screen().replace("Reading the notes.", ""))) {
          t.fail(say(`a call was shown from the first piece of its input: ${quote(screen())}`, `入力の最初の断片だけで呼び出しが表示されました: ${quote(screen())}`));
        }
        provider.release();
        await until(t, () => screen().includes("notes.md"), say(`the call was not shown once its input was whole, while the rest of the reply was still to come (the screen: ${quote(screen())})`, `入力がそろっても、返答の残りが届く前に呼び出しが表示されませんでした(画面: ${quote(screen())})`));
        provider.release();
        await t.within(3000, turn, say("the turn did not end", "ターンが終わりませんでした"));
        const lines = screen().split("\n").filter((line) => /ReadFile|read_file\(/.test(line));
        if (lines.length !== 1) t.fail(say(`the call line was shown ${lines.length} times: ${quote(screen())}`, `呼び出しの行が ${lines.length} 回表示されました: ${quote(screen())}`), say("once", "1回"));
      },
    },
    {
      id: "interrupt-keeps",
      title: say(
        "Ctrl-C during a reply stops it at once (the request is aborted), keeps the text blocks that were complete and drops the one half written, says so; the next prompt works",
        "返答の途中の Ctrl-C で返答はすぐに止まり(リクエストを中断)、完成したテキストのブロックは残り、書きかけのブロックは捨てられ、そう伝えられる。次のプロンプトも動く",
      ),
      hints: [
        say("Ctrl-C already cancels a running tool (s06). What could it cancel while a reply streams?", "Ctrl-C は、動いているツールをすでに取り消せます(s06)。返答が流れている間は、何を取り消せるでしょう。"),
        say(
          "Give api.messages.events an AbortSignal and run the reading inside cancellable(() => controller.abort(), ...). After an abort, keep only the blocks whose content_block_stop came.",
          "api.messages.events に AbortSignal を渡し、読み取りを cancellable(() => controller.abort(), ...) の中で行います。中断のあとは、content_block_stop が届いたブロックだけを残します。",
        ),
        say(
          "const kept = reply.message.content.filter((block, i) => reply.complete[i]); return { ...reply.message, content: kept, stop_reason: null };",
          "const kept = reply.message.content.filter((block, i) => reply.complete[i]); return { ...reply.message, content: kept, stop_reason: null };",
        ),
      ],
      async check(t) {
        const { loop, provider, screen } = await slowly(t);
        const [upToHalf, rest] = splitAt(await eventsOf(texts("First, the plan.", "Then a long explanation the person will not wait for.")), /"index":1,"delta"/, 2);
        provider.scripts.push([...upToHalf, "wait", ...rest]);
        const messages: MessageParam[] = [{ role: "user", content: "explain" }];
        const turn = loop(messages);
        turn.catch(() => {});
        await until(t, () => screen().includes("Then a long explana"), say(`the second block never came on the screen: ${quote(screen())}`, `2つ目のブロックが画面に出ませんでした: ${quote(screen())}`));
        pressCtrlC(t);
        await t.within(1000, turn.catch(() => {}), say("after Ctrl-C the turn was still waiting for the reply a second later", "Ctrl-C から1秒たっても、ターンが返答を待ち続けていました"));
        await until(t, () => provider.hungUp[0] === true, say("the request was not aborted: the provider was still connected", "リクエストが中断されず、プロバイダーとの接続が続いていました"));
        if (!/interrupt/i.test(screen())) t.fail(say(`nothing said the reply was interrupted: ${quote(screen())}`, `返答が中断されたことが伝えられていません: ${quote(screen())}`));
        const kept = JSON.stringify(messages.slice(1));
        const expected = JSON.stringify([{ role: "assistant", content: [{ type: "text", text: "First, the plan.", citations: null }] }]);
        if (kept !== expected) t.fail(say(`the history after the prompt is ${quote(kept)}`, `プロンプトのあとの履歴は ${quote(kept)} でした`), say(`only the complete block: ${quote(expected)}`, `完成したブロックだけ: ${quote(expected)}`));
        await nextPromptWorks(t, loop, provider, messages);
      },
    },
    {
      id: "interrupt-calls",
      title: say(
        "After Ctrl-C a complete call is kept and answered as not run, a call still arriving is dropped, nothing runs; with nothing complete the turn ends and nothing enters the history; either way the next prompt works",
        "Ctrl-C のあと、完成した呼び出しは残して「実行していない」と答え、届きかけの呼び出しは捨て、何も実行しない。完成したものがなければターンは終わり、履歴には何も入らない。どちらの場合も次のプロンプトが動く",
      ),
      hints: [
        say("Every tool_use in the history needs its tool_result in the next message, or the next request is refused. And a half-written call cannot run.", "履歴の tool_use にはどれも、次のメッセージに tool_result が要ります。なければ次のリクエストは拒否されます。そして書きかけの呼び出しは実行できません。"),
        say(
          "Keep only complete blocks and set stop_reason null, so the loop hands the reply to endTurn instead of running its calls; endTurn answers them. With nothing kept, throw: an empty message must not enter the history.",
          "完成したブロックだけを残して stop_reason を null にすれば、ループは呼び出しを実行せず endTurn に渡し、endTurn がそれに答えます。何も残らなければ throw します。空のメッセージを履歴に入れてはいけません。",
        ),
        say(
          "if (kept.length === 0) throw new Error(\"the reply was interrupted (Ctrl-C) before any part of it was complete\"); return { ...reply.message, content: kept, stop_reason: null };",
          "if (kept.length === 0) throw new Error(\"the reply was interrupted (Ctrl-C) before any part of it was complete\"); return { ...reply.message, content: kept, stop_reason: null };",
        ),
      ],
      async check(t) {
        const { loop, provider, screen } = await slowly(t);
        const calls = reply.tools([
          { id: "toolu_check_whole", name: "write_file", input: { path: "whole.txt", content: "x" } },
          { id: "toolu_check_half", name: "write_file", input: { path: "half.txt", content: "a long content the model is still writing" } },
        ]);
        const [upToHalf, rest] = splitAt(await eventsOf(calls), /"index":1,"delta"/, 2);
        provider.scripts.push([...upToHalf, "wait", ...rest]);
        const messages: MessageParam[] = [{ role: "user", content: "write two files" }];
        const turn = loop(messages);
        turn.catch(() => {});
        await whileHeld(t, provider, () => screen().includes("whole.txt"));
        pressCtrlC(t);
        await t.within(1000, turn.catch(() => {}), say("after Ctrl-C the turn was still waiting a second later", "Ctrl-C から1秒たっても、ターンが待ち続けていました"));
        const after = JSON.stringify(messages.slice(1));
        const answered = JSON.stringify([
          { role: "assistant", content: [calls.content[0]] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_check_whole", is_error: true }] },
        ]);
        const simplified = JSON.stringify(messages.slice(1).map((m) => (Array.isArray(m.content) ? { ...m, content: m.content.map((b) => (b.type === "tool_result" ? { type: b.type, tool_use_id: b.tool_use_id, is_error: b.is_error } : b)) } : m)));
        if (simplified !== answered) t.fail(say(`the history after the prompt is ${quote(after)}`, `プロンプトのあとの履歴は ${quote(after)} でした`), say("the complete call, then its is_error result; the half-written call nowhere", "完成した呼び出しと、その is_error の結果。書きかけの呼び出しはどこにもない"));
        if (t.read("whole.txt") !== undefined || t.read("half.txt") !== undefined) t.fail(say("a call of the interrupted reply ran", "中断した返答の呼び出しが実行されました"));
        const answer = JSON.stringify((messages[2]?.content as unknown[] | undefined)?.[0] ?? null);
        if (!/interrupt|Ctrl-C/i.test(answer)) t.fail(say(`the complete call's result does not say the reply was interrupted: ${quote(answer)}`, `完成した呼び出しの結果が、返答の中断を伝えていません: ${quote(answer)}`));
        await nextPromptWorks(t, loop, provider, messages);
        // Stopped before anything was complete: the turn ends, the history is as it was.
        const [firstPiece, others] = splitAt(await eventsOf(texts("A reply stopped in its first sentence.")), /text_delta/);
        provider.scripts.push([...firstPiece, "wait", ...others]);
        const early: MessageParam[] = [{ role: "user", content: "go" }];
        const stopped = loop(early).then(() => "ended", () => "failed");
        await whileHeld(t, provider, () => screen().includes("A reply st"));
        pressCtrlC(t);
        await t.within(1000, stopped, say("after Ctrl-C the turn was still waiting a second later", "Ctrl-C から1秒たっても、ターンが待ち続けていました"));
        if (early.length !== 1) t.fail(say(`with nothing complete, the history gained ${quote(early.slice(1))}`, `完成したものがないのに、履歴に ${quote(early.slice(1))} が加わりました`), say("nothing", "何も加わらない"));
        await nextPromptWorks(t, loop, provider, early);
      },
    },
    {
      id: "demo",
      title: say(
        "Plays the stage's recorded demo: both files read, the --version flag added and run (1.4.2), the follow-up answered; every reply streamed",
        "ステージの記録済みデモを再生できる(2つのファイルを読み、--version を追加して実行し 1.4.2 が出て、続きの質問に答える。返答はすべてストリームで届く)",
      ),
      hints: [
        say("Run your copy: npx tsx workshop/s13.ts, and watch the text arrive.", "コピーを動かして、テキストが届く様子を見ます: npx tsx workshop/s13.ts"),
        say("The demo's replies come through the replay engine as event streams, exactly as the checks above use them.", "デモの返答は、上のチェックと同じく、再生エンジンからイベントのストリームとして届きます。"),
        say("If the checks above pass and this one fails, compare the message with the demo's description in fixtures/s13/demo.json.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを fixtures/s13/demo.json のデモの説明と比べてみてください。"),
      ],
      async check(t) {
        watchScreen(t);
        const session = t.asRecorded(await t.demo());
        if (!(t.read("cli.js") ?? "").includes("--version")) t.fail(say("cli.js has no --version after the demo", "デモのあと、cli.js に --version がありません"));
        if (session.requests.some((request) => request.stream !== true)) t.fail(say("a request went out without stream: true", "stream: true のないリクエストがありました"));
        const ran = JSON.stringify(session.messages);
        if (!ran.includes("1.4.2\\nHello, Ada!")) t.fail(say("the command did not print 1.4.2 and the greeting", "コマンドが 1.4.2 とあいさつを表示しませんでした"));
      },
    },
  ],
});
