// Exercise s15: the adapter. The client that picks it (PROVIDER=openai), the POST (lib), the
// types of the Chat Completions format, runTool's step for arguments that were not JSON and the
// loop are given; the two translations are taken out: toChatRequest and toChatMessages (the
// loop's request as Chat Completions), fromChatReply and argumentsOf (a reply back). The checks
// call the translations with requests and replies a loop would make, run whole sessions with
// PROVIDER=openai through the replay engine, which serves the recorded replies as Chat
// Completions and refuses a request as OpenAI would, and read what went over the wire.
import type { Message, MessageCreateParamsNonStreaming, MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { loadScenario, type Scenario } from "../lib/course/scenario.ts";
import { replayScenario, type ReplayableStage } from "../lib/course/session.ts";
import { defineExercise, notWrittenIn, quote, reply, resultText, say, scenarioOf, type CheckKit, type ReplayedSession } from "../lib/course/exercises.ts";

type Chat = { model?: unknown; messages: Record<string, unknown>[]; tools?: unknown; [field: string]: unknown };
type Call = { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };

/** The stage's own functions the checks call besides the loop. */
const stageOf = (t: CheckKit) =>
  t.stage as unknown as {
    toChatRequest(request: MessageCreateParamsNonStreaming): Chat;
    fromChatReply(reply: unknown): Message;
    runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
    TOOLS: Tool[];
  };

/** A message's text, whether sent as a string or as text parts. */
const textOf = (content: unknown): string | undefined =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("") : undefined;
const use = (id: string, name: string, input: Record<string, unknown>) => ({ type: "tool_use" as const, id, name, input });
const request = (messages: MessageParam[], extra: Partial<MessageCreateParamsNonStreaming> = {}): MessageCreateParamsNonStreaming => ({ model: "m", max_tokens: 100, messages, ...extra });
const chatReply = (message: Record<string, unknown>, finish_reason: string | null, usage?: Record<string, unknown>) => ({
  id: "chatcmpl-check",
  object: "chat.completion",
  model: "gpt-check",
  choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason }],
  ...(usage ? { usage } : {}),
});
const chatCall = (id: string, name: string, args: string) => ({ id, type: "function", function: { name, arguments: args } });

/** A session with PROVIDER=openai: the learner's module loaded afresh with it, replayed as Chat Completions. */
async function playedAsOpenAI(t: CheckKit, scenario: Scenario): Promise<ReplayedSession> {
  const stage = (await t.withSettings({ PROVIDER: "openai", OPENAI_BASE_URL: "", OPENAI_API_KEY: "", MODEL_ID: "" })) as unknown as ReplayableStage;
  const session = await replayScenario(stage, scenario, { workspace: t.workspace });
  for (const error of session.turnErrors) {
    const text = error instanceof Error ? error.message : String(error);
    if (notWrittenIn(text)) throw error; // the report names the function
    t.fail(say(`with PROVIDER=openai a turn ended with an error: ${text}`, `PROVIDER=openai でターンがエラーで終わりました: ${text}`));
  }
  if (session.problems.length > 0) {
    t.fail(say(`with PROVIDER=openai the replay refused a request, as OpenAI would: ${session.problems[0]}`, `PROVIDER=openai で、OpenAI と同じくリプレイがリクエストを拒否しました: ${session.problems[0]}`));
  }
  return session;
}

/** The messages of Chat Completions request `i` of a session. */
const chatMessages = (session: ReplayedSession, i: number) => ((session.chatRequests ?? [])[i]?.messages ?? []) as Record<string, unknown>[];

