// Exercise s06: the nine steps every call goes through, and the approval step. The tool
// objects, their schemas (checked by ajv in defineTool), the registry, runTools and the
// terminal are given; runTool and approve (with mustAsk) are taken out. The stage loads in
// the default approval mode here: reading goes ahead, an edit or a command asks first.
import { PassThrough } from "node:stream";
import type { ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { nobody, scriptedTerminal, useTerminal } from "../lib/runtime/terminal.ts";
import { defineExercise, notWrittenIn, quote, resultText, say, toolResults, type CheckKit } from "../lib/course/exercises.ts";

let calls = 0;
const use = (name: string, input: Record<string, unknown>) => ({ type: "tool_use", id: `toolu_s06_check_${++calls}`, name, input }) as ToolUseBlock;

/** The learner's runTool; a TODO reached inside it (runTool or approve) fails the check by name. */
async function runTool(t: CheckKit, call: ToolUseBlock): Promise<{ result: ToolResultBlockParam; text: string }> {
  const stage = t.stage as unknown as { runTool(call: ToolUseBlock): Promise<ToolResultBlockParam> };
  const result = await stage.runTool(call);
  const text = resultText(result);
  if (notWrittenIn(text)) throw new Error(text);
  return { result, text };
}

/** A person at the stage's terminal who types `answers`; `screen()` is what they were shown. */
function person(t: CheckKit, answers: string[]): { screen: () => string } {
  const stream = new PassThrough();
  let shown = "";
  stream.on("data", (chunk: Buffer) => (shown += chunk.toString()));
  useTerminal(scriptedTerminal(answers, stream as unknown as NodeJS.WriteStream));
  t.cleanup(() => useTerminal(nobody));
  return { screen: () => `${t.printed.join("\n")}\n${shown}` };
}

const mustFail = (t: CheckKit, what: string, result: ToolResultBlockParam, text: string) => {
  if (result.is_error !== true) t.fail(say(`${what} came back without is_error: ${quote(text)}`, `${what} が is_error なしで返りました: ${quote(text)}`));
};

export default defineExercise({
  stage: "s06",
  title: say("The nine steps and approval", "9 つのステップと承認"),
  mechanism: say(
    "runTool: look up, validate, describe, confirm, execute, then llmContent to the model and returnDisplay to the person; approve: who must agree, by approval mode",
    "runTool: 探す・検証する・説明する・確認する・実行する、そして llmContent はモデルへ、returnDisplay は人へ。approve: 承認モードに応じて誰の同意が要るか",
  ),
  minutes: 40,
  takeOut: [
    {
      function: "runTool",
      task: say(
        "one call through the nine steps, in order: look the tool up in the registry, validate its parameters (null means not given), print getDescription, ask approve, execute with an AbortSignal, send llmContent to the model and show returnDisplay to the person; every failure becomes an is_error result.",
        "1 つの呼び出しを 9 つのステップで順に処理します。レジストリでツールを探し、パラメータを検証し（null は「指定なし」）、getDescription を表示し、approve に尋ね、AbortSignal 付きで実行し、llmContent をモデルへ、returnDisplay を人へ。失敗はすべて is_error の結果にします。",
      ),
    },
    {
      function: "approve",
      helpers: ["mustAsk"],
      task: say(
        "decide whether the call may run: plan mode refuses edits and commands; reading never asks; default asks before edits and commands, auto-edit only before commands, yolo never; ask the person (y, a, n, or their own words) and refuse at once when no one is at the terminal.",
        "呼び出しを実行してよいかを決めます。plan モードは編集とコマンドを拒否し、読むだけなら尋ねません。default は編集とコマンドの前に、auto-edit はコマンドの前だけ尋ね、yolo は尋ねません。人に尋ね（y、a、n、または自分の言葉）、端末に誰もいなければすぐに拒否します。",
      ),
    },
  ],
  requirements: [
    {
      id: "look-up",
      title: say("A call to a tool the registry does not have gets an is_error result naming the tools there are", "レジストリにないツールの呼び出しには、あるツールを挙げた is_error の結果が返る"),
      hints: [
        say("The first real step is finding the tool by the name the model used.", "最初の本当のステップは、モデルが使った名前でツールを見つけることです。"),
        say("registry.getTool(call.name) is undefined for an unknown name: answer with an error that lists registry.getAllTools().", "知らない名前なら registry.getTool(call.name) は undefined です。registry.getAllTools() を挙げたエラーで答えます。"),
        say('if (!tool) return { type: "tool_result", tool_use_id: call.id, is_error: true, content: `Error: unknown tool "${call.name}". Tools: ${names}.` };', 'if (!tool) return { type: "tool_result", tool_use_id: call.id, is_error: true, content: `Error: unknown tool "${call.name}". Tools: ${names}.` };'),
      ],
      async check(t) {
        const { result, text } = await runTool(t, use("teleport", {}));
        mustFail(t, "teleport", result, text);
        if (!/teleport/.test(text) || !/read_file/.test(text) || !/edit_file/.test(text)) {
          t.fail(say(`the error was ${quote(text)}`, `エラーは ${quote(text)} でした`), say("an error naming teleport and the tools there are (bash, read_file, ...)", "teleport と、あるツール（bash、read_file など）を挙げたエラー"));
        }
      },
    },
    {
      id: "validate",
      title: say("Parameters that break the tool's schema are refused, naming the parameter, before anything runs; null means not given", "スキーマに合わないパラメータは、何かが動く前に、そのパラメータを挙げて拒否される。null は「指定なし」"),
      hints: [
        say("Every tool can check its own parameters: ask it before doing anything else.", "どのツールも自分のパラメータを検証できます。ほかのことをする前に尋ねましょう。"),
        say("tool.validateToolParams(params) returns null or a message; models send null for what they leave out, so drop nulls first.", "tool.validateToolParams(params) は null かメッセージを返します。モデルは省いたものに null を送るので、先に null を取り除きます。"),
        say("const params = Object.fromEntries(Object.entries(call.input).filter(([, v]) => v !== null)); const problem = tool.validateToolParams(params); if (problem) return failed(...);", "const params = Object.fromEntries(Object.entries(call.input).filter(([, v]) => v !== null)); const problem = tool.validateToolParams(params); if (problem) return failed(...);"),
      ],
      async check(t) {
        person(t, ["y", "y"]); // a yes would be given, so only validation can stop these
        const wrongType = await runTool(t, use("write_file", { path: 5, content: "x" }));
        mustFail(t, "write_file(path: 5)", wrongType.result, wrongType.text);
        if (!/path/.test(wrongType.text)) t.fail(say(`write_file(path: 5) answered ${quote(wrongType.text)}, not naming "path"`, `write_file(path: 5) は "path" を挙げずに ${quote(wrongType.text)} と答えました`));
        const text = await runTool(t, use("bash", { command: "touch ran.txt", timeout: "120" }));
        mustFail(t, 'bash(timeout: "120")', text.result, text.text);
        if (t.read("ran.txt") !== undefined) t.fail(say('bash with timeout "120" ran the command anyway', 'timeout が "120" の bash なのに、コマンドが実行されました'));
        t.write("three.txt", "1\n2\n3");
        const nullLimit = await runTool(t, use("read_file", { path: "three.txt", limit: null }));
        if (nullLimit.result.is_error || nullLimit.text !== "1\n2\n3") {
          t.fail(say(`read_file(limit: null) answered ${quote(nullLimit.text)}`, `read_file(limit: null) は ${quote(nullLimit.text)} と答えました`), say("the whole file, as if limit were not given", "limit がないときと同じく、ファイル全体"));
        }
      },
    },
    {
      id: "ask-first",
      title: say("In the default mode an edit asks the person first, showing the change: yes runs it, no refuses it, their own words reach the model", "default モードでは、編集の前に変更を見せて人に尋ねる。yes なら実行、no なら拒否、その人の言葉はモデルに届く"),
      hints: [
        say("Between describing and executing, the tool may have something to confirm, and the approval mode says whether a person must agree.", "説明と実行のあいだに、ツールが確認を求めることがあり、人の同意が要るかは承認モードが決めます。"),
        say("tool.shouldConfirmExecute(params, signal) gives a title and details (the diff); print them, then read an answer with terminal().ask.", "tool.shouldConfirmExecute(params, signal) がタイトルと詳細（差分）を返します。それを表示して、terminal().ask で答えを読みます。"),
        say('const line = await terminal().ask("allow? ", { fresh: true }); y -> run; n -> { run: false, why: "the person said no" }; other words -> why: `the person said no, and said: ${JSON.stringify(line)}`', 'const line = await terminal().ask("allow? ", { fresh: true }); y なら実行、n なら { run: false, why: "the person said no" }、それ以外の言葉なら why: `the person said no, and said: ${JSON.stringify(line)}`'),
      ],
      async check(t) {
        t.write("a.txt", "old\n");
        const seen = person(t, ["y", "n", "use b.txt instead"]);
        const yes = await runTool(t, use("edit_file", { path: "a.txt", old_string: "old", new_string: "new" }));
        if (yes.result.is_error || t.read("a.txt") !== "new\n") t.fail(say(`after "y", edit_file answered ${quote(yes.text)} and a.txt holds ${quote(t.read("a.txt"))}`, `"y" のあと、edit_file は ${quote(yes.text)} と答え、a.txt は ${quote(t.read("a.txt"))} でした`));
        if (!seen.screen().includes("-old") || !seen.screen().includes("+new")) t.fail(say("the person was not shown the change (the diff's -old and +new lines) before saying yes", "yes と言う前に、変更（差分の -old と +new の行）が人に見せられていませんでした"));
        const no = await runTool(t, use("edit_file", { path: "a.txt", old_string: "new", new_string: "newer" }));
        mustFail(t, 'edit_file after "n"', no.result, no.text);
        if (t.read("a.txt") !== "new\n") t.fail(say(`after "n", a.txt changed to ${quote(t.read("a.txt"))}`, `"n" のあと、a.txt が ${quote(t.read("a.txt"))} に変わりました`));
        const words = await runTool(t, use("write_file", { path: "c.txt", content: "c" }));
        mustFail(t, "write_file after the person's own words", words.result, words.text);
        if (!words.text.includes("use b.txt instead")) t.fail(say(`the model was told ${quote(words.text)}, without the person's words "use b.txt instead"`, `モデルへの結果は ${quote(words.text)} で、人の言葉 "use b.txt instead" が入っていません`));
        if (t.read("c.txt") !== undefined) t.fail(say("c.txt was written although the person said no", "人が断ったのに c.txt が書かれました"));
      },
    },
    {
      id: "no-one-there",
      title: say("With no one at the terminal, an edit is refused at once (never a hang, never a silent yes) while reading still goes ahead", "端末に誰もいなければ、編集はすぐに拒否される（待ち続けず、黙って許しもしない）。読むことはそのまま進む"),
      hints: [
        say("Waiting for someone who is not there hangs the agent; going ahead would be a yes nobody said.", "いない人を待てばエージェントは止まり、進めば誰も言っていない yes になります。"),
        say("terminal().hasPerson is false when no one can answer: refuse with a reason instead of asking. Reading never needs asking.", "答えられる人がいないとき terminal().hasPerson は false です。尋ねずに理由付きで拒否します。読むだけなら尋ねる必要はありません。"),
        say('if (!terminal().hasPerson) return { run: false, why: `Not run: ${tool.name} needs a person\'s approval and no one is at the terminal.` };', 'if (!terminal().hasPerson) return { run: false, why: `Not run: ${tool.name} needs a person\'s approval and no one is at the terminal.` };'),
      ],
      async check(t) {
        useTerminal(nobody);
        t.write("a.txt", "old\n");
        const read = await t.within(1000, runTool(t, use("read_file", { path: "a.txt" })), say("read_file was still waiting after 1 s", "read_file は 1 秒たっても待っていました"));
        if (read.result.is_error || read.text !== "old\n") t.fail(say(`read_file answered ${quote(read.text)} with no one at the terminal`, `端末に誰もいないとき、read_file は ${quote(read.text)} と答えました`), say("the file's text: reading never asks", "ファイルの中身（読むだけなら尋ねない）"));
        const edit = await t.within(1000, runTool(t, use("write_file", { path: "a.txt", content: "new" })), say("write_file was still waiting after 1 s with no one at the terminal", "端末に誰もいないのに、write_file は 1 秒たっても待っていました"));
        mustFail(t, "write_file with no one at the terminal", edit.result, edit.text);
        if (t.read("a.txt") !== "old\n") t.fail(say("a.txt was written with no one there to allow it", "許す人がいないのに a.txt が書かれました"));
      },
    },
    {
      id: "two-audiences",
      title: say("The model gets llmContent and the person sees returnDisplay: an edit gives the model one line and shows the person the diff", "モデルには llmContent、人には returnDisplay。編集ならモデルには 1 行、人には差分"),
      hints: [
        say("A tool's result has two parts for two readers.", "ツールの結果には、2 人の読み手のための 2 つの部分があります。"),
        say("result.llmContent goes in the tool_result; result.returnDisplay is printed.", "result.llmContent は tool_result に入れ、result.returnDisplay は表示します。"),
        say('console.log(indent(result.returnDisplay)); return { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent, MAX_OUTPUT) };', 'console.log(indent(result.returnDisplay)); return { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent, MAX_OUTPUT) };'),
      ],
      async check(t) {
        t.write("app.js", "export const debug = true;\n");
        const seen = person(t, ["y"]);
        const { result, text } = await runTool(t, use("edit_file", { path: "app.js", old_string: "debug = true", new_string: "debug = false" }));
        if (result.is_error || text.includes("\n") || !text.includes("app.js")) {
          t.fail(say(`the model got ${quote(text)}`, `モデルへの結果は ${quote(text)} でした`), say("one line saying app.js was edited (llmContent)", "app.js を編集したと伝える 1 行（llmContent）"));
        }
        if (!seen.screen().includes("+export const debug = false;")) t.fail(say("the person never saw the diff's +export const debug = false; line (returnDisplay or the question)", "人は差分の +export const debug = false; の行を見ていません（returnDisplay か確認の質問）"));
      },
    },
    {
      id: "demo",
      title: say("The recorded demo runs through your code: the edit is allowed, npm test is declined with a reason, and the model runs only app.test.js", "記録したデモがあなたのコードで動く。編集は許され、npm test は理由付きで断られ、モデルは app.test.js だけを実行する"),
      hints: [
        say("Run the program with no key: `npx tsx workshop/s06.ts` shows where it stops.", "キーなしでプログラムを動かしましょう。`npx tsx workshop/s06.ts` でどこで止まるかがわかります。"),
        say("The demo needs every step: validation stops the text timeout, the approval step reads the person's three answers.", "デモにはすべてのステップが要ります。検証が文字列の timeout を止め、承認のステップが人の 3 つの答えを読みます。"),
        say("Compare your runTool with the nine comments in the stage's header, step by step.", "あなたの runTool を、ステージのヘッダーにある 9 つのステップと 1 つずつ見比べましょう。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        if (!t.read("app.js")?.includes("debug: false")) t.fail(say(`app.js holds ${quote(t.read("app.js"))}`, `app.js の中身は ${quote(t.read("app.js"))} でした`), say("debug: false, after the allowed edit", "許された編集のあとの debug: false"));
        const results = session.requests.flatMap((_, i) => toolResults(session.requests, i)).map(resultText);
        if (!results.some((text) => /timeout/.test(text))) t.fail(say('the model was never told its timeout "120" was wrong', 'timeout の "120" が誤りだとモデルに伝わっていません'));
        if (!results.some((text) => text.includes("integration suite needs a database"))) t.fail(say("the model never received the person's reason for declining npm test", "npm test を断った人の理由がモデルに届いていません"));
        if (!results.some((text) => text.includes("app.test.js: 2 checks passed"))) t.fail(say("app.test.js never ran (or its output never reached the model)", "app.test.js が実行されていない（か、その出力がモデルに届いていない）"));
      },
    },
  ],
});
