// Exercise s16: the session log and its repair. Where the file lives, its header, the ids,
// --continue and --resume, reading a file and refusing what is no session are given;
// SessionLog.push (each message on disk as it enters the history) and repaired (the history a
// logged session gives, as the API accepts it) are taken out. The checks read the session's
// file while the learner's loop runs (a command the model asks for looks at it), the requests
// the model received after a resume, and what the API would refuse (lib/course/replay.ts).
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { MessageCreateParams, MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { apiProblem } from "../lib/course/replay.ts";
import { defineExercise, notWrittenIn, quote, reply, resultText, say, scenarioOf, type CheckKit } from "../lib/course/exercises.ts";

const SESSIONS = ".agent/sessions";

/** The stage's own functions the checks call besides the loop. */
const stageOf = (t: CheckKit) =>
  t.stage as unknown as {
    startHistory(args?: string[]): MessageParam[];
    repaired(logged: MessageParam[]): { messages: MessageParam[]; notes: string[] };
  };

const user = (content: unknown) => ({ role: "user", content }) as MessageParam;
const assistant = (...content: unknown[]) => ({ role: "assistant", content }) as MessageParam;
const text = (t: string) => ({ type: "text", text: t });
const call = (id: string) => ({ type: "tool_use", id, name: "bash", input: { command: "make" } });
const result = (id: string) => ({ type: "tool_result", tool_use_id: id, content: "built" });
const header = (id: string) => ({ session: id, version: 1, started: "2025-06-01T09:00:00.000Z" });
const asJson = (value: unknown) => JSON.parse(JSON.stringify(value));

/** A session file's text: the header, then one JSON line per message. */
const sessionText = (id: string, messages: MessageParam[]) => [header(id), ...messages].map((line) => `${JSON.stringify(line)}\n`).join("");

/** The one session file of the workspace: its name and raw text. */
function theSession(t: CheckKit): { name: string; text: string } {
  const names = readdirSync(path.join(t.workspace, SESSIONS)).filter((name) => name.endsWith(".jsonl"));
  if (names.length !== 1) t.fail(say(`${SESSIONS}/ holds ${names.length} session files: ${quote(names)}`, `${SESSIONS}/ にセッションのファイルが ${names.length} 個あります: ${quote(names)}`), say("one", "1個"));
  return { name: names[0], text: t.read(`${SESSIONS}/${names[0]}`) ?? "" };
}

/** Each line of a session file as JSON; a line that is not one JSON object fails the check. */
function linesOf(t: CheckKit, file: string, raw: string): unknown[] {
  if (raw !== "" && !raw.endsWith("\n")) t.fail(say(`${file} does not end with a line break: its last line is not finished`, `${file} が改行で終わっていません。最後の行が終わっていません`));
  return raw.split("\n").slice(0, -1).map((line, i) => {
    try {
      return JSON.parse(line);
    } catch {
      return t.fail(
        say(`line ${i + 1} of ${file} is not one JSON object: ${quote(line)}`, `${file} の ${i + 1} 行目が JSON オブジェクト1つではありません: ${quote(line)}`),
        say("one JSON object per line, each message on a line of its own", "1行に JSON オブジェクト1つ。メッセージごとに1行"),
      );
    }
  });
}

/** The file's messages (its lines after the header) must be the history, exactly, in order. */
function mustHold(t: CheckKit, file: string, raw: string, history: MessageParam[]): void {
  const lines = linesOf(t, file, raw);
  const got = JSON.stringify(lines.slice(1));
  if (got !== JSON.stringify(asJson(history))) {
    t.fail(
      say(`after the header, ${file} holds ${lines.length - 1} lines: ${quote(got)}`, `${file} にはヘッダーのあとに ${lines.length - 1} 行あります: ${quote(got)}`),
      say(`the ${history.length} messages of the history, one per line, in order: ${quote(JSON.stringify(history))}`, `履歴の ${history.length} 個のメッセージを、1行に1つずつ順に: ${quote(JSON.stringify(history))}`),
    );
  }
}

/** What the API would refuse in a request carrying `messages`, also a result that answers no call in the message before it. */
function refusal(messages: MessageParam[]): string | undefined {
  const problem = apiProblem({ model: "m", max_tokens: 1, tools: [{ name: "bash", input_schema: { type: "object" } }], messages } as MessageCreateParams);
  if (problem) return problem;
  for (const [i, message] of messages.entries()) {
    const before = messages[i - 1];
    const asked = before?.role === "assistant" && Array.isArray(before.content) ? before.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) : [];
    const stray = Array.isArray(message.content) ? message.content.find((b) => b.type === "tool_result" && !asked.includes(b.tool_use_id)) : undefined;
    if (stray && stray.type === "tool_result") return `messages.${i}: unexpected tool_use_id found in tool_result blocks: ${stray.tool_use_id}`;
  }
  return undefined;
}