export default defineExercise({
  stage: "s15",
  title: say("An adapter for Chat Completions", "Chat Completions のアダプタ"),
  mechanism: say(
    "the two translations: the loop's Messages API request as Chat Completions, and a Chat Completions reply back as the Messages API",
    "2つの変換: ループの Messages API リクエストを Chat Completions に、Chat Completions の返答を Messages API に戻す",
  ),
  minutes: 40,
  takeOut: [
    {
      function: "toChatRequest",
      task: say(
        "the system prompt as the first message (role system), each message of the history through toChatMessages, the tools through toChatTool, max_tokens as max_completion_tokens.",
        "システムプロンプトを最初のメッセージ(role system)にし、履歴の各メッセージを toChatMessages に、ツールを toChatTool に通します。max_tokens は max_completion_tokens として送ります。",
      ),
    },
    {
      function: "toChatMessages",
      task: say(
        "an assistant message: its text as content (null when it has none) and its tool_use blocks as tool_calls, arguments a JSON string; a user message: one role \"tool\" message per tool_result, in call order, then any text as a user message.",
        "assistant のメッセージは、テキストを content に(なければ null)、tool_use ブロックを tool_calls に(arguments は JSON の文字列)します。user のメッセージは、tool_result 1つごとに role \"tool\" のメッセージを呼び出し順に1つずつ作り、テキストがあればそのあとに user のメッセージとして置きます。",
      ),
    },
    {
      function: "fromChatReply",
      task: say(
        "the first choice: its content as a text block, its tool_calls as tool_use blocks (ids kept, input from argumentsOf), finish_reason through STOP_REASONS, the usage in the Messages API's terms.",
        "最初の choice の content をテキストブロックに、tool_calls を tool_use ブロックに(id はそのまま、input は argumentsOf で)します。finish_reason は STOP_REASONS で変換し、usage は Messages API の数え方に直します。",
      ),
    },
    {
      function: "argumentsOf",
      task: say(
        "parse a call's arguments; empty means no arguments; what is not a JSON object is kept under NOT_JSON, for runTool to refuse. Never throw.",
        "呼び出しの arguments をパースします。空なら引数なしです。JSON のオブジェクトでないものは NOT_JSON の下に残し、runTool に拒否させます。例外は投げません。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the system prompt sent as a user message",
      change: [['if (system) messages.push({ role: "system", content: system });', 'if (system) messages.push({ role: "user", content: system });']],
      fails: "system-and-tools",
    },
    {
      name: "the tools sent in the Messages API's shape (name, input_schema)",
      change: [["  const tools = (request.tools ?? []).map(toChatTool);", "  const tools = (request.tools ?? []) as unknown as ReturnType<typeof toChatTool>[];"]],
      fails: "system-and-tools",
    },
    {
      name: "the arguments sent as an object, not as a JSON string",
      change: [["arguments: JSON.stringify(block.input ?? {}) } }] : [],", "arguments: (block.input ?? {}) as string } }] : [],"]],
      fails: "tool-calls",
    },
    {
      name: "an assistant's text dropped when it also calls tools",
      change: [["    const content = text || (calls.length > 0 ? null :", "    const content = calls.length > 0 ? null : (text ||"]],
      fails: "tool-calls",
    },
    {
      name: "every result in one tool message",
      change: [
        [
          "  const results = blocks.flatMap((block): ChatMessage[] => (block.type === \"tool_result\" ? [{ role: \"tool\", tool_call_id: block.tool_use_id, content: toolMessageText(block) }] : []));",
          "  const answers = blocks.filter((block) => block.type === \"tool_result\");\n  const results: ChatMessage[] = answers.length > 0 ? [{ role: \"tool\", tool_call_id: answers[0].tool_use_id, content: answers.map(toolMessageText).join(\"\\n\\n\") }] : [];",
        ],
      ],
      fails: "tool-results",
    },
    {
      name: "the results sent back as a user message, as the Messages API has them",
      change: [["[{ role: \"tool\", tool_call_id: block.tool_use_id, content: toolMessageText(block) }]", "[{ role: \"user\", content: toolMessageText(block) }]"]],
      fails: "tool-results",
    },
    {
      name: "the results in reverse order",
      change: [["  return text ? [...results, { role: \"user\", content: text }] : results;", "  return text ? [...results.reverse(), { role: \"user\", content: text }] : results.reverse();"]],
      fails: "tool-results",
    },
    {
      name: "the person's text placed before the tool messages",
      change: [["  return text ? [...results, { role: \"user\", content: text }] : results;", "  return text ? [{ role: \"user\", content: text }, ...results] : results;"]],
      fails: "tool-results",
    },
    {
      name: "is_error lost: a refusal reads like a tool's output",
      change: [["  return result.is_error && !/^(error|not run)\\b/i.test(text) ? `Error: ${text}` : text;", "  return text;"]],
      fails: "tool-results",
    },
    {
      name: "finish_reason passed on as the stop_reason",
      change: [['    stop_reason: STOP_REASONS[finish_reason ?? ""] ?? "end_turn",', '    stop_reason: (finish_reason ?? "end_turn") as StopReason,']],
      fails: "reply",
    },
    {
      name: "a reply cut off (length) taken as a normal end",
      change: [['length: "max_tokens", content_filter', 'length: "end_turn", content_filter']],
      fails: "reply",
    },
    {
      name: "new ids for the calls, so the results answer ids the provider never gave",
      change: [["    const id = typeof call.id === \"string\" && call.id !== \"\" && !ids.has(call.id) ? call.id : `call_unnamed_${++unnamedCalls}`;", "    const id = `toolu_${content.length}`;"]],
      fails: "reply",
    },
    {
      name: "the usage left at zero",
      change: [["    usage: { input_tokens: (reply.usage?.prompt_tokens ?? 0) - cached, output_tokens: reply.usage?.completion_tokens ?? 0,", "    usage: { input_tokens: 0, output_tokens: 0,"]],
      fails: "reply",
    },
    {
      name: "JSON.parse with no guard: broken arguments throw and end the turn",
      change: [["  try {\n    const input: unknown = JSON.parse(String(text));", "  {\n    const input: unknown = JSON.parse(String(text));"], ["  } catch {} // not JSON: kept below\n", "  }\n"]],
      fails: "bad-arguments",
    },
    {
      name: "broken arguments made {}: the call runs with nothing, and the model never learns why",
      change: [["  return { [NOT_JSON]: String(text) };", "  return {};"]],
      fails: "bad-arguments",
    },
    {
      name: "empty arguments taken for broken ones",
      change: [['  if (text === undefined || (typeof text === "string" && text.trim() === "")) return {};', "  if (text === undefined) return {};"]],
      fails: "bad-arguments",
    },
  ],
  requirements: [
    {
      id: "system-and-tools",
      title: say(
        "The request's system prompt is its first message, with role \"system\"; each tool is {type: \"function\", function: {name, description, parameters}} with its JSON Schema; the model and the token limit are kept",
        "リクエストのシステムプロンプトは role \"system\" の最初のメッセージになる。各ツールは {type: \"function\", function: {name, description, parameters}} で、JSON Schema はそのまま。モデル名とトークンの上限も引き継ぐ",
      ),
      hints: [
        say("The Messages API keeps the system prompt and the tools beside the messages. Where does Chat Completions keep each?", "Messages API はシステムプロンプトとツールをメッセージの外に持ちます。Chat Completions ではそれぞれどこに置くでしょう。"),
        say("messages starts with { role: \"system\", content: system }; each tool becomes { type: \"function\", function: { name, description, parameters: input_schema } }; toChatTool does the tool.", "messages の先頭は { role: \"system\", content: system } です。ツールは { type: \"function\", function: { name, description, parameters: input_schema } } になり、これは toChatTool が作ります。"),
        say(
          "if (system) messages.push({ role: \"system\", content: system }); for (const m of request.messages) messages.push(...toChatMessages(m)); return { model: request.model, max_completion_tokens: request.max_tokens, messages, tools: (request.tools ?? []).map(toChatTool) };",
          "if (system) messages.push({ role: \"system\", content: system }); for (const m of request.messages) messages.push(...toChatMessages(m)); return { model: request.model, max_completion_tokens: request.max_tokens, messages, tools: (request.tools ?? []).map(toChatTool) };",
        ),
      ],
      async check(t) {
        const { toChatRequest, TOOLS } = stageOf(t);
        const chat = toChatRequest(request([{ role: "user", content: "hello" }], { system: "You are a coding agent.", tools: TOOLS, max_tokens: 1234, model: "gpt-check" }));
        const [first, second] = chat.messages ?? [];
        if (first?.role !== "system" || textOf(first.content) !== "You are a coding agent.") {
          t.fail(say(`the first message was ${quote(first)}`, `最初のメッセージは ${quote(first)} でした`), say('{"role": "system", "content": "You are a coding agent."}', '{"role": "system", "content": "You are a coding agent."}'));
        }
        if (second?.role !== "user" || textOf(second.content) !== "hello") t.fail(say(`the person's prompt became ${quote(second)}`, `人のプロンプトが ${quote(second)} になりました`));
        if (chat.model !== "gpt-check" || (chat.max_completion_tokens !== 1234 && chat.max_tokens !== 1234)) {
          t.fail(say(`the model and the limit became ${quote({ model: chat.model, max_completion_tokens: chat.max_completion_tokens, max_tokens: chat.max_tokens })}`, `モデル名と上限が ${quote({ model: chat.model, max_completion_tokens: chat.max_completion_tokens, max_tokens: chat.max_tokens })} になりました`));
        }
        const tools = Array.isArray(chat.tools) ? (chat.tools as { type?: unknown; function?: { name?: unknown; description?: unknown; parameters?: unknown } }[]) : [];
        const wrong = TOOLS.find((tool, i) => {
          const sent = tools[i];
          return sent?.type !== "function" || sent.function?.name !== tool.name || sent.function.description !== tool.description || JSON.stringify(sent.function.parameters) !== JSON.stringify(tool.input_schema);
        });
        if (tools.length !== TOOLS.length || wrong) {
          t.fail(say(`the tool ${wrong?.name ?? "list"} was sent as ${quote(tools[TOOLS.indexOf(wrong!)] ?? chat.tools)}`, `ツール ${wrong?.name ?? "の一覧"} が ${quote(tools[TOOLS.indexOf(wrong!)] ?? chat.tools)} として送られました`));
        }
      },
    },
    {
      id: "tool-calls",
      title: say(
        "An assistant message keeps its text as content and its tool_use blocks become tool_calls: each id and name kept, type \"function\", the input as a JSON string",
        "assistant のメッセージはテキストを content に残し、tool_use ブロックは tool_calls になる。id と名前はそのまま、type は \"function\"、入力は JSON の文字列",
      ),
      hints: [
        say("In Chat Completions a call's arguments are text the model wrote, not an object. And the text beside the calls is still part of the message.", "Chat Completions では、呼び出しの arguments はオブジェクトではなく、モデルが書いた文字列です。呼び出しと並んだテキストもメッセージの一部のままです。"),
        say("Collect the text blocks into content (null when there are none), and map each tool_use to { id, type: \"function\", function: { name, arguments: JSON.stringify(input) } }.", "テキストブロックを content にまとめ(なければ null)、各 tool_use を { id, type: \"function\", function: { name, arguments: JSON.stringify(input) } } にします。"),
        say(
          "return [{ role: \"assistant\", content: text || null, tool_calls: calls }] where calls = tool_use blocks mapped as above (leave tool_calls out when there are none).",
          "return [{ role: \"assistant\", content: text || null, tool_calls: calls }](calls は上のように変換した tool_use。なければ tool_calls を付けません)。",
        ),
      ],
      async check(t) {
        const { toChatRequest } = stageOf(t);
        const input = { path: "src/a b.ts", lines: [1, 2], deep: { ok: true } };
        const chat = toChatRequest(
          request([
            { role: "user", content: "go" },
            { role: "assistant", content: [{ type: "text", text: "Reading both." }, use("call_1", "read_file", input), use("call_2", "bash", { command: "ls" })] },
            { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "A" }, { type: "tool_result", tool_use_id: "call_2", content: "B" }] },
          ]),
        );
        const assistant = chat.messages.find((m) => m.role === "assistant");
        if (assistant === undefined) return t.fail(say(`no assistant message in ${quote(chat.messages)}`, `${quote(chat.messages)} に assistant のメッセージがありません`));
        if (textOf(assistant.content) !== "Reading both.") t.fail(say(`the assistant's text became ${quote(assistant.content)}`, `assistant のテキストが ${quote(assistant.content)} になりました`));
        const calls = (Array.isArray(assistant.tool_calls) ? assistant.tool_calls : []) as Call[];
        const sent = calls.map((call) => ({ id: call.id, type: call.type, name: call.function?.name, arguments: call.function?.arguments }));
        const expected = [
          { id: "call_1", type: "function", name: "read_file", input },
          { id: "call_2", type: "function", name: "bash", input: { command: "ls" } },
        ];
        const same = sent.length === 2 && expected.every((want, i) => {
          const got = sent[i];
          if (got.id !== want.id || got.type !== want.type || got.name !== want.name || typeof got.arguments !== "string") return false;
          try {
            return JSON.stringify(JSON.parse(got.arguments)) === JSON.stringify(want.input);
          } catch {
            return false;
          }
        });
        if (!same) t.fail(say(`the calls were sent as ${quote(sent)}`, `呼び出しは ${quote(sent)} として送られました`), say("tool_calls with the same ids and names, type \"function\", arguments a JSON string of the input", "同じ id と名前、type \"function\"、arguments は入力の JSON 文字列の tool_calls"));
        const onlyCalls = toChatRequest(request([{ role: "user", content: "go" }, { role: "assistant", content: [use("call_3", "bash", { command: "ls" })] }, { role: "user", content: [{ type: "tool_result", tool_use_id: "call_3", content: "x" }] }]));
        const bare = onlyCalls.messages.find((m) => m.role === "assistant");
        if (textOf(bare?.content) ?? "") t.fail(say(`an assistant message with only a call got the content ${quote(bare?.content)}`, `呼び出しだけの assistant のメッセージに content ${quote(bare?.content)} が付きました`));
      },
    },
    {
      id: "tool-results",
      title: say(
        "Each tool_result becomes a message of its own, role \"tool\" with the call's tool_call_id, right after the calls and in call order; an is_error result says it failed; text sent beside results comes after them",
        "tool_result はそれぞれ独立したメッセージになる(role \"tool\"、呼び出しの tool_call_id 付き)。呼び出しの直後に呼び出し順で並ぶ。is_error の結果は失敗だと分かる。結果と並んだテキストはそのあとに来る",
      ),
      hints: [
        say("The Messages API sends all of a reply's results in one user message. Chat Completions wants one message per call, right after the assistant message that made the calls: what OpenAI refuses otherwise, the replay refuses too.", "Messages API は1回の返答の結果をまとめて1つの user メッセージで送ります。Chat Completions は呼び出し1つにつきメッセージ1つを、呼び出した assistant のメッセージの直後に求めます。OpenAI が拒否する形は、リプレイも拒否します。"),
        say("For a user message with tool_result blocks: map each to { role: \"tool\", tool_call_id: block.tool_use_id, content: text } in order, then add the other text as one user message. Chat Completions has no is_error: say it in the text (toolMessageText does).", "tool_result ブロックを持つ user メッセージは、各ブロックを順に { role: \"tool\", tool_call_id: block.tool_use_id, content: テキスト } にし、ほかのテキストは1つの user メッセージとしてそのあとに足します。Chat Completions には is_error がないので、テキストで伝えます(toolMessageText がします)。"),
        say(
          "const results = blocks.flatMap((b) => (b.type === \"tool_result\" ? [{ role: \"tool\", tool_call_id: b.tool_use_id, content: toolMessageText(b) }] : [])); return text ? [...results, { role: \"user\", content: text }] : results;",
          "const results = blocks.flatMap((b) => (b.type === \"tool_result\" ? [{ role: \"tool\", tool_call_id: b.tool_use_id, content: toolMessageText(b) }] : [])); return text ? [...results, { role: \"user\", content: text }] : results;",
        ),
      ],
      async check(t) {
        for (const [name, text] of [["a.txt", "AAA"], ["b.txt", "BBB"], ["c.txt", "CCC"]]) t.write(name, text);
        const ids = ["toolu_read_a", "toolu_read_b", "toolu_read_c"];
        const scenario = scenarioOf([reply.tools(["a.txt", "b.txt", "c.txt"].map((path, i) => ({ id: ids[i], name: "read_file", input: { path } }))), reply.text("All three read.")]);
        const session = await playedAsOpenAI(t, scenario);
        const tail = chatMessages(session, 1).slice(-3);
        const got = tail.map((m) => ({ role: m.role, tool_call_id: m.tool_call_id, content: textOf(m.content) }));
        const want = ids.map((id, i) => ({ role: "tool", tool_call_id: id, content: ["AAA", "BBB", "CCC"][i] }));
        if (JSON.stringify(got) !== JSON.stringify(want)) t.fail(say(`after three reads side by side, the request ended with ${quote(got)}`, `3つを並べて読んだあと、リクエストの末尾は ${quote(got)} でした`), say(quote(want), quote(want)));
        const { toChatRequest } = stageOf(t);
        const chat = toChatRequest(
          request([
            { role: "user", content: "go" },
            { role: "assistant", content: [use("call_no", "write_file", { path: "x", content: "y" })] },
            { role: "user", content: [{ type: "tool_result", tool_use_id: "call_no", is_error: true, content: "the person said no" }, { type: "text", text: "and hurry" }] },
          ]),
        );
        const after = chat.messages.slice(chat.messages.findIndex((m) => m.role === "assistant") + 1).map((m) => ({ role: m.role, tool_call_id: m.tool_call_id, content: textOf(m.content) }));
        if (after[0]?.role !== "tool" || after[0].tool_call_id !== "call_no" || after[1]?.role !== "user" || after[1].content !== "and hurry") {
          t.fail(say(`a result with the person's text beside it became ${quote(after)}`, `人のテキストが並んだ結果が ${quote(after)} になりました`), say("the tool message first, then the person's text as a user message", "まず tool のメッセージ、そのあとに人のテキストを user のメッセージとして"));
        }
        if (!/error|fail/i.test(after[0].content ?? "") || !(after[0].content ?? "").includes("the person said no")) {
          t.fail(say(`an is_error result was sent as ${quote(after[0].content)}: nothing says the call failed`, `is_error の結果が ${quote(after[0].content)} として送られ、失敗したことが分かりません`));
        }
      },
    },
    {
      id: "reply",
      title: say(
        "A reply's content becomes a text block and its tool_calls tool_use blocks (ids kept, arguments parsed); finish_reason tool_calls, stop and length become tool_use, end_turn and max_tokens; prompt and completion tokens become input and output tokens",
        "返答の content はテキストブロックに、tool_calls は tool_use ブロックになる(id はそのまま、arguments はパース済み)。finish_reason の tool_calls、stop、length は tool_use、end_turn、max_tokens になる。prompt と completion のトークン数は input と output のトークン数になる",
      ),
      hints: [
        say("The loop reads response.content and response.stop_reason, and runs only a reply whose stop_reason is tool_use. What in a Chat Completions reply says the same?", "ループが読むのは response.content と response.stop_reason で、stop_reason が tool_use の返答だけがツールを動かします。Chat Completions の返答では何が同じことを言っているでしょう。"),
        say("Read reply.choices[0]: message.content as { type: \"text\", text }, each of message.tool_calls as { type: \"tool_use\", id, name, input: argumentsOf(call) }; stop_reason from STOP_REASONS; usage from reply.usage.", "reply.choices[0] を読みます。message.content を { type: \"text\", text } に、message.tool_calls のそれぞれを { type: \"tool_use\", id, name, input: argumentsOf(call) } にします。stop_reason は STOP_REASONS から、usage は reply.usage から作ります。"),
        say(
          "return { id: reply.id, type: \"message\", role: \"assistant\", model: reply.model, content, stop_reason: STOP_REASONS[finish_reason ?? \"\"] ?? \"end_turn\", stop_sequence: null, usage: { input_tokens: prompt_tokens - cached, output_tokens: completion_tokens } } as Message;",
          "return { id: reply.id, type: \"message\", role: \"assistant\", model: reply.model, content, stop_reason: STOP_REASONS[finish_reason ?? \"\"] ?? \"end_turn\", stop_sequence: null, usage: { input_tokens: prompt_tokens - cached, output_tokens: completion_tokens } } as Message;",
        ),
      ],
      async check(t) {
        const { fromChatReply } = stageOf(t);
        const message = fromChatReply(chatReply({ content: "Reading it.", tool_calls: [chatCall("call_xyz", "read_file", '{"path":"a.txt","limit":5}')] }, "tool_calls", { prompt_tokens: 321, completion_tokens: 45, total_tokens: 366 }));
        const content = (message?.content ?? []).map((b) => (b.type === "text" ? { type: b.type, text: b.text } : b.type === "tool_use" ? { type: b.type, id: b.id, name: b.name, input: b.input } : { type: b.type }));
        const want = [{ type: "text", text: "Reading it." }, { type: "tool_use", id: "call_xyz", name: "read_file", input: { path: "a.txt", limit: 5 } }];
        if (JSON.stringify(content) !== JSON.stringify(want)) t.fail(say(`a reply with text and a call became ${quote(content)}`, `テキストと呼び出しのある返答が ${quote(content)} になりました`), say(quote(want), quote(want)));
        if (message.role !== "assistant" || message.type !== "message") t.fail(say(`the reply is not an assistant message: ${quote({ role: message.role, type: message.type })}`, `返答が assistant のメッセージになっていません: ${quote({ role: message.role, type: message.type })}`));
        if (message.usage?.input_tokens !== 321 || message.usage?.output_tokens !== 45) t.fail(say(`prompt_tokens 321 and completion_tokens 45 became ${quote(message.usage)}`, `prompt_tokens 321 と completion_tokens 45 が ${quote(message.usage)} になりました`));
        for (const [finish, stop] of [["tool_calls", "tool_use"], ["stop", "end_turn"], ["length", "max_tokens"]]) {
          const got = fromChatReply(chatReply({ content: "x" }, finish)).stop_reason;
          if (got !== stop) t.fail(say(`finish_reason ${quote(finish)} became the stop_reason ${quote(got)}`, `finish_reason ${quote(finish)} が stop_reason ${quote(got)} になりました`), say(`the stop_reason ${quote(stop)}`, `stop_reason ${quote(stop)}`));
        }
      },
    },
    {
      id: "bad-arguments",
      title: say(
        "Arguments that are not a JSON object never throw: the call gets an is_error result the model can correct, and the other calls of the reply still run; empty arguments are no arguments",
        "JSON のオブジェクトでない arguments で例外は起きない。その呼び出しにはモデルが直せる is_error の結果が返り、同じ返答のほかの呼び出しは動く。空の arguments は引数なしと同じ",
      ),
      hints: [
        say("A model can write broken JSON: cut off, a stray comma. If parsing throws, the turn ends with no result for any call. What does the call need instead?", "モデルは壊れた JSON を書くことがあります(途中で切れた、余計なカンマがある)。パースで例外が起きるとターンが終わり、どの呼び出しにも結果が返りません。代わりに何が要るでしょう。"),
        say("Parse inside try/catch. When the text is not a JSON object, return { [NOT_JSON]: text }: runTool refuses that call with an error that quotes it. An empty string is {}.", "try/catch の中でパースします。テキストが JSON のオブジェクトでなければ { [NOT_JSON]: text } を返します。runTool がその呼び出しを、テキストを引用したエラーで拒否します。空文字列は {} です。"),
        say(
          "if (text.trim() === \"\") return {}; try { const input = JSON.parse(text); if (input && typeof input === \"object\" && !Array.isArray(input)) return input; } catch {} return { [NOT_JSON]: text };",
          "if (text.trim() === \"\") return {}; try { const input = JSON.parse(text); if (input && typeof input === \"object\" && !Array.isArray(input)) return input; } catch {} return { [NOT_JSON]: text };",
        ),
      ],
      async check(t) {
        const { fromChatReply, runTool } = stageOf(t);
        t.write("notes.txt", "the notes\n");
        const broken = '{"path": "notes.txt", "limit": 5';
        let message: Message | undefined;
        try {
          message = fromChatReply(chatReply({ tool_calls: [chatCall("call_bad", "read_file", broken), chatCall("call_ok", "read_file", '{"path":"notes.txt"}')] }, "tool_calls"));
        } catch (error) {
          const text = error instanceof Error ? error.message : String(error);
          if (notWrittenIn(text)) throw error;
          t.fail(say(`arguments cut off (${quote(broken)}) made fromChatReply throw: ${text}. The turn would end with no result for any call`, `途中で切れた arguments (${quote(broken)}) で fromChatReply が例外を投げました: ${text}。ターンが終わり、どの呼び出しにも結果が返りません`));
        }
        const calls = (message?.content ?? []).filter((b): b is ToolUseBlock => b.type === "tool_use");
        if (calls.map((c) => c.id).join(",") !== "call_bad,call_ok") t.fail(say(`the reply's calls became ${quote(calls)}`, `返答の呼び出しが ${quote(calls)} になりました`));
        const bad = await runTool(calls[0]);
        const badText = resultText(bad);
        if (notWrittenIn(badText)) throw new Error(badText);
        if (bad.is_error !== true || bad.tool_use_id !== "call_bad" || !/json|argument/i.test(badText)) {
          t.fail(say(`the call with broken arguments got ${quote({ is_error: bad.is_error, content: badText })}: the model cannot tell what to correct`, `壊れた arguments の呼び出しに ${quote({ is_error: bad.is_error, content: badText })} が返り、モデルには何を直せばよいか分かりません`), say("an is_error result that says the arguments were not valid JSON", "arguments が正しい JSON でなかったと言う is_error の結果"));
        }
        const ok = await runTool(calls[1]);
        if (ok.is_error || !resultText(ok).includes("the notes")) t.fail(say(`the good call beside it got ${quote(resultText(ok))}`, `並んだ正しい呼び出しに ${quote(resultText(ok))} が返りました`));
        const empty = fromChatReply(chatReply({ tool_calls: [chatCall("call_empty", "bash", "")] }, "tool_calls")).content[0] as ToolUseBlock;
        if (!empty || JSON.stringify(empty.input) !== "{}") t.fail(say(`empty arguments became the input ${quote(empty?.input)}`, `空の arguments が入力 ${quote(empty?.input)} になりました`), say("{} (no arguments)", "{}(引数なし)"));
      },
    },
    {
      id: "demo",
      title: say(
        "With PROVIDER=openai the stage's recorded demo plays through your adapter as recorded: four Chat Completions requests, greet.js fixed, its test passing",
        "PROVIDER=openai で、ステージの記録済みデモがアダプタを通って記録どおりに進む(Chat Completions のリクエストが4回、greet.js が直り、テストが通る)",
      ),
      hints: [
        say("Run your copy with PROVIDER=openai: PROVIDER=openai npx tsx workshop/s15.ts. Each request prints a line [chat/completions: …].", "コピーを PROVIDER=openai で動かします: PROVIDER=openai npx tsx workshop/s15.ts。リクエストごとに [chat/completions: …] の行が出ます。"),
        say("If a request is refused, the message says what OpenAI would refuse in it: a tool message missing, a role, arguments that are not a string.", "リクエストが拒否されたら、メッセージが OpenAI なら何を拒否するかを言っています。tool のメッセージの不足、ロール、文字列でない arguments などです。"),
        say("If the checks above pass and this one fails, compare the message with the demo's description in fixtures/s15/demo.json.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを fixtures/s15/demo.json のデモの説明と比べてみてください。"),
      ],
      async check(t) {
        const scenario = loadScenario("s15");
        const session = await playedAsOpenAI(t, scenario);
        const sent = session.chatRequests?.length ?? 0;
        if (sent !== scenario.replies.length) t.fail(say(`${sent} Chat Completions requests were sent, not ${scenario.replies.length}`, `Chat Completions のリクエストが ${scenario.replies.length} 回ではなく ${sent} 回送られました`));
        if (!(t.read("greet.js") ?? "").includes("Hello, ${name}!")) t.fail(say(`greet.js after the demo: ${quote(t.read("greet.js"))}`, `デモのあとの greet.js: ${quote(t.read("greet.js"))}`));
        const last = chatMessages(session, scenario.replies.length - 1).at(-1);
        if (last?.role !== "tool" || !(textOf(last.content) ?? "").includes("# pass 1")) t.fail(say(`the test's result went back as ${quote(last)}`, `テストの結果は ${quote(last)} として返りました`));
      },
    },
  ],
});
