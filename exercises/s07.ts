// Exercise s07: context is a budget, and nothing is lost. The limit, the preview, the file's
// name (newResultFile), bash's streaming into a ResultFile and read_file's page reader are
// given; ResultFile.add and ResultFile.finish (keep a result whole, or in a file with its two
// ends in memory) and read_file's execute (the footer with the next page) are taken out.
import type { ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { defineExercise, notWrittenIn, quote, resultText, say, type CheckKit } from "../lib/course/exercises.ts";

const LIMIT = 40_000;
type Tool = { execute(params: object, signal: AbortSignal, callId?: string): Promise<{ llmContent: string }> };
type Stage = {
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  registry: { registerTool(tool: object): void; getTool(name: string): Tool | undefined };
};

/** Exactly `size` characters of numbered lines: "line 1\nline 2\n…". */
function lines(size: number): string {
  let text = "";
  for (let i = 1; text.length < size; i++) text += `line ${i}\n`;
  return text.slice(0, size);
}
/** Numbered entries over `size` characters, with no word "line" in them: "entry 1 xxx…\nentry 2 xxx…". */
function entries(size: number, endsWithBreak: boolean): string {
  const all: string[] = [];
  for (let i = 1, length = 0; length <= size; i++) length += (all[all.length] = `entry ${i} ${"x".repeat(30 + (i % 50))}`).length + 1;
  return all.join("\n") + (endsWithBreak ? "\n" : "");
}

/** The number of the first whole line of `text` that `preview` ends with (the preview's tail). */
function tailStart(text: string, preview: string): number {
  let common = 0;
  while (common < Math.min(text.length, preview.length) && text[text.length - 1 - common] === preview[preview.length - 1 - common]) common += 1;
  let at = text.length - common;
  if (at > 0 && text[at - 1] !== "\n") at = text.indexOf("\n", at) + 1;
  return text.slice(0, at).split("\n").length;
}
const firstLine = (text: string) => text.slice(0, text.indexOf("\n"));
const lastLine = (text: string) => text.slice(text.lastIndexOf("\n") + 1);

let calls = 0;
/** The stage's whole flow for one call (runTool); a TODO reached inside a tool fails the check, naming it. */
async function run(t: CheckKit, name: string, input: Record<string, unknown>): Promise<{ text: string; isError: boolean; id: string }> {
  const stage = t.stage as unknown as Stage;
  const id = `toolu_s07_check_${++calls}`;
  const result = await stage.runTool({ type: "tool_use", id, name, input } as ToolUseBlock);
  const text = resultText(result);
  if (notWrittenIn(text)) throw new Error(text);
  return { text, isError: result.is_error === true, id };
}

/** A tool of the checks' own that answers with the text it is given: a result of any size. */
function echo(t: CheckKit, text: string) {
  const stage = t.stage as unknown as Stage;
  if (!stage.registry.getTool("echo_text")) {
    stage.registry.registerTool({
      name: "echo_text",
      displayName: "Echo",
      description: "answers with its text",
      kind: "read",
      parameterSchema: { type: "object", properties: { text: { type: "string" } } },
      validateToolParams: () => null,
      getDescription: () => "echo",
      shouldConfirmExecute: async () => false,
      execute: async (params: { text: string }) => ({ llmContent: params.text, returnDisplay: "echoed" }),
    });
  }
  return run(t, "echo_text", { text });
}

/** The lines a read_file page shows, as [number, text], and the offset its footer names, if any. */
function pageOf(text: string): { shown: [number, string][]; next?: number } {
  const all = text.split("\n");
  const shown = all.flatMap((line): [number, string][] => {
    const match = /^ *(\d+)\t(.*)$/.exec(line);
    return match ? [[Number(match[1]), match[2]]] : [];
  });
  const footer = all.filter((line) => !/^ *\d+\t/.test(line)).join("\n");
  const next = /offset\D{0,3}(\d+)/i.exec(footer)?.[1];
  return { shown, next: next === undefined ? undefined : Number(next) };
}

export default defineExercise({
  stage: "s07",
  title: say("Large results", "大きな結果"),
  mechanism: say(
    "ResultFile and read_file's footer: a large result kept whole in a file, the model given its two ends; pages with the exact next offset",
    "ResultFile と read_file のフッター: 大きな結果はファイルに丸ごと残してモデルには両端を渡し、ページには次の offset を正確に書く",
  ),
  minutes: 45,
  takeOut: [
    {
      function: "ResultFile.add",
      task: say(
        "take the next bytes of a result: count its characters (as JavaScript counts them, from the bytes) and line breaks, and whether it ends with one; keep them while the result is at most RESULT_LIMIT characters; past that, write everything to a new file (newResultFile) and from then on write each piece as it comes, keeping only the start and the end in memory.",
        "結果の続きのバイト列を受け取ります。文字数（JavaScript の数え方で、バイト列から）と改行の数、改行で終わるかを数えます。RESULT_LIMIT 文字以内のあいだはメモリに持ち、超えたら新しいファイル（newResultFile）にそれまでの全部を書き、以後は届くたびに書き込んで、メモリには先頭と末尾だけを残します。",
      ),
    },
    {
      function: "ResultFile.finish",
      task: say(
        "what the model gets: the whole text when it fit, else the preview (preview() is written); close the file.",
        "モデルに渡すものを返します。収まったなら全文、収まらなかったならプレビュー（preview() は書いてあります）。ファイルは閉じます。",
      ),
    },
    {
      function: "readFileTool.execute",
      task: say(
        "read a page with readPage and add a footer: which lines were shown of how many, and the offset of the next page when there is one; an offset past the end is an error.",
        "readPage でページを読み、フッターを付けます。何行中のどの行を見せたか、続きがあれば次のページの offset。ファイルの終わりを越えた offset はエラーです。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the large result cut instead of kept: no file, the middle lost",
      change: [["      [this.fd, this.saved] = newResultFile(this.callId);\n", "      this.problem = \"the result was too large\";\n"]],
      fails: "large-kept",
    },
    {
      name: "only what comes after the limit goes to the file (the first 40,000 characters lost)",
      change: [["    this.write(all);\n", ""]],
      fails: "large-kept",
    },
    {
      name: "every result written to a file, small ones too",
      change: [["    if (this.fd !== undefined) closeSync(this.fd);", "    if (this.fd === undefined) {\n      [this.fd, this.saved] = newResultFile(this.callId);\n      this.write(Buffer.concat(this.whole));\n    }\n    closeSync(this.fd!);"]],
      fails: "small-whole",
    },
    {
      name: "the limit off by one: exactly 40,000 characters goes to a file",
      change: [["    if (this.characters <= RESULT_LIMIT) return;", "    if (this.characters < RESULT_LIMIT) return;"]],
      fails: "small-whole",
    },
    {
      name: "bytes counted as characters",
      change: [["      if (byte < 0x80 || byte >= 0xc0) characters += byte >= 0xf0 ? 2 : 1;", "      characters += 1;"]],
      fails: "small-whole",
    },
    {
      name: "a last line without a line break not counted: the tail's line number off by one",
      change: [["    this.endsWithBreak = bytes[bytes.length - 1] === 10;\n", ""]],
      fails: "tail-line",
    },
    {
      name: "the end not kept once the file started: the preview's tail is from the moment the limit passed",
      change: [["      this.write(bytes);\n      this.end = lastBytes(this.end, bytes);\n", "      this.write(bytes);\n"]],
      fails: "streamed",
    },
    {
      name: "the pieces collected and written at the end, not as they arrive",
      change: [
        ["      this.write(bytes);\n      this.end = lastBytes(this.end, bytes);\n", "      this.whole.push(bytes);\n      this.end = lastBytes(this.end, bytes);\n"],
        ["    if (this.fd !== undefined) closeSync(this.fd);", "    if (this.fd !== undefined) {\n      this.write(Buffer.concat(this.whole));\n      closeSync(this.fd);\n    }"],
      ],
      fails: "streamed",
    },
    {
      name: "no folder: the error reaches the model instead of the two ends",
      change: [["    try {\n      [this.fd, this.saved] = newResultFile(this.callId);\n    } catch (error) {\n      this.problem = `${RESULTS_FOLDER} could not be written: ${(error as Error).message}`;\n    }\n", "    [this.fd, this.saved] = newResultFile(this.callId);\n"]],
      fails: "no-folder",
    },
    {
      name: "the next page's offset off by one (the last line shown)",
      change: [["Next page: offset ${last + 1}", "Next page: offset ${last}"]],
      fails: "next-page",
    },
    {
      name: "the last page still names a next page",
      change: [["    if (last < page.total || !page.exact) {", "    if (last <= page.total || !page.exact) {"]],
      fails: "next-page",
    },
    {
      name: "an offset past the end not refused: an empty page",
      change: [["    if (offset > Math.max(page.total, 1)) {\n", "    if (offset > Infinity) {\n"]],
      fails: "past-the-end",
    },
  ],
  requirements: [
    {
      id: "small-whole",
      title: say("A result of at most 40,000 characters reaches the model whole, and no file is written", "40,000 文字以内の結果はそのままモデルに届き、ファイルは作られない"),
      hints: [
        say("Most results are small: for them nothing should change at all.", "たいていの結果は小さく、その場合は何も変わらないのが正解です。"),
        say("In add, keep every piece (this.whole) and count the characters; in finish, join the pieces and decode them when the result never passed the limit.", "add では届いたものを全部 this.whole に取っておき、文字数を数えます。finish では、上限を越えなかったならそれをつなげて文字列に戻します。"),
        say("add: this.whole.push(bytes); this.characters += …; if (this.characters <= RESULT_LIMIT) return;  finish: return Buffer.concat(this.whole).toString(\"utf8\");", "add: this.whole.push(bytes); this.characters += …; if (this.characters <= RESULT_LIMIT) return;  finish: return Buffer.concat(this.whole).toString(\"utf8\");"),
      ],
      async check(t) {
        const text = lines(LIMIT);
        const answer = await echo(t, text);
        if (answer.text !== text) t.fail(say(`a result of 40,000 characters reached the model as ${answer.text.length} characters: ${quote(answer.text.slice(0, 80))}…`, `40,000 文字の結果が ${answer.text.length} 文字になって届きました: ${quote(answer.text.slice(0, 80))}…`));
        if (t.read(`.agent/tool-results/${answer.id}.txt`) !== undefined) t.fail(say("a file was written for a result that fits", "収まる結果なのにファイルが作られました"));
        // 40,000 characters that are 2 bytes each in UTF-8 (80,000 bytes): characters are counted, not bytes.
        const accented = lines(LIMIT).replaceAll("e", "é");
        const wide = await echo(t, accented);
        if (wide.text !== accented || t.read(`.agent/tool-results/${wide.id}.txt`) !== undefined) {
          t.fail(say(`a result of 40,000 characters with accents (80,000 bytes of UTF-8) reached the model as ${wide.text.length} characters${t.read(`.agent/tool-results/${wide.id}.txt`) === undefined ? "" : ", and a file was written for it"}`, `アクセント付きの 40,000 文字（UTF-8 で 80,000 バイト）の結果が ${wide.text.length} 文字になって届きました${t.read(`.agent/tool-results/${wide.id}.txt`) === undefined ? "" : "。ファイルも作られました"}`), say("the whole text, and no file: the limit counts characters, not bytes", "全文がそのまま届き、ファイルは作られない（上限は文字で数え、バイトではない）"));
        }
      },
    },
    {
      id: "large-kept",
      title: say(
        "A result over 40,000 characters is kept whole in .agent/tool-results/<call id>.txt, and the model gets its first and last lines and the file's name, in far fewer characters",
        "40,000 文字を超える結果は .agent/tool-results/<call id>.txt に丸ごと残り、モデルには先頭と末尾の行とファイル名が、ずっと少ない文字数で届く",
      ),
      hints: [
        say("One character more than the limit is the moment to start a file: nothing may be cut without being kept.", "上限を1文字でも越えたら、ファイルに書き始める時です。残さずに切ってよいものはありません。"),
        say("When the count passes RESULT_LIMIT: open the file with newResultFile(this.callId), write every piece kept so far, keep the first characters (this.start) and the last bytes (this.end), and set this.tooLarge. finish returns this.preview().", "数が RESULT_LIMIT を越えたら、newResultFile(this.callId) でファイルを開き、それまでのものを全部書き、先頭の文字（this.start）と末尾のバイト（this.end）を取っておき、this.tooLarge を立てます。finish は this.preview() を返します。"),
        say("const all = Buffer.concat(this.whole.splice(0)); this.start = all.toString(\"utf8\", 0, 4 * PREVIEW.head).slice(0, PREVIEW.head); this.end = lastBytes(Buffer.alloc(0), all); [this.fd, this.saved] = newResultFile(this.callId); this.write(all);", "const all = Buffer.concat(this.whole.splice(0)); this.start = all.toString(\"utf8\", 0, 4 * PREVIEW.head).slice(0, PREVIEW.head); this.end = lastBytes(Buffer.alloc(0), all); [this.fd, this.saved] = newResultFile(this.callId); this.write(all);"),
      ],
      async check(t) {
        const text = lines(LIMIT + 1);
        const answer = await echo(t, text);
        const kept = t.read(`.agent/tool-results/${answer.id}.txt`);
        if (kept !== text) {
          t.fail(say(`.agent/tool-results/${answer.id}.txt holds ${kept === undefined ? "nothing (it does not exist)" : `${kept.length} characters, not the 40,001 of the result`}`, `.agent/tool-results/${answer.id}.txt の中身は ${kept === undefined ? "ありません（ファイルがありません）" : `${kept.length} 文字で、結果の 40,001 文字ではありません`}`));
        }
        if (answer.text.length > 10_000) t.fail(say(`the model got ${answer.text.length} characters of it`, `モデルに ${answer.text.length} 文字も届きました`));
        for (const [what, line] of [["first", firstLine(text)], ["last", lastLine(text)], ["file's name", `.agent/tool-results/${answer.id}.txt`]] as const) {
          if (!answer.text.includes(line)) t.fail(say(`what the model got does not hold the ${what}, ${quote(line)}: ${quote(answer.text.slice(0, 200))}…`, `モデルに届いたものに ${quote(line)} がありません: ${quote(answer.text.slice(0, 200))}…`));
        }
      },
    },
    {
      id: "tail-line",
      title: say(
        "The preview says at which line of the file its last lines start, exactly, whether or not the result ends with a line break",
        "プレビューは、末尾の行がファイルの何行目から始まるかを正確に示す（結果が改行で終わっていてもいなくても）",
      ),
      hints: [
        say("The model reads around the end with read_file(offset): preview() tells it the number of the first line it shows from the end, from what add counted.", "モデルは read_file(offset) で末尾のあたりを読みます。preview() は、add が数えたものから、末尾に見せる最初の行の番号をモデルに伝えます。"),
        say("In add, count the line breaks of every piece (this.lineBreaks) and remember whether the last piece ended with one (this.endsWithBreak): a result has lineBreaks lines when it ends with a break, one more when it does not.", "add では、届いた1切れごとに改行を数え（this.lineBreaks）、最後の1切れが改行で終わったかを覚えます（this.endsWithBreak）。結果の行数は、改行で終わるなら lineBreaks、終わらないならそれより1つ多くなります。"),
        say("for (const byte of bytes) if (byte === 10) this.lineBreaks += 1; this.endsWithBreak = bytes[bytes.length - 1] === 10;", "for (const byte of bytes) if (byte === 10) this.lineBreaks += 1; this.endsWithBreak = bytes[bytes.length - 1] === 10;"),
      ],
      async check(t) {
        for (const endsWithBreak of [false, true]) {
          const text = entries(LIMIT + 5_000, endsWithBreak);
          const answer = await echo(t, text);
          const start = tailStart(text, answer.text);
          const named = [...answer.text.matchAll(/\bline (\d+)\b/g)].map((match) => Number(match[1]));
          if (!named.includes(start)) {
            t.fail(say(
              `a result of ${text.split("\n").length - (endsWithBreak ? 1 : 0)} lines ${endsWithBreak ? "ending with" : "not ending with"} a line break: its preview ends with the lines from line ${start} on, and names ${named.length ? named.map((n) => `line ${n}`).join(", ") : "no line"}`,
              `${text.split("\n").length - (endsWithBreak ? 1 : 0)} 行で改行で${endsWithBreak ? "終わる" : "終わらない"}結果です。プレビューの末尾は ${start} 行目からなのに、示された行は ${named.length ? named.join("、") : "ありません"}でした`,
            ), say(`"line ${start}", where the preview's last lines start`, `プレビューの末尾が始まる "line ${start}"`));
          }
        }
      },
    },
    {
      id: "streamed",
      title: say(
        "A command's output goes to the file as it arrives: every byte is there while the command still runs, and when it ends the model gets its real last lines",
        "コマンドの出力は届くたびにファイルへ書かれる（コマンドがまだ動いているうちから全バイトがそこにある）。終わったら、モデルには本当の最後の行が届く",
      ),
      hints: [
        say("bash calls add for every piece of output. What must add do with a piece once the result is in a file?", "bash は出力が届くたびに add を呼びます。結果がもうファイルにあるなら、届いた1切れをどうすべきでしょう。"),
        say("Once this.tooLarge, write each piece to the file at once (this.write) and keep only the last bytes in memory; do not collect the pieces until the end.", "this.tooLarge になったら、届いた1切れをすぐファイルに書き（this.write）、メモリには末尾のバイトだけを残します。最後までため込んではいけません。"),
        say("if (this.tooLarge) { this.write(bytes); this.end = lastBytes(this.end, bytes); return; }", "if (this.tooLarge) { this.write(bytes); this.end = lastBytes(this.end, bytes); return; }"),
      ],
      async check(t) {
        const bash = (t.stage as unknown as Stage).registry.getTool("bash")!;
        const controller = new AbortController();
        let ended: string | undefined; // what the command answered, if it ended (it should not, yet)
        const running = bash
          .execute({ command: "seq 1 30000; sleep 30" }, controller.signal, "toolu_s07_check_stream")
          .then((result) => result.llmContent, (error: Error) => error.message)
          .then((text) => (ended = text));
        t.cleanup(() => controller.abort());
        const file = ".agent/tool-results/toolu_s07_check_stream.txt";
        const expected = `${Array.from({ length: 30000 }, (_, i) => i + 1).join("\n")}\n`;
        const started = Date.now();
        while (t.read(file) !== expected) {
          if (ended !== undefined && notWrittenIn(ended)) throw new Error(ended);
          if (ended !== undefined) t.fail(say(`the command ended before its output was in the file: ${quote(ended.slice(0, 200))}`, `出力がファイルに入る前にコマンドが終わりました: ${quote(ended.slice(0, 200))}`));
          if (Date.now() - started > 8000) {
            const kept = t.read(file);
            t.fail(say(`seq 1 30000 printed 168,894 characters and kept running, and after 8 s ${file} held ${kept === undefined ? "nothing" : `${kept.length} characters`}`, `seq 1 30000 が 168,894 文字を出力して動き続けているのに、8 秒たっても ${file} の中身は ${kept === undefined ? "ありません" : `${kept.length} 文字`}でした`));
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        controller.abort();
        await running;
        // A command that ends: the model gets the output's real two ends, the last line included.
        const done = await bash.execute({ command: "seq 1 30000" }, new AbortController().signal, "toolu_s07_check_ends");
        if (notWrittenIn(done.llmContent)) throw new Error(done.llmContent);
        const shown = done.llmContent.trimEnd().split("\n");
        if (shown[0] !== "1" || shown.at(-1) !== "30000") {
          t.fail(say(`seq 1 30000 ended, and the model got a preview from ${quote(shown[0])} to ${quote(shown.at(-1))}`, `seq 1 30000 が終わり、モデルに届いたプレビューは ${quote(shown[0])} から ${quote(shown.at(-1))} まででした`), say('the first line "1" and the last line "30000": the end is kept as the pieces arrive', '最初の行 "1" と最後の行 "30000"（末尾は届くたびに更新する）'));
        }
      },
    },
    {
      id: "no-folder",
      title: say(
        "When .agent/ cannot be written, the model still gets the result's two ends, not an error",
        ".agent/ に書けないときも、モデルにはエラーではなく結果の両端が届く",
      ),
      hints: [
        say("A full disk or a read-only folder must not cost the model the whole result.", "ディスクがいっぱいでもフォルダが書き込み禁止でも、モデルが結果を丸ごと失ってはいけません。"),
        say("newResultFile throws when the folder cannot be made: catch it, note why in this.problem, and go on keeping the two ends; preview() then says the middle is lost.", "フォルダを作れないと newResultFile は例外を投げます。それを捕まえて理由を this.problem に書き、両端を取っておく処理はそのまま続けます。そうすれば preview() が「中ほどは失われた」と伝えます。"),
        say("try { [this.fd, this.saved] = newResultFile(this.callId); } catch (error) { this.problem = `${RESULTS_FOLDER} could not be written: ${(error as Error).message}`; }", "try { [this.fd, this.saved] = newResultFile(this.callId); } catch (error) { this.problem = `${RESULTS_FOLDER} could not be written: ${(error as Error).message}`; }"),
      ],
      async check(t) {
        t.write(".agent", "a file where the folder would be");
        const text = lines(60_000);
        const answer = await echo(t, text);
        if (answer.isError) t.fail(say(`the model got an error instead: ${quote(answer.text.slice(0, 300))}`, `代わりにエラーが届きました: ${quote(answer.text.slice(0, 300))}`));
        if (answer.text.length > 10_000) t.fail(say(`the model got ${answer.text.length} characters`, `モデルに ${answer.text.length} 文字も届きました`));
        for (const line of [firstLine(text), lastLine(text)]) {
          if (!answer.text.includes(line)) t.fail(say(`what the model got does not hold ${quote(line)}: ${quote(answer.text.slice(0, 200))}…`, `モデルに届いたものに ${quote(line)} がありません: ${quote(answer.text.slice(0, 200))}…`));
        }
      },
    },
    {
      id: "next-page",
      title: say(
        "read_file's footer names the offset of the next page, exactly: following it reads every line once, in order, and the last page names none",
        "read_file のフッターは次のページの offset を正確に示す（たどると全行を順に1度ずつ読め、最後のページには offset がない）",
      ),
      hints: [
        say("The model will type the number your footer gives. Off by one, and it skips a line or reads one twice.", "モデルはフッターの数字をそのまま使います。1つずれれば、1行飛ばすか2度読むことになります。"),
        say("readPage gives the lines shown; the last one shown is offset + shown.length - 1. When it is before the last line of the file, the footer names the line after it; keep the limit the model gave.", "readPage が見せる行を返します。見せた最後の行は offset + shown.length - 1 です。それがファイルの最後の行より前なら、フッターにはその次の行を書きます。モデルが指定した limit もそのまま添えます。"),
        say("const last = offset + page.shown.length - 1; if (last < page.total) footer = `[lines ${offset}-${last} of ${page.total}. Next page: offset ${last + 1}${limit === undefined ? \"\" : `, limit ${limit}`}]`;", "const last = offset + page.shown.length - 1; if (last < page.total) footer = `[lines ${offset}-${last} of ${page.total}. Next page: offset ${last + 1}${limit === undefined ? \"\" : `, limit ${limit}`}]`;"),
      ],
      async check(t) {
        const text = Array.from({ length: 450 }, (_, i) => (i % 9 === 0 ? "w".repeat(1500) : `line ${i + 1}`)).join("\n");
        t.write("notes.txt", text);
        for (const limit of [undefined, 100]) {
          const seen: [number, string][] = [];
          let offset: number | undefined = 1;
          for (let pages = 0; offset !== undefined; pages++) {
            if (pages > 60) t.fail(say("the footers never stop naming a next page", "フッターがいつまでも次のページを示し続けます"));
            const input = { path: "notes.txt", ...(offset > 1 ? { offset } : {}), ...(limit ? { limit } : {}) };
            const answer = await run(t, "read_file", input);
            if (answer.isError) t.fail(say(`read_file(${quote(input)}) failed: ${quote(answer.text)}`, `read_file(${quote(input)}) が失敗しました: ${quote(answer.text)}`));
            const page = pageOf(answer.text);
            seen.push(...page.shown);
            offset = page.next;
          }
          const expected = text.split("\n").map((line, i): [number, string] => [i + 1, line]);
          const wrong = expected.findIndex((line, i) => seen[i]?.[0] !== line[0] || seen[i]?.[1] !== line[1]);
          if (wrong !== -1 || seen.length !== expected.length) {
            const at = wrong === -1 ? expected.length : wrong;
            t.fail(say(
              `following the footers${limit ? ` with limit ${limit}` : ""}, line ${at + 1} came ${seen[at] ? `as line ${seen[at][0]}` : "never"} (${seen.length} lines read for ${expected.length})`,
              `フッターをたどると${limit ? `（limit ${limit}）` : ""}、${at + 1} 行目が${seen[at] ? ` ${seen[at][0]} 行目として届きました` : "届きませんでした"}（${expected.length} 行に対して ${seen.length} 行を読みました）`,
            ));
          }
        }
      },
    },
    {
      id: "past-the-end",
      title: say("An offset past the end of the file is an error that says how many lines the file has", "ファイルの終わりを越えた offset はエラーになり、ファイルが何行あるかを伝える"),
      hints: [
        say("An empty page is not an answer: the model would not know why it got nothing.", "空のページは答えになりません。モデルは何も届かなかった理由が分かりません。"),
        say("readPage counts the file's lines (page.total): when offset is beyond it, throw an Error that gives the count, so the model can ask again.", "readPage はファイルの行数（page.total）を数えます。offset がそれを越えていたら、行数を書いた Error を throw します。モデルはそれを見て頼み直せます。"),
        say("if (offset > Math.max(page.total, 1)) throw new Error(`offset ${offset} is past the end of ${given}, which has ${page.total} lines`);", "if (offset > Math.max(page.total, 1)) throw new Error(`offset ${offset} is past the end of ${given}, which has ${page.total} lines`);"),
      ],
      async check(t) {
        t.write("five.txt", "1\n2\n3\n4\n5\n");
        const answer = await run(t, "read_file", { path: "five.txt", offset: 9 });
        if (!answer.isError) t.fail(say(`read_file at offset 9 of a 5-line file answered ${quote(answer.text)}`, `5 行のファイルを offset 9 で読むと ${quote(answer.text)} と答えました`));
        if (!/(^|\D)5(\D|$)/.test(answer.text)) t.fail(say(`the error does not say the file has 5 lines: ${quote(answer.text)}`, `エラーにファイルが 5 行だと書かれていません: ${quote(answer.text)}`));
        const last = await run(t, "read_file", { path: "five.txt", offset: 5 });
        if (last.isError || pageOf(last.text).shown.map(([n]) => n).join() !== "5") t.fail(say(`read_file at offset 5 (the last line) answered ${quote(last.text)}`, `offset 5（最後の行）で読むと ${quote(last.text)} と答えました`));
      },
    },
    {
      id: "demo",
      title: say(
        "Plays the stage's recorded demo: both test logs are kept whole in .agent/tool-results/, every request stays small, and the bug is fixed",
        "ステージの記録済みデモを再生できる（2つのテストログが .agent/tool-results/ に丸ごと残り、どのリクエストも小さいままで、バグが直る）",
      ),
      hints: [
        say("Run your copy: npx tsx workshop/s07.ts, and watch the [context: …] lines after each reply.", "コピーを動かし、返事ごとに出る [context: …] の行を見てみます: npx tsx workshop/s07.ts"),
        say("The model greps the first saved log and reads lines 86 to 92 of it: if the file is not there or not whole, those calls fail.", "モデルは保存された最初のログを grep し、その 86〜92 行目を読みます。ファイルがないか欠けていれば、その呼び出しが失敗します。"),
        say("If the checks above pass and this one fails, compare the files the message names with the demo's description in fixtures/s07/demo.json.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージにあるファイルを fixtures/s07/demo.json のデモの説明と比べてみてください。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        for (const [id, end] of [["01", "# fail 45\n"], ["06", "# fail 0\n"]]) {
          const log = t.read(`.agent/tool-results/toolu_s07_demo_${id}.txt`) ?? "";
          if (log.length < 190_000 || !log.endsWith(end)) t.fail(say(`.agent/tool-results/toolu_s07_demo_${id}.txt holds ${log.length} characters ending ${quote(log.slice(-30))}`, `.agent/tool-results/toolu_s07_demo_${id}.txt の中身は ${log.length} 文字で、終わりは ${quote(log.slice(-30))} でした`));
        }
        const largest = Math.max(...session.requests.map((request) => JSON.stringify(request).length));
        if (largest > 30_000) t.fail(say(`a request to the model was ${largest} characters long`, `モデルへのリクエストに ${largest} 文字のものがありました`));
        if (!(t.read("src/dates.js") ?? "").includes("Math.min(day, lastDay)")) t.fail(say("src/dates.js was not fixed", "src/dates.js が直っていません"));
      },
    },
  ],
});