type Part = { type: string; text?: string; id?: string; tool_use_id?: string; is_error?: boolean };
/** The texts, calls and results of a history, in order: what a repair must keep. */
const partsOf = (messages: MessageParam[]) =>
  messages.flatMap((m) =>
    (typeof m.content === "string" ? [text(m.content) as Part] : (m.content as Part[])).flatMap((b) =>
      b.type === "text" ? (b.text!.trim() ? [`text ${b.text}`] : []) : b.type === "tool_use" ? [`call ${b.id}`] : b.type === "tool_result" && b.is_error !== true ? [`result ${b.tool_use_id}`] : [],
    ),
  );

/** The learner's repaired(), which may refuse (throw) where a check allows it; a stub's "not written yet" is never taken for a refusal. */
function repairOf(t: CheckKit, logged: MessageParam[]): { messages: MessageParam[] } | { refused: string } {
  try {
    return { messages: stageOf(t).repaired(asJson(logged)).messages };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (notWrittenIn(message)) throw error;
    return { refused: message };
  }
}

function repairedAsAccepted(t: CheckKit, logged: MessageParam[], what: { en: string; ja: string }): MessageParam[] {
  const repair = repairOf(t, logged);
  if ("refused" in repair) t.fail(say(`${what.en}: repaired refused it (${repair.refused})`, `${what.ja}: repaired が拒否しました(${repair.refused})`), say("a history the API accepts", "API が受け付ける履歴"));
  const problem = refusal(repair.messages);
  if (problem) t.fail(say(`${what.en}: the API would refuse the history repaired gives: ${problem}`, `${what.ja}: repaired の返す履歴を API は拒否します: ${problem}`));
  return repair.messages;
}

