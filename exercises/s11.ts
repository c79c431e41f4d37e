// Exercise s11: context compaction. The client that the loop calls (it saves, compacts when
// due, then sends the smaller view), the compact tool, the placeholder text (cleared), the
// summary message and the rest of s06 are given; saveTranscript, contextFor and compact are
// taken out. The checks read the requests the model received and the transcript on disk; one
// runs the program at its prompt, to drive /compact as a person types it.
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import type { Message, MessageCreateParams, MessageParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { startReplay } from "../lib/course/replay.ts";
import { loadScenario, type Scenario } from "../lib/course/scenario.ts";
import { defineExercise, notWrittenIn, quote, reply, resultText, say, scenarioOf, type CheckKit, type ReplayedSession } from "../lib/course/exercises.ts";

/** A file's text, recognisable anywhere it is sent: its name's letter, 2,000 times. */
const textOf = (letter: string) => `${letter.toUpperCase()}-START ${letter.repeat(2000)}`;
const read = (letter: string, id = `toolu_${letter}`) => ({ id, name: "read_file", input: { path: `${letter}.txt` } });
/** A reply whose request used `tokens` input tokens: what the threshold is compared with. */
const used = (tokens: number, message: Message): Message => ({ ...message, usage: { input_tokens: tokens, output_tokens: 10 } }) as Message;
/** One prompt; `summaries` of the replies answer summary requests (a side turn: no prompt of its own). */
const oneTurn = (replies: Message[], summaries: number): Scenario => scenarioOf(replies, { prompts: ["prompt 1"], sideTurns: summaries });
/** A scenario whose replay compacts past `threshold` tokens (the stage's prepareReplay reads it). */
const withThreshold = (replies: Message[], summaries: number, threshold = 5000): Scenario => ({ ...oneTurn(replies, summaries), compactThreshold: threshold }) as Scenario;
const SUMMARY = "SUMMARY-7Q: the person asked to read the files; they were read.";

type Block = { type: string; id?: string; tool_use_id?: string; text?: string };
const blocks = (message: MessageParam): Block[] => (typeof message.content === "string" ? [{ type: "text", text: message.content }] : (message.content as Block[]));
const resultsOf = (request: MessageCreateParams) => (request.messages as MessageParam[]).flatMap(blocks).filter((b) => b.type === "tool_result") as ToolResultBlockParam[];

async function played(t: CheckKit, scenario: Scenario) {
  return checked(t, await t.replay(scenario));
}

/** The session, once no turn ended with an error, it replayed as recorded and every request keeps the API's rules. */
function checked<Session extends ReplayedSession>(t: CheckKit, session: Session): Session {
  for (const error of session.turnErrors) {
    const text = error instanceof Error ? error.message : String(error);
    t.fail(say(`the turn ended with an error: ${text}`, `ターンがエラーで終わりました: ${text}`));
  }
  t.asRecorded(session);
  const broken = pairProblem(session.requests);
  if (broken) t.fail(broken);
  return session;
}

/** What the API would refuse: roles that do not alternate, or a tool_use not answered by the very next message. */
function pairProblem(requests: MessageCreateParams[]) {
  for (const [n, request] of requests.entries()) {
    const messages = request.messages as MessageParam[];
    for (const [i, message] of messages.entries()) {
      if (message.role !== (i % 2 === 0 ? "user" : "assistant")) {
        return say(`request ${n + 1}: message ${i + 1} is from ${message.role}; the roles must alternate, starting with the person`, `リクエスト ${n + 1}: ${i + 1} 番目のメッセージが ${message.role} のものです。役割は人から始まり、交互でなければなりません`);
      }
      const asked = i > 0 ? blocks(messages[i - 1]).flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) : [];
      const answered = blocks(message).flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : []));
      const last = i === messages.length - 1 && message.role === "assistant";
      if (!last && asked.join(",") !== answered.join(",")) {
        return say(
          `request ${n + 1}: message ${i + 1} answers [${answered.join(", ")}], but the calls just before it were [${asked.join(", ")}]: a tool_use and its tool_result were split`,
          `リクエスト ${n + 1}: ${i + 1} 番目のメッセージが答えているのは [${answered.join(", ")}] ですが、直前の呼び出しは [${asked.join(", ")}] です。tool_use と tool_result が引き離されました`,
        );
      }
    }
  }
  return undefined;
}

/** Where the transcripts go: the agent's own folder. */
const TRANSCRIPTS = ".agent/transcripts";

/** The transcript files in the workspace (not the folder's .gitignore), each as its lines parsed. */
function transcripts(t: CheckKit): { name: string; messages: MessageParam[] }[] {
  const folder = path.join(t.workspace, TRANSCRIPTS);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) return [];
  return readdirSync(folder).filter((name) => name !== ".gitignore").map((name) => {
    const lines = readFileSync(path.join(folder, name), "utf8").split("\n").filter(Boolean);
    try {
      return { name, messages: lines.map((line) => JSON.parse(line) as MessageParam) };
    } catch {
      return t.fail(say(`${TRANSCRIPTS}/${name} has a line that is not JSON`, `${TRANSCRIPTS}/${name} に JSON でない行があります`));
    }
  });
}