export default defineExercise({
  stage: "s16",
  title: say("A session log, and its repair", "セッションログとその修復"),
  mechanism: say(
    "SessionLog.push appends each message to the session's file as it enters the history; repaired turns a logged session into a history the API accepts",
    "SessionLog.push は履歴に入るメッセージを1つずつセッションのファイルに書き足し、repaired は記録されたセッションを API が受け付ける履歴に直す",
  ),
  minutes: 35,
  takeOut: [
    {
      function: "SessionLog.push",
      task: say(
        "append each message to the session's file as one JSON line, with this.#append, before it enters the array (super.push); write what an earlier push could not write first; when writing fails, tell the person once and go on.",
        "メッセージを1つずつ JSON の1行としてセッションのファイルに this.#append で書き足してから、配列に入れます(super.push)。前の push で書けなかったものを先に書きます。書けないときは人に一度だけ伝え、先に進みます。",
      ),
    },
    {
      function: "repaired",
      task: say(
        "make the history a logged session gives: leave out empty text blocks and empty messages; give each tool_use whose result is missing from the next message an is_error result saying it was interrupted, in that next message; refuse a result that answers no call.",
        "記録されたセッションから履歴を作ります。空のテキストブロックと空のメッセージは外し、次のメッセージに結果のない tool_use には、中断されたと書いた is_error の結果をその次のメッセージに入れます。どの呼び出しにも答えていない結果は拒否します。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "pretty-printed JSON: one message spread over several lines",
      change: [["unwritten.map((message) => `${JSON.stringify(message)}\\n`)", "unwritten.map((message) => `${JSON.stringify(message, null, 2)}\\n`)"]],
      fails: "as-it-enters",
    },
    {
      name: "no line break after a message: the lines run together",
      change: [["unwritten.map((message) => `${JSON.stringify(message)}\\n`)", "unwritten.map((message) => JSON.stringify(message))"]],
      fails: "as-it-enters",
    },
    {
      name: "one push behind: each push writes what the history held before it, so the newest message is never on disk",
      change: [
        ["const unwritten = [...this.slice(this.#written), ...messages];", "const unwritten = this.slice(this.#written);"],
        ["this.#written = this.length + messages.length;", "this.#written = this.length;"],
      ],
      fails: "as-it-enters",
    },
    {
      name: "what was written not counted: every push writes the whole history again",
      change: [["      this.#written = this.length + messages.length;\n", ""]],
      fails: "as-it-enters",
    },
    {
      name: "only the new messages written: what a failed write missed is lost",
      change: [["const unwritten = [...this.slice(this.#written), ...messages];", "const unwritten = [...messages];"]],
      fails: "catch-up",
    },
    {
      name: "a failed write ends the session: the error is thrown into the loop",
      change: [["      this.#problem = problem;\n", "      throw error;\n"]],
      fails: "catch-up",
    },
    {
      name: "a failed write kept from the person",
      change: [["      if (this.#problem === undefined) console.log(", "      if (this.#problem === null) console.log("]],
      fails: "catch-up",
    },
    {
      name: "a resumed session's messages written again when it is resumed",
      change: [["    this.#written = this.length;\n", "    this.#written = 0;\n"]],
      fails: "same-file",
    },
    {
      name: "the interrupted result without is_error: the model takes it for the tool's output",
      change: [["is_error: true, content: INTERRUPTED", "content: INTERRUPTED"]],
      fails: "interrupted",
    },
    {
      name: "the interrupted results gathered at the end of the history, not right after their calls",
      change: [
        ["  const messages: MessageParam[] = [];\n  for (let i = 0;", "  const messages: MessageParam[] = [];\n  const late: ToolResultBlockParam[] = [];\n  for (let i = 0;"],
        ["    else messages.push({ role: \"user\", content: results });", "    else late.push(...results);"],
        ["  if (messages.length > 0 && messages[0].role !== \"user\")", "  if (late.length > 0) messages.push({ role: \"user\", content: late });\n  if (messages.length > 0 && messages[0].role !== \"user\")"],
      ],
      fails: "interrupted",
    },
    {
      name: "only the last message's calls looked at: a call cut off before an earlier resume keeps no result",
      change: [["const missing = callsOf(message).filter(", "const missing = (i === kept.length - 1 ? callsOf(message) : []).filter("]],
      fails: "interrupted",
    },
    {
      name: "the missing result in a message of its own, even when the next message holds the other call's result",
      change: [["    if (next?.role === \"user\" && Array.isArray(next.content)) kept[i + 1] = { role: \"user\", content: [...results, ...next.content] };\n    else messages.push", "    messages.push"]],
      fails: "interrupted",
    },
    {
      name: "empty text blocks kept: only empty messages left out",
      change: [["message.content.filter((block) => block.type !== \"text\" || block.text.trim() !== \"\")", "message.content.filter(() => true)"]],
      fails: "empty",
    },
    {
      name: "a block of spaces taken for text",
      change: [["block.type !== \"text\" || block.text.trim() !== \"\"", "block.type !== \"text\" || block.text !== \"\""]],
      fails: "empty",
    },
    {
      name: "an empty message kept",
      change: [["if (blocks ? blocks.length === 0 : String(message.content).trim() === \"\") return void", "if (blocks ? false : String(message.content).trim() === \"\") return void"]],
      fails: "empty",
    },
    {
      name: "a result that answers no call passed on to the model",
      change: [["    if (message.role === \"user\" && stray) throw new Error(", "    if (message.role === \"user\" && stray && false) throw new Error("]],
      fails: "stray",
    },
  ],
  requirements: [
    {
      id: "as-it-enters",
      title: say(
        "Each message is appended to .agent/sessions/<id>.jsonl as it enters the history, one JSON object per line after the header: a command the model asks for already finds its own call on the last line",
        "メッセージは履歴に入るたびに .agent/sessions/<id>.jsonl に書き足される。ヘッダーのあとに1行1つの JSON オブジェクトで、モデルが頼んだコマンドは、最後の行に自分の呼び出しをもう見つける",
      ),
      hints: [
        say("The loop pushes each message into the history. If the push writes it to the file first, nothing the loop holds is missing from the disk.", "ループはメッセージを1つずつ履歴に push します。push が先にファイルへ書けば、ループが持っているもので、ディスクにないものはなくなります。"),
        say(
          "In push, turn each message into JSON.stringify(message) + \"\\n\" and append them with this.#append(…), then super.push(...messages). Keep in this.#written how many messages are in the file.",
          "push の中で、各メッセージを JSON.stringify(message) + \"\\n\" にし、this.#append(…) で書き足してから super.push(...messages) します。ファイルに入ったメッセージの数を this.#written に覚えます。",
        ),
        say(
          "const unwritten = [...this.slice(this.#written), ...messages]; this.#append(unwritten.map((m) => `${JSON.stringify(m)}\\n`).join(\"\")); this.#written = this.length + messages.length; return super.push(...messages);",
          "const unwritten = [...this.slice(this.#written), ...messages]; this.#append(unwritten.map((m) => `${JSON.stringify(m)}\\n`).join(\"\")); this.#written = this.length + messages.length; return super.push(...messages);",
        ),
      ],
      async check(t) {
        const scenario = scenarioOf([reply.tools([{ name: "bash", input: { command: `tail -n 1 ${SESSIONS}/*.jsonl` } }]), reply.text("Seen.")], { answers: ["y"] });
        const session = t.asRecorded(await t.replay(scenario));
        for (const error of session.turnErrors) t.fail(say(`a turn ended with an error: ${String(error)}`, `ターンがエラーで終わりました: ${String(error)}`));
        const { name, text: raw } = theSession(t);
        const [, asked, answered] = session.messages;
        const seen = Array.isArray(answered?.content) && answered.content[0]?.type === "tool_result" ? resultText(answered.content[0]).trim() : "";
        if (seen !== JSON.stringify(asked)) {
          t.fail(
            say(`while the command ran, the last line of ${name} was ${quote(seen)}`, `コマンドの実行中、${name} の最後の行は ${quote(seen)} でした`),
            say(`the call that ran it: ${quote(JSON.stringify(asked))}`, `それを実行した呼び出し: ${quote(JSON.stringify(asked))}`),
          );
        }
        mustHold(t, name, raw, session.messages);
      },
    },
    {
      id: "catch-up",
      title: say(
        "A message that cannot be written does not stop the session: the person is told, and it is written with the next message that can be, in order",
        "書けないメッセージがあってもセッションは止まらない。人に伝え、そのメッセージは次に書けるときに、順番どおりに書かれる",
      ),
      hints: [
        say("A full disk, a folder removed: the session can go on in memory. What must the next write do so the file has no gap?", "ディスクがいっぱい、フォルダーが消えた。セッションはメモリの中で続けられます。ファイルに抜けを作らないために、次の書き込みは何をすべきでしょう。"),
        say(
          "Write this.slice(this.#written) before the new messages, and move this.#written only when the write worked. Catch the error, say it once with console.log, and push anyway.",
          "新しいメッセージの前に this.slice(this.#written) を書き、書けたときだけ this.#written を進めます。エラーは catch して console.log で一度だけ伝え、それでも push します。",
        ),
        say(
          "try { this.#append(…); this.#written = this.length + messages.length; this.#problem = undefined; } catch (error) { if (this.#problem === undefined) console.log(`[warning] …`); this.#problem = String(error); } return super.push(...messages);",
          "try { this.#append(…); this.#written = this.length + messages.length; this.#problem = undefined; } catch (error) { if (this.#problem === undefined) console.log(`[warning] …`); this.#problem = String(error); } return super.push(...messages);",
        ),
      ],
      async check(t) {
        writeFileSync(path.join(t.workspace, ".agent"), "a file where the folder would go");
        const history = stageOf(t).startHistory();
        const messages = [user("one"), assistant(text("two")), user("three")];
        t.printed.length = 0;
        try {
          history.push(messages[0]);
          history.push(messages[1]);
        } catch (error) {
          if (notWrittenIn(String(error))) throw error;
          t.fail(say(`push threw when the file could not be written: ${(error as Error).message}`, `ファイルに書けないとき push が例外を投げました: ${(error as Error).message}`), say("the session goes on", "セッションは続く"));
        }
        if (history.length !== 2) t.fail(say(`the history holds ${history.length} messages after two pushes`, `2回の push のあと、履歴のメッセージは ${history.length} 個でした`));
        if (t.printed.length === 0) t.fail(say("nothing was said to the person when the file could not be written", "ファイルに書けなかったとき、人には何も伝えられませんでした"));
        rmSync(path.join(t.workspace, ".agent"));
        history.push(messages[2]);
        const { name, text: raw } = theSession(t);
        mustHold(t, name, raw, messages);
      },
    },
    {
      id: "same-file",
      title: say(
        "A resumed session's first request holds the earlier messages, then the new prompt, and its new messages are appended to the same file, nothing twice",
        "再開したセッションの最初のリクエストには前のメッセージと新しいプロンプトが入り、新しいメッセージは同じファイルに書き足される。同じものは二度書かれない",
      ),
      hints: [
        say("The messages of a resumed session are in its file already. Which of the history's messages does the next push still have to write?", "再開したセッションのメッセージは、もうファイルにあります。次の push がまだ書くべきなのは、履歴のどのメッセージでしょう。"),
        say("The constructor counts the resumed messages as written (this.#written = this.length). push writes only what comes after them.", "コンストラクターは再開したメッセージを書いたものとして数えます(this.#written = this.length)。push が書くのはその後ろだけです。"),
        say("this.#append([...this.slice(this.#written), ...messages].map(…).join(\"\"))", "this.#append([...this.slice(this.#written), ...messages].map(…).join(\"\"))"),
      ],
      async check(t) {
        const id = "20250601-090000-aaaaaa";
        const earlier = [user("Remember the number 7."), assistant(text("I will."))];
        const before = sessionText(id, earlier);
        const scenario = scenarioOf([reply.text("It was 7.")], { files: { [`${SESSIONS}/${id}.jsonl`]: before } });
        const session = t.asRecorded(await t.replay({ ...scenario, sessionFlags: ["--continue"] } as typeof scenario));
        const sent = JSON.stringify(session.requests[0]?.messages);
        const expected = JSON.stringify([...earlier, user(scenario.prompts[0])]);
        if (sent !== expected) t.fail(say(`the first request carried ${quote(sent)}`, `最初のリクエストの中身は ${quote(sent)} でした`), say(`the earlier messages, then the prompt: ${quote(expected)}`, `前のメッセージ、そのあとにプロンプト: ${quote(expected)}`));
        const { name, text: raw } = theSession(t);
        if (name !== `${id}.jsonl` || !raw.startsWith(before)) t.fail(say(`the session's lines were not kept as they were in ${id}.jsonl: ${name} holds ${quote(raw)}`, `${id}.jsonl の行がそのまま残っていません。${name} の中身: ${quote(raw)}`));
        mustHold(t, name, raw, session.messages);
      },
    },
    {
      id: "interrupted",
      title: say(
        "A tool_use whose result is missing from the next message gets an is_error result there saying it was interrupted: at the end, before a later prompt, and beside another call's result",
        "次のメッセージに結果のない tool_use は、中断されたと書いた is_error の結果をそこに得る。最後でも、あとのプロンプトの前でも、別の呼び出しの結果の隣でも",
      ),
      hints: [
        say("The API refuses a tool_use whose tool_result is not in the very next message. The program ended during the call: what is true to tell the model?", "API は、すぐ次のメッセージに tool_result のない tool_use を拒否します。呼び出しの途中でプログラムが終わりました。モデルに伝えて正しいことは何でしょう。"),
        say(
          "For each assistant message, find its calls whose ids are not among the next message's tool_result ids. Put an is_error result with INTERRUPTED for each into the next user message (first), or into a new user message right after the call.",
          "アシスタントのメッセージごとに、次のメッセージの tool_result に id のない呼び出しを探します。それぞれに INTERRUPTED を書いた is_error の結果を、次のユーザーのメッセージの先頭に、なければ呼び出しのすぐあとの新しいユーザーのメッセージに入れます。",
        ),
        say(
          "const results = missing.map((call) => ({ type: \"tool_result\", tool_use_id: call.id, is_error: true, content: INTERRUPTED })); if (next?.role === \"user\" && Array.isArray(next.content)) kept[i + 1] = { role: \"user\", content: [...results, ...next.content] }; else messages.push({ role: \"user\", content: results });",
          "const results = missing.map((call) => ({ type: \"tool_result\", tool_use_id: call.id, is_error: true, content: INTERRUPTED })); if (next?.role === \"user\" && Array.isArray(next.content)) kept[i + 1] = { role: \"user\", content: [...results, ...next.content] }; else messages.push({ role: \"user\", content: results });",
        ),
      ],
      async check(t) {
        const cases: [{ en: string; ja: string }, MessageParam[], string][] = [
          [{ en: "a call at the end of the file", ja: "ファイルの最後の呼び出し" }, [user("build"), assistant(text("Building."), call("toolu_1"))], "toolu_1"],
          [{ en: "a call before a later prompt (resumed once already)", ja: "あとのプロンプトの前の呼び出し(一度再開したあと)" }, [user("build"), assistant(call("toolu_1")), user("go on"), assistant(text("ok"))], "toolu_1"],
          [{ en: "one of two calls, the other answered", ja: "2つのうち片方だけ答えのある呼び出し" }, [user("build"), assistant(call("toolu_1"), call("toolu_2")), user([result("toolu_2")]), assistant(text("ok"))], "toolu_1"],
        ];
        for (const [what, logged, id] of cases) {
          const messages = repairedAsAccepted(t, logged, what);
          const given = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === "tool_result" && b.tool_use_id === id);
          const shown = quote(JSON.stringify(given));
          if (given.length !== 1 || given[0].type !== "tool_result" || given[0].is_error !== true || !/interrupt/i.test(resultText(given[0]))) {
            t.fail(say(`${what.en}: the result for ${id} is ${shown}`, `${what.ja}: ${id} の結果は ${shown} でした`), say("one is_error result saying the call was interrupted", "呼び出しが中断されたと書いた is_error の結果1つ"));
          }
          if (JSON.stringify(partsOf(messages)) !== JSON.stringify(partsOf(logged))) t.fail(say(`${what.en}: the history lost or moved a message: ${quote(JSON.stringify(messages))}`, `${what.ja}: 履歴からメッセージが消えたか動きました: ${quote(JSON.stringify(messages))}`));
        }
      },
    },
    {
      id: "empty",
      title: say(
        "An empty message, and a text block of nothing but spaces, are left out (the API refuses both); everything else is kept, in order",
        "空のメッセージと、空白だけのテキストブロックは外す(API はどちらも拒否する)。それ以外はすべて順番どおりに残す",
      ),
      hints: [
        say("A model sometimes answers with nothing, and the loop pushes that reply as it is. The API refuses a request that carries it: what can the history leave out without losing anything?", "モデルはときどき何も返さず、ループはその返答をそのまま push します。それを含むリクエストは API に拒否されます。何も失わずに履歴から外せるのは何でしょう。"),
        say("Filter each message's blocks: a text block whose text.trim() is \"\" goes. A message left with no block, or a string of only spaces, goes too.", "各メッセージのブロックを選り分けます。text.trim() が \"\" のテキストブロックは外します。ブロックが残らないメッセージや、空白だけの文字列のメッセージも外します。"),
        say(
          "const blocks = typeof m.content === \"string\" ? undefined : m.content.filter((b) => b.type !== \"text\" || b.text.trim() !== \"\"); if (blocks ? blocks.length === 0 : m.content.trim() === \"\") return; kept.push(blocks ? { role: m.role, content: blocks } : m);",
          "const blocks = typeof m.content === \"string\" ? undefined : m.content.filter((b) => b.type !== \"text\" || b.text.trim() !== \"\"); if (blocks ? blocks.length === 0 : m.content.trim() === \"\") return; kept.push(blocks ? { role: m.role, content: blocks } : m);",
        ),
      ],
      async check(t) {
        const logged = [user("go"), assistant(), user("again"), assistant(text("   "), text("fine")), user("next")];
        const messages = repairedAsAccepted(t, logged, { en: "a session with an empty reply and a text block of spaces", ja: "空の返答と空白だけのテキストブロックのあるセッション" });
        if (JSON.stringify(partsOf(messages)) !== JSON.stringify(partsOf(logged))) {
          t.fail(say(`the history kept ${quote(partsOf(messages))}`, `履歴に残ったのは ${quote(partsOf(messages))} でした`), say(`all the rest: ${quote(partsOf(logged))}`, `それ以外のすべて: ${quote(partsOf(logged))}`));
        }
      },
    },
    {
      id: "stray",
      title: say(
        "A result that answers no call in the message before it never reaches the model (a file edited by hand): the session is refused, or the result left out",
        "直前のメッセージのどの呼び出しにも答えていない結果は、モデルに届かない(手で書き換えたファイル)。セッションを拒否するか、その結果を外す",
      ),
      hints: [
        say("The program never writes such a result, so the file was changed by someone. The API refuses a tool_result whose tool_use is not just before it.", "プログラムがそんな結果を書くことはないので、誰かがファイルを変えたのです。API は、直前に tool_use のない tool_result を拒否します。"),
        say("Before keeping a user message, look at the ids of the calls in the message just before it: every tool_result must answer one of them.", "ユーザーのメッセージを残す前に、直前のメッセージの呼び出しの id を見ます。tool_result はどれもそのどれかに答えていなければなりません。"),
        say(
          "const asked = callsOf(messages.at(-1)).map((c) => c.id); const stray = resultsOf(message).find((id) => !asked.includes(id)); if (message.role === \"user\" && stray) throw new Error(`the result for ${stray} answers no call …`);",
          "const asked = callsOf(messages.at(-1)).map((c) => c.id); const stray = resultsOf(message).find((id) => !asked.includes(id)); if (message.role === \"user\" && stray) throw new Error(`the result for ${stray} answers no call …`);",
        ),
      ],
      async check(t) {
        // A correct history first: a repair that refuses everything refuses nothing in particular.
        repairedAsAccepted(t, [user("build"), assistant(call("toolu_1")), user([result("toolu_1")]), assistant(text("built"))], { en: "a session whose results all answer a call", ja: "結果がすべて呼び出しに答えているセッション" });
        const repair = repairOf(t, [user("build"), assistant(text("Building.")), user([result("toolu_x")]), assistant(text("ok"))]);
        if ("refused" in repair) return;
        const problem = refusal(repair.messages);
        if (problem) t.fail(say(`a result that answers no call was passed on: ${problem}`, `どの呼び出しにも答えていない結果が渡されました: ${problem}`));
      },
    },
    {
      id: "demo",
      title: say(
        "The demo replays as recorded, and afterwards its session file holds every message of it, in order",
        "デモが記録どおりに再生され、そのあとセッションのファイルにすべてのメッセージが順番どおりに入っている",
      ),
      hints: [
        say("Run npx tsx workshop/s16.ts: the demo ends by counting the lines of its own session file.", "npx tsx workshop/s16.ts を実行します。デモの最後に、自分のセッションのファイルの行を数えます。"),
        say("If an earlier requirement fails, fix it first: this one needs push writing each message.", "前の要件が失敗しているなら、先に直します。この要件には、メッセージを1つずつ書く push が必要です。"),
        say("The header line comes from #newFile(); every other line is one message, exactly as the loop pushed it.", "ヘッダーの行は #newFile() が書きます。ほかの行はどれも、ループが push したとおりのメッセージ1つです。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        const { name, text: raw } = theSession(t);
        mustHold(t, name, raw, session.messages);
        if (!t.read("cli.mjs")?.includes("--version")) t.fail(say("cli.mjs has no --version flag after the demo", "デモのあと、cli.mjs に --version のフラグがありません"));
      },
    },
  ],
});