function onlyTranscript(t: CheckKit) {
  const files = transcripts(t);
  if (files.length !== 1) {
    t.fail(say(`${TRANSCRIPTS}/ holds ${files.length} files (${files.map((f) => f.name).join(", ")}); one conversation, one file`, `${TRANSCRIPTS}/ にファイルが ${files.length} 個あります(${files.map((f) => f.name).join("、")})。1つの会話には1つのファイルです`));
  }
  return files[0];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const isWarning = (line: string) => /warn|not compacted|cannot|could not|failed/i.test(line);
const warned = (t: CheckKit) => t.printed.some(isWarning);

/**
 * What the model reads as words in a request: its system prompt and the text of its messages.
 * Not a tool call's input: the focus the model gave `compact` is there already, in the history.
 */
function wordsOf(request: MessageCreateParams): string {
  const system = typeof request.system === "string" ? request.system : (request.system ?? []).map((block) => block.text).join("\n");
  const texts = (request.messages as MessageParam[]).flatMap(blocks).flatMap((block) => (block.type === "text" ? [block.text ?? ""] : []));
  return [system, ...texts].join("\n");
}

/** The transcript's lines as text, one per message. */
const transcriptLines = (t: CheckKit) => onlyTranscript(t).messages.map((message) => JSON.stringify(message));

/** Thrown in place of process.exit while the program runs in the check. */
class Exited {
  constructor(readonly code: number) {}
}

/**
 * The learner's program at its prompt, as a person uses it: loaded afresh with a key (so it
 * talks to a model, which the replay engine stands in for), `lines` typed and then the end of
 * input, as a pipe gives them. Nothing of it reaches the screen; its exit is caught.
 */
async function atThePrompt(t: CheckKit, lines: string[], replies: Message[]) {
  // A key, and no bearer token (a learner's own would make two credentials, which the client refuses).
  const program = await t.withSettings({ ANTHROPIC_API_KEY: "sk-ant-check-not-a-real-key", ANTHROPIC_AUTH_TOKEN: "" });
  const replay = startReplay(scenarioOf(replies));
  const input = Readable.from([lines.map((line) => `${line}\n`).join("")]);
  const stdin = Object.getOwnPropertyDescriptor(process, "stdin")!;
  const { write } = process.stdout;
  const { exit } = process;
  Object.defineProperty(process, "stdin", { configurable: true, get: () => input });
  process.stdout.write = (() => true) as typeof process.stdout.write;
  process.exit = ((code?: number) => {
    throw new Exited(Number(code ?? 0));
  }) as typeof process.exit;
  try {
    await (program.main as (args: string[]) => Promise<void>)([]);
  } catch (error) {
    if (!(error instanceof Exited)) throw error;
  } finally {
    replay.close();
    Object.defineProperty(process, "stdin", stdin);
    process.stdout.write = write;
    process.exit = exit;
  }
  // A stub reached in a turn is printed as the turn's error: make it the failure.
  const stub = notWrittenIn(t.printed.join("\n"));
  if (stub) throw new Error(`TODO: ${stub}() is not written yet`);
  return { messages: [], requests: replay.requests, problems: replay.verdict(), turnErrors: [] };
}

export default defineExercise({
  stage: "s11",
  title: say("Context compaction", "コンテキストの圧縮"),
  mechanism: say(
    "saveTranscript, contextFor and compact: every message on disk first, old tool results cleared from what is sent, and a summary in place of a long conversation, with nothing changed when it cannot be made",
    "saveTranscript、contextFor、compact: まずすべてのメッセージをディスクに残し、送るものからは古いツール結果を消し、長い会話は要約に置き換える。要約が作れないときは何も変えない",
  ),
  minutes: 45,
  takeOut: [
    {
      function: "saveTranscript",
      task: say(
        "append the messages not yet saved (conversation.written onwards) and `extra`, one JSON message per line, to conversation.transcript (newTranscriptName() the first time), a path inside the workspace (safePath) in a folder made with notesFolder; move conversation.written on; on failure, warn once and return false.",
        "まだ保存していないメッセージ(conversation.written 以降)と extra を、1行に1つの JSON として conversation.transcript に追記します(最初は newTranscriptName() で名前を決めます)。パスはワークスペースの中(safePath)で、フォルダは notesFolder で作ります。conversation.written を進め、失敗したら警告を1回だけ出して false を返します。",
      ),
    },
    {
      function: "contextFor",
      task: say(
        "return what the model is sent, never changing `messages`: conversation.summary in place of messages[0 .. conversation.cut), then the messages since, with every tool result older than the last KEEP_RESULTS tool-result messages replaced by cleared(...); the roles must still alternate.",
        "モデルに送るものを返します。messages 自体は変えません。messages[0 .. conversation.cut) の代わりに conversation.summary を置き、そのあとのメッセージを続けます。最後の KEEP_RESULTS 個のツール結果メッセージより古い結果は cleared(...) に置き換えます。役割は交互のままにします。",
      ),
    },
    {
      function: "compact",
      task: say(
        "save the transcript first (if it fails: return notCompacted(...), which warns and delays the next try); ask the model for a summary (SUMMARY_REQUEST, the focus, no tool may be called) of contextFor(...); a failed request, a reply cut off or an empty one: return notCompacted(...), nothing changed; otherwise save summaryMessage(...) to the transcript and set conversation.cut, summary, contextTokens and retryAt (0: no wait any more).",
        "まずトランスクリプトを保存します(失敗したら return notCompacted(...)。警告を出し、次に試すのを先に延ばします)。contextFor(...) の要約をモデルに頼みます(SUMMARY_REQUEST と focus、ツールは呼ばせない)。リクエストの失敗、途切れた応答、空の応答は return notCompacted(...) で、何も変えません。うまくいったら summaryMessage(...) をトランスクリプトに保存し、conversation の cut、summary、contextTokens、retryAt(0: もう待たない)を設定します。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the focus left out: the summary request carries only SUMMARY_REQUEST",
      change: [["const instruction = focus ? `${SUMMARY_REQUEST} Keep in particular: ${focus}` : SUMMARY_REQUEST;", "const instruction = SUMMARY_REQUEST;"]],
      fails: "asked",
    },
    {
      name: "the summary request without tool_choice none: the model may call a tool instead of summarising",
      change: [["tools: TOOLS, tool_choice: { type: \"none\" as const } };", "tools: TOOLS };"]],
      fails: "summary-request",
    },
    {
      name: "the summary request without tools, though its history holds tool_use blocks",
      change: [["system: systemPrompt(), tools: TOOLS, tool_choice", "system: systemPrompt(), tool_choice"]],
      fails: "summary-request",
    },
    {
      name: "the summary not saved to the transcript",
      change: [["if (!saveTranscript(conversation, messages, [message])) return", "if (!saveTranscript(conversation, messages)) return"]],
      fails: "auto",
    },
    {
      name: "a warning at every failed save, not once",
      change: [["if (conversation.writeProblem === undefined) console.log(", "console.log("]],
      fails: "nothing-lost",
    },
    {
      name: "old results counted by user messages, prompts included",
      change: [["const withResults = kept.flatMap((message, i) => (blocksOf(message).some((block) => block.type === \"tool_result\") ? [i] : []));", "const withResults = kept.flatMap((message, i) => (message.role === \"user\" ? [i] : []));"]],
      fails: "micro",
    },
    {
      name: "the summary kept as its own message before the next prompt: two user messages in a row",
      change: [["if (first?.role !== \"user\") return [conversation.summary, ...view];", "return [conversation.summary, ...view];"]],
      fails: "by-hand",
    },
    {
      name: "off by one: the last two result messages kept whole, not three",
      change: [["withResults.slice(0, -KEEP_RESULTS)", "withResults.slice(0, 1 - KEEP_RESULTS)"]],
      fails: "micro",
    },
    {
      name: "old results cleared in place: the loop's own messages lose them",
      change: [["(block.type === \"tool_result\" ? cleared(block, calls.get(block.tool_use_id), onDisk) : block)", "(block.type === \"tool_result\" ? Object.assign(block, cleared(block, calls.get(block.tool_use_id), onDisk)) : block)"]],
      fails: "micro",
    },
    {
      name: "written not moved on: every message appended again at each request",
      change: [["    conversation.written = messages.length;\n    conversation.writeProblem = undefined;", "    conversation.writeProblem = undefined;"]],
      fails: "transcript",
    },
    {
      name: "the transcripts folder made with mkdirSync: no .gitignore, so git lists every transcript",
      change: [["    notesFolder(path.dirname(file));", "    mkdirSync(path.dirname(file), { recursive: true });"]],
      fails: "transcript",
    },
    {
      name: "compacts at the threshold, not only past it",
      change: [["else if (used > Math.max(compactThreshold, conversation.retryAt))", "else if (used >= Math.max(compactThreshold, conversation.retryAt))"]],
      fails: "auto",
    },
    {
      name: "cut not moved: the summary is sent, and the conversation it replaced with it",
      change: [["Object.assign(conversation, { cut: messages.length, summary: message, contextTokens: 0, retryAt: 0 });", "Object.assign(conversation, { summary: message, contextTokens: 0, retryAt: 0 });"]],
      fails: "auto",
    },
    {
      name: "a summary cut off by max_tokens taken as the summary",
      change: [["if (reply.stop_reason === \"max_tokens\") throw new Error(`the summary was cut off at ${MAX_TOKENS} tokens`);\n    if (reply.stop_reason !== \"end_turn\" || summary === \"\")", "if (summary === \"\")"]],
      fails: "nothing-lost",
    },
    {
      name: "the summary asked for before the transcript is saved",
      change: [["  if (!saveTranscript(conversation, messages)) return notCompacted(conversation, `the transcript cannot be written (${conversation.writeProblem})`);\n", ""]],
      fails: "nothing-lost",
    },
    {
      name: "a failed summary warned about, but not through notCompacted: it is asked for again before every request",
      change: [["    return notCompacted(conversation, `the summary request failed (${describeProviderError(error).replace(/^\\[error\\] /, \"\").replace(/\\.$/, \"\")})`);", "    console.log(`[warning] not compacted: the summary request failed (${String(error)})`);\n    return false;"]],
      fails: "back-off",
    },
    {
      name: "retryAt not reset by a compaction that worked: the next one waits for a failure long past",
      change: [["Object.assign(conversation, { cut: messages.length, summary: message, contextTokens: 0, retryAt: 0 });", "Object.assign(conversation, { cut: messages.length, summary: message, contextTokens: 0 });"]],
      fails: "back-off",
    },
  ],
  requirements: [
    {
      id: "transcript",
      title: say(
        "Every message is on disk, the last reply too: one file under .agent/transcripts/ (a folder git ignores), one JSON message per line, each message once and in order, across turns",
        "メッセージはすべて、最後の応答まで含めてディスクにある。.agent/transcripts/(git が無視するフォルダ)の下に1ファイル、1行に1つの JSON メッセージ。ターンをまたいでも、どのメッセージも1回ずつ、順番どおり",
      ),
      hints: [
        say("Before a request goes out, which of its messages are not on disk yet?", "リクエストを送る前に、その中のどのメッセージがまだディスクにないでしょう。"),
        say(
          "The conversation remembers how many messages are written. Append only messages.slice(written), one JSON.stringify per line, with appendFileSync, then move written to messages.length. The name is chosen once, the first time.",
          "会話は、何件書いたかを覚えています。messages.slice(written) だけを1行に1つの JSON.stringify で appendFileSync し、written を messages.length に進めます。名前は最初の1回だけ決めます。",
        ),
        say(
          "conversation.transcript ??= newTranscriptName(); const file = safePath(conversation.transcript); notesFolder(path.dirname(file)); appendFileSync(file, lines); conversation.written = messages.length;",
          "conversation.transcript ??= newTranscriptName(); const file = safePath(conversation.transcript); notesFolder(path.dirname(file)); appendFileSync(file, lines); conversation.written = messages.length;",
        ),
      ],
      async check(t) {
        t.write("a.txt", textOf("a"));
        const { messages } = await played(t, scenarioOf([reply.tools([read("a")]), reply.text("one"), reply.text("two")]));
        const transcript = onlyTranscript(t);
        if (!transcript.name.endsWith(".jsonl")) t.fail(say(`the transcript is ${TRANSCRIPTS}/${transcript.name}, not a .jsonl file`, `トランスクリプトが ${TRANSCRIPTS}/${transcript.name} で、.jsonl ファイルではありません`));
        if (t.read(`${TRANSCRIPTS}/.gitignore`) !== "*\n") {
          t.fail(say(`${TRANSCRIPTS}/.gitignore holds ${quote(t.read(`${TRANSCRIPTS}/.gitignore`) ?? null)}: git would list every transcript as untracked`, `${TRANSCRIPTS}/.gitignore の中身は ${quote(t.read(`${TRANSCRIPTS}/.gitignore`) ?? null)} です。git がトランスクリプトをすべて未追跡として表示してしまいます`), say("a .gitignore holding *, made with the folder (notesFolder)", "フォルダと一緒に作った、* だけの .gitignore(notesFolder)"));
        }
        // The client saves each reply as it arrives (the loop's next message): the last one, which no request carries, too.
        if (!same(transcript.messages, messages)) {
          t.fail(
            say(`the transcript holds ${transcript.messages.length} messages; the conversation's ${messages.length}, each once and in order, were expected`, `トランスクリプトには ${transcript.messages.length} 件のメッセージがあります。会話の ${messages.length} 件が1回ずつ順番どおりに入っているはずです`),
            say(`the roles ${quote(messages.map((m) => m.role))}`, `役割 ${quote(messages.map((m) => m.role))}`),
          );
        }
      },
    },
    {
      id: "micro",
      title: say(
        "In what is sent, tool results older than the last three tool-result messages become a short placeholder naming the tool and its input; a message of parallel results counts once; the loop's own messages keep every result whole",
        "送るものの中で、最後の3つのツール結果メッセージより古い結果は、ツールとその入力を名指しする短いプレースホルダーになる。並列の結果のメッセージは1つと数える。ループ自身の messages ではどの結果も元のまま",
      ),
      hints: [
        say("An old read_file result is still sent with every request. Does the model need all of it, and how could it get it back?", "古い read_file の結果は、リクエストのたびに送られ続けます。モデルにその全部が必要でしょうか。必要になったら、どう取り戻せるでしょう。"),
        say(
          "Build a new array from messages.slice(conversation.cut): find the indexes of the messages holding tool results, and for all but the last KEEP_RESULTS of them, map each tool_result block to cleared(block, its tool_use, the transcript). Never change the blocks in place.",
          "messages.slice(conversation.cut) から新しい配列を作ります。ツール結果を持つメッセージの位置を集め、最後の KEEP_RESULTS 個を除くそれぞれで、tool_result ブロックを cleared(block, 対応する tool_use, トランスクリプト) に置き換えます。ブロックをその場で書き換えてはいけません。",
        ),
        say(
          "const withResults = kept.flatMap((m, i) => (blocksOf(m).some((b) => b.type === \"tool_result\") ? [i] : [])); const old = new Set(withResults.slice(0, -KEEP_RESULTS)); kept.map((m, i) => (old.has(i) ? { role: \"user\", content: blocksOf(m).map(...) } : m));",
          "const withResults = kept.flatMap((m, i) => (blocksOf(m).some((b) => b.type === \"tool_result\") ? [i] : [])); const old = new Set(withResults.slice(0, -KEEP_RESULTS)); kept.map((m, i) => (old.has(i) ? { role: \"user\", content: blocksOf(m).map(...) } : m));",
        ),
      ],
      async check(t) {
        for (const letter of "abcde") t.write(`${letter}.txt`, textOf(letter));
        const { requests, messages } = await played(
          t,
          scenarioOf([reply.tools([read("a"), read("b")]), reply.tools([read("c")]), reply.tools([read("d")]), reply.tools([read("e")]), reply.text("done")]),
        );
        // Request 4 carries three result messages ([a, b], c, d): all whole.
        const fourth = resultsOf(requests[3]);
        const cut = fourth.filter((result, i) => resultText(result) !== textOf("abcd"[i]));
        if (cut.length > 0) {
          t.fail(say(`with three tool-result messages ([a, b], c, d), nothing may be cleared yet, but ${cut.map((r) => r.tool_use_id).join(", ")} was (a message of parallel results counts once)`, `ツール結果メッセージが3つ([a, b]、c、d)のときは、まだ何も消してはいけません。ところが ${cut.map((r) => r.tool_use_id).join("、")} が消されていました(並列の結果のメッセージは1つと数えます)`));
        }
        const last = resultsOf(requests[4]);
        if (last.map((r) => r.tool_use_id).join(",") !== "toolu_a,toolu_b,toolu_c,toolu_d,toolu_e") {
          t.fail(say(`the last request answers [${last.map((r) => r.tool_use_id).join(", ")}]: every call keeps its result, with its id`, `最後のリクエストが答えているのは [${last.map((r) => r.tool_use_id).join(", ")}] です。どの呼び出しにも、その id の結果が残るはずです`));
        }
        for (const [i, letter] of ["a", "b"].entries()) {
          const text = resultText(last[i]);
          if (text.includes(letter.repeat(100)) || text.length > 500 || !text.includes("read_file") || !text.includes(`${letter}.txt`)) {
            t.fail(say(`the old result of ${letter}.txt was sent as ${quote(text.slice(0, 200))}: a short placeholder naming read_file and ${letter}.txt was expected`, `${letter}.txt の古い結果が ${quote(text.slice(0, 200))} として送られました。read_file と ${letter}.txt を名指しする短いプレースホルダーのはずです`));
          }
        }
        for (const [i, letter] of ["c", "d", "e"].entries()) {
          if (resultText(last[i + 2]) !== textOf(letter)) t.fail(say(`the result of ${letter}.txt, one of the last three, was not sent whole`, `最後の3つに入る ${letter}.txt の結果が、元のまま送られていません`));
        }
        const kept = messages.flatMap(blocks).filter((b) => b.type === "tool_result") as ToolResultBlockParam[];
        if (kept.map(resultText).join() !== [..."abcde"].map(textOf).join()) {
          t.fail(say("the loop's own messages lost a result: only what is sent may be cleared, the conversation is the record", "ループ自身の messages から結果が消えました。消してよいのは送るものだけで、会話そのものは記録です"));
        }

        // A person's prompt between results is not a tool-result message: it takes no place of the three.
        const twoTurns = await played(
          t,
          scenarioOf([reply.tools([read("a", "toolu_a2")]), reply.tools([read("b", "toolu_b2")]), reply.text("one"), reply.tools([read("c", "toolu_c2")]), reply.tools([read("d", "toolu_d2")]), reply.text("two")]),
        );
        // Request 5: the results of a, b, then the second prompt, then c: three tool-result messages.
        const early = resultsOf(twoTurns.requests[4]).filter((result) => !resultText(result).includes("-START"));
        if (early.length > 0) {
          t.fail(
            say(
              `after a, b, the second prompt and c, ${early.map((r) => r.tool_use_id).join(", ")} was already cleared: there are three tool-result messages, and the person's prompt is not one of them`,
              `a、b、2つ目の依頼、c のあとで、${early.map((r) => r.tool_use_id).join("、")} がもう消されていました。ツール結果メッセージは3つで、人の依頼はそれに数えません`,
            ),
          );
        }
        const sixth = resultsOf(twoTurns.requests[5]).map((result) => [result.tool_use_id, resultText(result).includes("-START")]);
        if (JSON.stringify(sixth) !== JSON.stringify([["toolu_a2", false], ["toolu_b2", true], ["toolu_c2", true], ["toolu_d2", true]])) {
          t.fail(
            say(
              `after a, b, the second prompt, c and d, the results sent whole were [${sixth.filter(([, whole]) => whole).map(([id]) => id).join(", ")}], not [toolu_b2, toolu_c2, toolu_d2]`,
              `a、b、2つ目の依頼、c、d のあとで元のまま送られた結果は [${sixth.filter(([, whole]) => whole).map(([id]) => id).join("、")}] で、[toolu_b2、toolu_c2、toolu_d2] ではありません`,
            ),
          );
        }
      },
    },
    {
      id: "auto",
      title: say(
        "Past COMPACT_THRESHOLD (not at it), the model is asked for a summary of the conversation, and the next request carries the summary in its place, with the latest request; the transcript keeps the conversation, then the summary",
        "COMPACT_THRESHOLD を超えると(ちょうどでは起きない)、モデルに会話の要約を頼み、次のリクエストは会話の代わりにその要約と最新の依頼を運ぶ。トランスクリプトには会話と、そのあとに要約が残る",
      ),
      hints: [
        say("The conversation has grown past the threshold. What could stand in for it, and who can write that?", "会話がしきい値を超えました。会話の代わりになるものは何で、それを書けるのは誰でしょう。"),
        say(
          "Send the model contextFor(...) with SUMMARY_REQUEST added to the last user message (withText) and tool_choice none. Take its text as the summary; then conversation.cut = messages.length and conversation.summary = summaryMessage(...): contextFor sends the summary from then on.",
          "contextFor(...) の最後のユーザーメッセージに SUMMARY_REQUEST を足して(withText)、tool_choice を none にしてモデルに送ります。返ってきたテキストが要約です。そのあと conversation.cut = messages.length、conversation.summary = summaryMessage(...) とすれば、それ以降 contextFor が要約を送ります。",
        ),
        say(
          "const reply = await provider.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, tool_choice: { type: \"none\" }, messages: withText(contextFor(conversation, messages), SUMMARY_REQUEST) });",
          "const reply = await provider.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, tool_choice: { type: \"none\" }, messages: withText(contextFor(conversation, messages), SUMMARY_REQUEST) });",
        ),
      ],
      async check(t) {
        t.write("a.txt", textOf("a"));
        t.write("b.txt", textOf("b"));
        // 5000 tokens is the threshold: at it, nothing; one over, a summary before the next request.
        const session = await t.replay(withThreshold([used(5000, reply.tools([read("a")])), used(5001, reply.tools([read("b")])), reply.text(SUMMARY), reply.text("done")], 1));
        // The loop's second request says nothing the first did not: a summary request would.
        if (session.requests.length > 1 && wordsOf(session.requests[1]) !== wordsOf(session.requests[0])) {
          t.fail(say("a summary was asked for after a request that used exactly COMPACT_THRESHOLD (5,000) input tokens", "入力トークンがちょうど COMPACT_THRESHOLD(5,000)のリクエストのあとで、要約を頼みました"), say("a summary only past the threshold, after 5,001", "しきい値を超えたとき(5,001 のあと)だけ要約する"));
        }
        const { requests, messages } = checked(t, session);
        const summaryRequest = JSON.stringify(requests[2].messages);
        if (!summaryRequest.includes(textOf("b"))) t.fail(say("the summary was not asked for with the conversation, b.txt's result included", "要約を頼むリクエストに、b.txt の結果を含む会話が入っていません"));
        const after = requests[3].messages as MessageParam[];
        const sent = JSON.stringify(after);
        if (!sent.includes("SUMMARY-7Q")) t.fail(say(`the request after the summary does not carry it: ${quote(sent.slice(0, 300))}`, `要約のあとのリクエストに要約が入っていません: ${quote(sent.slice(0, 300))}`));
        if (sent.includes("A-START") || sent.includes("B-START") || after.length >= messages.length - 1) {
          t.fail(say(`the request after the summary still carries the conversation it replaced (${after.length} messages)`, `要約のあとのリクエストに、要約が置き換えたはずの会話が残っています(${after.length} 件)`));
        }
        if (!sent.includes("prompt 1")) t.fail(say("the request after the summary lost the person's request, which the work must carry on with", "要約のあとのリクエストから、作業を続けるのに必要な人の依頼が消えています"));
        const lines = transcriptLines(t);
        const replaced = lines.findIndex((line) => line.includes("B-START"));
        const summary = lines.findIndex((line) => line.includes("SUMMARY-7Q"));
        if (replaced < 0) t.fail(say("the transcript lost the messages the summary replaced", "要約に置き換えた会話が、トランスクリプトから失われています"));
        if (summary < 0) t.fail(say("the summary is not in the transcript: what the model is sent from now on is on disk nowhere", "要約がトランスクリプトにありません。これからモデルに送るものが、ディスクのどこにもありません"));
        if (summary < replaced) t.fail(say("in the transcript the summary comes before the messages it replaced", "トランスクリプトで、要約が置き換えた会話より前にあります"));
      },
    },
    {
      id: "summary-request",
      title: say(
        "The summary request is one the API accepts and where no tool can be called: it declares the tools, since its history holds tool calls, with tool_choice none",
        "要約のリクエストは API が受け付けるもので、ツールを呼べない。履歴にツール呼び出しがあるのでツールを宣言し、tool_choice は none にする",
      ),
      hints: [
        say(
          "The summary request carries the conversation, tool calls included. What does the API ask of a request that holds tool_use blocks, and what stops the model from calling one more tool instead of writing the summary?",
          "要約のリクエストは、ツール呼び出しも含めて会話を運びます。tool_use ブロックを持つリクエストに API は何を求めるでしょう。そして、モデルが要約を書く代わりにもう1つツールを呼ぶのを止めるものは?",
        ),
        say(
          "Send the loop's tools (TOOLS): a request whose messages hold tool_use blocks must declare tools, or the API refuses it. Add tool_choice: { type: \"none\" }: the tools are declared, and none may be called.",
          "ループと同じツール(TOOLS)を送ります。メッセージに tool_use ブロックがあるリクエストはツールを宣言しなければ、API に拒否されます。そこに tool_choice: { type: \"none\" } を足せば、ツールは宣言したまま、どれも呼べません。",
        ),
        say(
          "provider.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, tool_choice: { type: \"none\" }, messages: withText(contextFor(conversation, messages), instruction) })",
          "provider.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, system: systemPrompt(), tools: TOOLS, tool_choice: { type: \"none\" }, messages: withText(contextFor(conversation, messages), instruction) })",
        ),
      ],
      async check(t) {
        t.write("a.txt", textOf("a"));
        t.write("b.txt", textOf("b"));
        const { requests } = await played(t, withThreshold([reply.tools([read("a")]), used(6000, reply.tools([read("b")])), reply.text(SUMMARY), reply.text("done")], 1));
        const summary = requests[2];
        const calls = (summary.messages as MessageParam[]).flatMap(blocks).filter((block) => block.type === "tool_use").length;
        const tools = summary.tools ?? [];
        if (calls > 0 && tools.length === 0) {
          t.fail(say(`the summary request holds ${calls} tool calls (tool_use blocks) and declares no tools: the API refuses such a request`, `要約のリクエストにはツール呼び出し(tool_use ブロック)が ${calls} 個あるのに、ツールを宣言していません。API はこのリクエストを拒否します`));
        }
        if (tools.length > 0 && summary.tool_choice?.type !== "none") {
          t.fail(say(`the summary request declares ${tools.length} tools, with tool_choice ${quote(summary.tool_choice ?? null)}: the model may call one instead of writing the summary`, `要約のリクエストはツールを ${tools.length} 個宣言していて、tool_choice は ${quote(summary.tool_choice ?? null)} です。モデルは要約を書く代わりにツールを呼べてしまいます`));
        }
      },
    },
    {
      id: "asked",
      title: say(
        "When the model calls compact, the summary is made before its next request, with the focus it gave, and from a conversation where the compact call has its result: no pair is split",
        "モデルが compact を呼ぶと、次のリクエストの前に要約が作られる。渡された focus を含み、compact の呼び出しに結果がそろった会話から作るので、組は引き離されない",
      ),
      hints: [
        say("The compact tool only notes that it was asked; who acts on that, and when?", "compact ツールは頼まれたことを記録するだけです。それに応えるのは誰で、いつでしょう。"),
        say(
          "The client calls compact(messages, why, focus) before the next request, when every call of the reply has its result. Put the focus into the instruction, after SUMMARY_REQUEST.",
          "クライアントは次のリクエストの前、応答のすべての呼び出しに結果がそろったところで compact(messages, why, focus) を呼びます。focus は SUMMARY_REQUEST のあとに指示として入れます。",
        ),
        say("const instruction = focus ? `${SUMMARY_REQUEST} Keep in particular: ${focus}` : SUMMARY_REQUEST;", "const instruction = focus ? `${SUMMARY_REQUEST} Keep in particular: ${focus}` : SUMMARY_REQUEST;"),
      ],
      async check(t) {
        t.write("a.txt", textOf("a"));
        const { requests } = await played(
          t,
          oneTurn([reply.tools([read("a"), { id: "toolu_compact", name: "compact", input: { focus: "the FOCUS-9 names" } }]), reply.text(SUMMARY), reply.text("done")], 1),
        );
        const summaryRequest = requests[1];
        const answered = resultsOf(summaryRequest).map((r) => r.tool_use_id);
        if (!answered.includes("toolu_compact") || !answered.includes("toolu_a")) {
          t.fail(say(`the summary was asked for from a conversation whose last calls are answered [${answered.join(", ")}], not [toolu_a, toolu_compact]`, `要約を頼んだ会話で、最後の呼び出しへの答えが [${answered.join(", ")}] で、[toolu_a, toolu_compact] ではありません`));
        }
        // The compact call's own input is in the history already: the focus must be in what asks for the summary.
        if (!wordsOf(summaryRequest).includes("FOCUS-9")) t.fail(say("the focus the model gave was not in the summary request's instruction (only in the compact call, in the history)", "モデルが渡した focus が、要約を頼む指示に入っていません(履歴の compact 呼び出しの中にあるだけです)"));
        const after = JSON.stringify(requests[2].messages);
        if (!after.includes("SUMMARY-7Q") || after.includes("A-START")) t.fail(say(`the request after the compact call does not carry the summary in place of the conversation: ${quote(after.slice(0, 300))}`, `compact 呼び出しのあとのリクエストが、会話の代わりに要約を運んでいません: ${quote(after.slice(0, 300))}`));
      },
    },
    {
      id: "by-hand",
      title: say(
        "/compact [focus] at the prompt summarises the conversation between two turns, with that focus; the next prompt goes out with the summary, and the roles still alternate",
        "プロンプトで /compact [focus] と打つと、2つのターンのあいだに、その focus で会話を要約する。次の依頼は要約と一緒に送られ、役割は交互のまま",
      ),
      hints: [
        say(
          "/compact is given: it calls your compact(history, why, focus) between two turns. What is the first thing sent after it, and which role does it start with?",
          "/compact はもう書いてあり、2つのターンのあいだにあなたの compact(history, why, focus) を呼びます。そのあと最初に送るものは何で、どの役割から始まるでしょう。",
        ),
        say(
          "After /compact, the next prompt is the first message after the cut, a user message, and the summary is a user message too: two in a row. Put the summary's blocks and the prompt's into one user message in contextFor.",
          "/compact のあと、次の依頼は区切りのあとの最初のメッセージで、ユーザーのメッセージです。要約もユーザーのメッセージなので、2つ続いてしまいます。contextFor で、要約のブロックと依頼のブロックを1つのユーザーメッセージにまとめます。",
        ),
        say(
          "const [first, ...rest] = view; if (first?.role !== \"user\") return [conversation.summary, ...view]; return [{ role: \"user\", content: [...blocksOf(conversation.summary), ...blocksOf(first)] }, ...rest];",
          "const [first, ...rest] = view; if (first?.role !== \"user\") return [conversation.summary, ...view]; return [{ role: \"user\", content: [...blocksOf(conversation.summary), ...blocksOf(first)] }, ...rest];",
        ),
      ],
      async check(t) {
        const session = await atThePrompt(t, ["first", "/compact the FOCUS-9 names", "second"], [reply.text("first answer"), reply.text(SUMMARY), reply.text("second answer")]);
        const { requests } = session;
        const summaryRequest = requests[1];
        if (requests.length !== 3) {
          t.fail(
            say(`"first", "/compact the FOCUS-9 names", "second" typed at the prompt made ${requests.length} requests`, `プロンプトで "first"、"/compact the FOCUS-9 names"、"second" と打つと、リクエストが ${requests.length} 回でした`),
            say("three: the first prompt, the summary request, the second prompt", "3回: 1つ目の依頼、要約のリクエスト、2つ目の依頼"),
          );
        }
        if (!wordsOf(summaryRequest).includes("FOCUS-9")) t.fail(say("the focus typed after /compact was not in the summary request's instruction", "/compact のあとに打った focus が、要約を頼む指示に入っていません"));
        t.asRecorded(session);
        const broken = pairProblem(requests);
        if (broken) t.fail(broken);
        const sent = JSON.stringify(requests[2].messages);
        if (!sent.includes("SUMMARY-7Q") || sent.includes("first answer") || !sent.includes("second")) {
          t.fail(say(`the prompt after /compact was sent as ${quote(sent.slice(0, 300))}: the summary and the new prompt, without the conversation it replaced, were expected`, `/compact のあとの依頼は ${quote(sent.slice(0, 300))} として送られました。置き換えた会話は入れず、要約と新しい依頼を送るはずです`));
        }
        if (!transcriptLines(t).some((line) => line.includes("SUMMARY-7Q"))) t.fail(say("the summary made by /compact is not in the transcript", "/compact で作った要約がトランスクリプトにありません"));
      },
    },
    {
      id: "nothing-lost",
      title: say(
        "When the summary cannot be made (a reply cut off) or the transcript cannot be written, nothing is compacted: a warning (once for a transcript that stays unwritable), and the next request carries the whole conversation",
        "要約が作れない(応答が途切れた)ときや、トランスクリプトが書けないときは、何も圧縮しない。警告を出し(書けないままのトランスクリプトには1回だけ)、次のリクエストは会話をそのまま運ぶ",
      ),
      hints: [
        say("A summary cut off in the middle, or messages that are nowhere on disk: which is worse, a long context or a lost one?", "途中で途切れた要約や、ディスクのどこにもないメッセージ。長いコンテキストと失われたコンテキストでは、どちらが困るでしょう。"),
        say(
          "In compact, save the transcript before anything else and stop when that fails. After the summary request, a stop_reason other than end_turn or an empty text is a failure too. On every failure, return notCompacted(conversation, why), which prints the warning and returns false, before changing the conversation.",
          "compact では何よりも先にトランスクリプトを保存し、失敗したらそこで止めます。要約のリクエストのあと、stop_reason が end_turn でない応答や空のテキストも失敗です。どの失敗でも、会話を変える前に return notCompacted(conversation, why) とします。警告を出して false を返す関数です。",
        ),
        say(
          "if (reply.stop_reason === \"max_tokens\") throw new Error(\"the summary was cut off\"); ... catch (error) { return notCompacted(conversation, `the summary request failed (${error.message})`); }",
          "if (reply.stop_reason === \"max_tokens\") throw new Error(\"the summary was cut off\"); ... catch (error) { return notCompacted(conversation, `the summary request failed (${error.message})`); }",
        ),
      ],
      async check(t) {
        t.write("a.txt", textOf("a"));
        const cut = await played(t, withThreshold([used(6000, reply.tools([read("a")])), reply.text("SUMMARY that stops in the mid", "max_tokens"), reply.text("done")], 1));
        const sent = cut.requests[2].messages as MessageParam[];
        if (sent.length !== 3 || !JSON.stringify(sent).includes("A-START") || JSON.stringify(sent).includes("stops in the mid")) {
          t.fail(say(`after a summary cut off by max_tokens, the next request carries ${sent.length} messages, not the whole conversation of 3`, `max_tokens で途切れた要約のあと、次のリクエストのメッセージは ${sent.length} 件で、3件の会話そのままではありません`));
        }
        if (!warned(t)) t.fail(say("the summary failed and no warning was printed", "要約に失敗したのに、警告が表示されていません"));

        // The transcripts folder is a file: nothing can be saved, so no summary may be asked for.
        rmSync(path.join(t.workspace, TRANSCRIPTS), { recursive: true, force: true });
        t.write(TRANSCRIPTS, "a file where the folder should be");
        // Under the threshold the work goes on; the person is told once, not at every request.
        const quietFrom = t.printed.length;
        await played(t, withThreshold([reply.tools([read("a", "toolu_a1")]), reply.tools([read("a", "toolu_a2")]), reply.tools([read("a", "toolu_a3")]), reply.text("done")], 0));
        const warnings = t.printed.slice(quietFrom).filter(isWarning);
        if (warnings.length !== 1) {
          t.fail(
            say(`with ${TRANSCRIPTS} unwritable, four requests printed ${warnings.length} warnings: ${quote(warnings)}`, `${TRANSCRIPTS} に書けないまま4回リクエストして、警告が ${warnings.length} 回出ました: ${quote(warnings)}`),
            say("one warning, the first time the transcript could not be written", "トランスクリプトが書けなかった最初の1回だけ、警告を出す"),
          );
        }
        const printedBefore = t.printed.length;
        const blocked = await played(t, withThreshold([used(6000, reply.tools([read("a")])), reply.text("done")], 0));
        if (blocked.requests.length !== 2 || (blocked.requests[1].messages as MessageParam[]).length !== 3) {
          t.fail(say(`with ${TRANSCRIPTS} unwritable, the conversation was compacted anyway: its messages would be lost`, `${TRANSCRIPTS} に書けないのに会話が圧縮されました。メッセージが失われてしまいます`));
        }
        if (!t.printed.slice(printedBefore).some((line) => /warn|not compacted|cannot|could not|failed/i.test(line))) {
          t.fail(say("the transcript could not be written and no warning was printed", "トランスクリプトが書けないのに、警告が表示されていません"));
        }
      },
    },
    {
      id: "back-off",
      title: say(
        "A summary that fails is not asked for again before every request: the next automatic try waits until the context has grown by a tenth of COMPACT_THRESHOLD, with one warning that says when; a compaction that works ends the wait",
        "失敗した要約は、リクエストのたびに頼み直さない。次の自動の試みは、コンテキストが COMPACT_THRESHOLD の10分の1だけ増えるまで待ち、いつ試すかを1回の警告で伝える。圧縮がうまくいけば、待ちは終わる",
      ),
      hints: [
        say("A summary request carries the whole conversation. If one failed a moment ago, what does asking again before the very next request cost, and what would it change?", "要約のリクエストは会話全体を運びます。いま失敗したばかりなのに、すぐ次のリクエストの前にまた頼むと、何がかかり、何が変わるでしょう。"),
        say(
          "On every failure, return notCompacted(conversation, why): it prints the one warning and sets conversation.retryAt, which the client compares with the last request's input tokens. When a compaction works, set retryAt back to 0 with cut, summary and contextTokens.",
          "どの失敗でも return notCompacted(conversation, why) とします。警告を1回出し、conversation.retryAt を設定します。クライアントはこれを直前のリクエストの入力トークンと比べます。圧縮がうまくいったら、cut、summary、contextTokens と一緒に retryAt を 0 に戻します。",
        ),
        say(
          "} catch (error) { return notCompacted(conversation, `the summary request failed (${String(error)})`); } ... Object.assign(conversation, { cut: messages.length, summary: message, contextTokens: 0, retryAt: 0 });",
          "} catch (error) { return notCompacted(conversation, `the summary request failed (${String(error)})`); } ... Object.assign(conversation, { cut: messages.length, summary: message, contextTokens: 0, retryAt: 0 });",
        ),
      ],
      async check(t) {
        t.write("a.txt", textOf("a"));
        // Threshold 5,000, so a failed try waits until a request passes its tokens + 500.
        const step = (tokens: number, n: number) => used(tokens, reply.tools([read("a", `toolu_a${n}`)]));
        const replies = [
          step(6000, 1), reply.text("SUMMARY that stops in the mid", "max_tokens"), // fails: the next try waits for more than 6,500
          step(6100, 2), step(6200, 3), step(6700, 4), // only past 6,500 is it tried again
          reply.text(SUMMARY), step(6000, 5), reply.text(SUMMARY), reply.text("done"), // it worked: 6,000 is past the threshold again
        ];
        const from = t.printed.length;
        const session = await t.replay(withThreshold(replies, 3));
        const asked = session.requests.flatMap((request, i) => (wordsOf(request).includes("Summarise the conversation so far") ? [i + 1] : []));
        if (asked.join(",") !== "2,6,8") {
          t.fail(
            say(`the summary requests were requests ${quote(asked)}, counting every request: steps of 6,000 tokens (its summary fails), 6,100, 6,200, 6,700, then 6,000 after a summary that worked`, `要約のリクエストは、すべてのリクエストを数えて ${quote(asked)} 番目でした。6,000 トークン(その要約は失敗)、6,100、6,200、6,700 と進み、要約がうまくいったあと 6,000 です`),
            say("requests 2, 6 and 8: after 6,000, then only past 6,500 (6,700), then after 6,000 again, the wait being over", "2、6、8 番目。6,000 のあと、次は 6,500 を超えたとき(6,700)だけ、そして待ちが終わったので 6,000 のあとにもう1回"),
          );
        }
        const warnings = t.printed.slice(from).filter((line) => /not compacted/i.test(line));
        if (warnings.length !== 1) t.fail(say(`one failed summary printed ${warnings.length} warnings: ${quote(warnings)}`, `要約の失敗1回で、警告が ${warnings.length} 回出ました: ${quote(warnings)}`));
        checked(t, session);
      },
    },
    {
      id: "demo",
      title: say(
        "The stage's demo replays through your code: it compacts once, after the fix, and goes on from the summary to a sorted report, every message in the transcript",
        "ステージのデモがあなたのコードで再生できる。修正のあとで1回圧縮し、要約から作業を続けて並べ替えたレポートまで進み、すべてのメッセージがトランスクリプトに残る",
      ),
      hints: [
        say("Run npx tsx workshop/s11.ts and read what the replay says.", "npx tsx workshop/s11.ts を実行して、再生が何と言うかを読んでください。"),
        say(
          "The demo's threshold is 3,200 tokens: one summary request comes right after the edit, and every request after it starts with the summary. Each of those steps goes through your saveTranscript, contextFor and compact.",
          "デモのしきい値は 3,200 トークンです。編集の直後に要約のリクエストが1回あり、そのあとのリクエストはすべて要約から始まります。どのステップもあなたの saveTranscript、contextFor、compact を通ります。",
        ),
        say("Every check above passing is most of the way; the replay then names the first request that differs from the recording.", "ここまでのチェックが通れば、ほとんど終わっています。あとは再生が、記録と違う最初のリクエストを教えてくれます。"),
      ],
      async check(t) {
        const { messages } = await played(t, loadScenario("s11"));
        const report = t.read("src/report.js") ?? "";
        if (!report.includes("item.quantity < item.min") || !report.includes(".sort(")) t.fail(say(`src/report.js is not the demo's: ${quote(report.slice(0, 300))}`, `src/report.js がデモのものになっていません: ${quote(report.slice(0, 300))}`));
        const transcript = JSON.stringify(onlyTranscript(t).messages);
        const missing = messages.flatMap(blocks).find((b) => b.type === "tool_use" && !transcript.includes(b.id!));
        if (missing) t.fail(say(`the transcript lost the call ${missing.id}`, `トランスクリプトから呼び出し ${missing.id} が失われています`));
        const last = JSON.stringify(messages.at(-1));
        if (!transcript.includes(last.slice(1, -1))) t.fail(say("the demo's last reply, its report, is not in the transcript", "デモの最後の応答(報告)がトランスクリプトにありません"));
      },
    },
  ],
});
