// Exercise s06: the nine steps every call goes through, and the approval step. The tool
// objects, their schemas (checked by ajv in defineTool), the registry, runTools and the
// terminal are given; runTool and approve (with mustAsk) are taken out. s06 reads its approval
// mode once, when it loads: each check that depends on the mode loads the learner's module
// afresh in that mode (t.withSettings), so a mode set in the learner's shell changes nothing.
// The person is a stand-in who types the answers a check gives, then waits for ever, as a
// person who has nothing more to say does: a question too many shows as a wait, not a "no".
import type { ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import { nobody, useTerminal } from "../lib/runtime/terminal.ts";
import {
  CheckFailure, defineExercise, nobodyWhoHangs, notWrittenIn, quote, reply, resultText, say, scenarioOf, toolResults,
  type CheckKit, type Text,
} from "../lib/course/exercises.ts";

type Stage = {
  runTool(call: ToolUseBlock): Promise<ToolResultBlockParam>;
  registry: {
    registerTool(tool: object): void;
    unregisterTool(name: string): void;
    getTool(name: string): { execute(params: object, signal: AbortSignal): Promise<{ llmContent: string; returnDisplay: string }> } | undefined;
  };
};
type Mode = "default" | "auto-edit" | "yolo" | "plan";

let calls = 0;
const use = (name: string, input: Record<string, unknown>) => ({ type: "tool_use", id: `toolu_s06_check_${++calls}`, name, input }) as ToolUseBlock;

/** The learner's module loaded afresh in an approval mode, with its own registry and "always" list. */
const inMode = async (t: CheckKit, mode: Mode) => (await t.withSettings({ APPROVAL_MODE: mode })) as unknown as Stage;

/**
 * The learner's runTool on one call, which must answer (never throw) within `ms`. A TODO
 * reached inside it (runTool or approve) fails the check by name.
 */
async function runTool(t: CheckKit, call: ToolUseBlock, options: { stage?: Stage; ms?: number; late?: Text } = {}): Promise<{ result: ToolResultBlockParam; text: string }> {
  const stage = options.stage ?? (t.stage as unknown as Stage);
  const ms = options.ms ?? 3000;
  const late = options.late ?? say(`runTool(${call.name}) had not answered after ${ms / 1000} s: it waits for an answer no one gives`, `runTool(${call.name}) が ${ms / 1000} 秒たっても答えません。誰も返さない答えを待っています`);
  let result: ToolResultBlockParam;
  try {
    result = await t.within(ms, Promise.resolve().then(() => stage.runTool(call)), late);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof CheckFailure || notWrittenIn(message)) throw error;
    t.fail(say(`runTool(${call.name}) threw instead of answering with an is_error result: ${message}`, `runTool(${call.name}) が is_error の結果で答えずに例外を投げました: ${message}`));
  }
  const text = resultText(result);
  if (notWrittenIn(text)) throw new Error(text);
  return { result, text };
}

/**
 * A person at the stage's terminal who types `answers`, one per question, and then waits for
 * ever. `asked()` counts the questions; `screen()` is what they were shown.
 */
function person(t: CheckKit, answers: string[]): { screen: () => string; asked: () => number } {
  const left = [...answers];
  let [shown, asked] = ["", 0];
  useTerminal({
    hasPerson: true,
    ask(prompt) {
      asked += 1;
      shown += prompt;
      const line = left.shift();
      if (line === undefined) return new Promise<string | null>(() => {});
      shown += `${line}\n`;
      return Promise.resolve(line);
    },
    close() {},
  });
  t.cleanup(() => useTerminal(nobody));
  return { screen: () => `${t.printed.join("\n")}\n${shown}`, asked: () => asked };
}

/** No one at the terminal, and a question asked anyway would wait for ever (an open pipe). */
function noOne(t: CheckKit): { asked: () => number } {
  const stand = nobodyWhoHangs();
  useTerminal(stand.terminal);
  t.cleanup(() => useTerminal(nobody));
  return stand;
}

const mustFail = (t: CheckKit, what: string, result: ToolResultBlockParam, text: string) => {
  if (result.is_error !== true) t.fail(say(`${what} came back without is_error: ${quote(text)}`, `${what} が is_error なしで返りました: ${quote(text)}`));
};

const mustRun = (t: CheckKit, what: string, result: ToolResultBlockParam, text: string) => {
  if (result.is_error) t.fail(say(`${what} was not run: ${quote(text)}`, `${what} が実行されませんでした: ${quote(text)}`));
};

const waitedWithNoOne = (what: string) =>
  say(`${what} was still waiting after 1 s with no one at the terminal: it asked a person who is not there`, `端末に誰もいないのに、${what} は 1 秒たっても待っていました。いない人に尋ねています`);

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
        "decide whether the call may run: plan mode refuses edits and commands; reading never asks; default asks before edits and commands, auto-edit only before commands, yolo never; a change to the agent's own files (changesTheAgent) asks in every mode but yolo, and \"a\" does not cover it; ask the person (y, a, n, or their own words) and refuse at once when no one is at the terminal.",
        "呼び出しを実行してよいかを決めます。plan モードは編集とコマンドを拒否し、読むだけなら尋ねません。default は編集とコマンドの前に、auto-edit はコマンドの前だけ尋ね、yolo は尋ねません。エージェント自身のファイルを変える呼び出し（changesTheAgent）は yolo 以外のすべてのモードで尋ね、「a」もそれには及びません。人に尋ね（y、a、n、または自分の言葉）、端末に誰もいなければすぐに拒否します。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "a person assumed: approve asks without looking whether anyone is at the terminal",
      change: [["  if (!person.hasPerson) {\n    return { run: false, why: `Not run: ${tool.name} needs a person's approval (approval mode ${APPROVAL_MODE}) and no one is at the terminal.` };\n  }\n", ""]],
      fails: "no-one-there",
    },
    {
      name: "no person: every call refused, reading too",
      change: [["  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };", '  if (!terminal().hasPerson) return { run: false, why: "Not run: no one is at the terminal." };\n  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };']],
      fails: "no-one-there",
    },
    {
      name: "plan treated like default: an edit is asked about, and made when the person says yes",
      change: [['  if (APPROVAL_MODE === "plan" && tool.kind !== "read") {\n    return { run: false, why: `Not run: the agent is in plan mode, where it may read but not change files or run commands. Describe the change instead.` };\n  }\n', ""]],
      fails: "plan",
    },
    {
      name: "auto-edit ignored: edits still ask",
      change: [['  if (APPROVAL_MODE === "auto-edit") return tool.kind === "execute";\n', ""]],
      fails: "auto-edit",
    },
    {
      name: "auto-edit lets commands through too",
      change: [['  if (APPROVAL_MODE === "auto-edit") return tool.kind === "execute";', '  if (APPROVAL_MODE === "auto-edit") return false;']],
      fails: "auto-edit",
    },
    {
      name: "yolo ignored: edits and commands still ask",
      change: [['  if (tool.kind === "read" || APPROVAL_MODE === "yolo") return false;', '  if (tool.kind === "read") return false;']],
      fails: "yolo",
    },
    {
      name: "no person: every edit refused before the mode is asked, yolo too",
      change: [["  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };", '  if (tool.kind !== "read" && !terminal().hasPerson) return { run: false, why: "Not run: no one is at the terminal." };\n  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };']],
      fails: "yolo",
    },
    {
      name: '"a" (always) never remembered: the next call asks again',
      change: [["      if (!changesTheAgent) alwaysAllowed.add(tool.name); // the agent's own files ask every time\n", ""]],
      fails: "always",
    },
    {
      name: '"a" (always) remembered for every tool, not the one it answered',
      change: [["  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };", "  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.size > 0)) return { run: true };"]],
      fails: "always",
    },
    {
      name: "the agent's own files treated like any file: auto-edit writes .agent/settings.json without asking",
      change: [['  const changesTheAgent = APPROVAL_MODE !== "yolo" && (tool.changesTheAgent?.(params) ?? false);', "  const changesTheAgent = false;"]],
      fails: "agent-files",
    },
    {
      name: '"a" for the agent\'s own files remembered: the next settings write runs unasked',
      change: [["      if (!changesTheAgent) alwaysAllowed.add(tool.name); // the agent's own files ask every time", "      alwaysAllowed.add(tool.name);"], ["  if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };", "  if (alwaysAllowed.has(tool.name) || (!changesTheAgent && !mustAsk(tool))) return { run: true };"]],
      fails: "agent-files",
    },
    {
      name: "the agent's own files ask in yolo too",
      change: [['  const changesTheAgent = APPROVAL_MODE !== "yolo" && (tool.changesTheAgent?.(params) ?? false);', "  const changesTheAgent = tool.changesTheAgent?.(params) ?? false;"]],
      fails: "agent-files",
    },
    {
      name: "the person's own words dropped: the model only hears no",
      change: [["    if (answer !== \"\") return { run: false, why: `Not run: the person said no, and said: ${JSON.stringify(answer)}` };", '    if (answer !== "") return { run: false, why: "Not run: the person said no." };']],
      fails: "ask-first",
    },
    {
      name: "parameters not validated: bad ones reach execute",
      change: [["  const problem = tool.validateToolParams(params);", "  const problem: string | null = null;"]],
      fails: "validate",
    },
    {
      name: "null passed on: a left-out parameter counts as given",
      change: [["Object.entries(call.input ?? {}).filter(([, value]) => value !== null)", "Object.entries(call.input ?? {})"]],
      fails: "validate",
    },
    {
      name: "returnDisplay sent to the model instead of llmContent",
      change: [["content: clip(result.llmContent, MAX_OUTPUT) };", "content: clip(result.returnDisplay, MAX_OUTPUT) };"]],
      fails: "two-audiences",
    },
    {
      name: "returnDisplay never shown to the person",
      change: [["    if (result.returnDisplay !== verdict.shown) console.log(dim(indent(firstLines(result.returnDisplay, 12))));\n", ""]],
      fails: "two-audiences",
    },
    {
      name: "is_error missing on failures",
      change: [["return { type: \"tool_result\", tool_use_id: call.id, is_error: true, content: clip(message, MAX_OUTPUT) };", "return { type: \"tool_result\", tool_use_id: call.id, content: clip(message, MAX_OUTPUT) };"]],
      fails: "look-up",
    },
    {
      name: "an unknown tool throws instead of answering with an error result",
      change: [["  if (!tool) return failed(`Error: unknown tool", "  if (!tool) throw new Error(`Error: unknown tool"]],
      fails: "look-up",
    },
    {
      name: "results pushed as they finish: reads side by side go back out of order",
      change: [["for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));", "for (const batch of batches(calls)) await Promise.all(batch.map(async (call) => results.push(await runTool(call))));"]],
      fails: "in-order",
    },
  ],
  requirements: [
    {
      id: "look-up",
      title: say("A call to a tool the registry does not have gets an is_error result naming the tools there are", "レジストリにないツールの呼び出しには、あるツールを挙げた is_error の結果が返る"),
      hints: [
        say("The first real step is finding the tool by the name the model used.", "最初の本当のステップは、モデルが使った名前でツールを見つけることです。"),
        say("registry.getTool(call.name) is undefined for an unknown name: answer with an error that lists registry.getAllTools(). runTool never throws: every failure is a result with is_error: true.", "知らない名前なら registry.getTool(call.name) は undefined です。registry.getAllTools() を挙げたエラーで答えます。runTool は throw しません。失敗はすべて is_error: true の結果です。"),
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
        const stage = await inMode(t, "default");
        person(t, ["y", "y"]); // a yes would be given, so only validation can stop these
        const wrongType = await runTool(t, use("write_file", { path: 5, content: "x" }), { stage });
        mustFail(t, "write_file(path: 5)", wrongType.result, wrongType.text);
        if (!/path/.test(wrongType.text)) t.fail(say(`write_file(path: 5) answered ${quote(wrongType.text)}, not naming "path"`, `write_file(path: 5) は "path" を挙げずに ${quote(wrongType.text)} と答えました`));
        const text = await runTool(t, use("bash", { command: "touch ran.txt", timeout: "120" }), { stage });
        mustFail(t, 'bash(timeout: "120")', text.result, text.text);
        if (t.read("ran.txt") !== undefined) t.fail(say('bash with timeout "120" ran the command anyway', 'timeout が "120" の bash なのに、コマンドが実行されました'));
        t.write("three.txt", "1\n2\n3");
        const nullLimit = await runTool(t, use("read_file", { path: "three.txt", limit: null }), { stage });
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
        const stage = await inMode(t, "default");
        t.write("a.txt", "old\n");
        const seen = person(t, ["y", "n", "use b.txt instead"]);
        const yes = await runTool(t, use("edit_file", { path: "a.txt", old_string: "old", new_string: "new" }), { stage });
        if (yes.result.is_error || t.read("a.txt") !== "new\n") t.fail(say(`after "y", edit_file answered ${quote(yes.text)} and a.txt holds ${quote(t.read("a.txt"))}`, `"y" のあと、edit_file は ${quote(yes.text)} と答え、a.txt は ${quote(t.read("a.txt"))} でした`));
        if (seen.asked() !== 1) t.fail(say(`the person was asked ${seen.asked()} times about one edit`, `1 つの編集について人に ${seen.asked()} 回尋ねました`), say("one question before the edit", "編集の前に 1 回だけ尋ねる"));
        if (!seen.screen().includes("-old") || !seen.screen().includes("+new")) t.fail(say("the person was not shown the change (the diff's -old and +new lines) before saying yes", "yes と言う前に、変更（差分の -old と +new の行）が人に見せられていませんでした"));
        const no = await runTool(t, use("edit_file", { path: "a.txt", old_string: "new", new_string: "newer" }), { stage });
        mustFail(t, 'edit_file after "n"', no.result, no.text);
        if (t.read("a.txt") !== "new\n") t.fail(say(`after "n", a.txt changed to ${quote(t.read("a.txt"))}`, `"n" のあと、a.txt が ${quote(t.read("a.txt"))} に変わりました`));
        const words = await runTool(t, use("write_file", { path: "c.txt", content: "c" }), { stage });
        mustFail(t, "write_file after the person's own words", words.result, words.text);
        if (!words.text.includes("use b.txt instead")) t.fail(say(`the model was told ${quote(words.text)}, without the person's words "use b.txt instead"`, `モデルへの結果は ${quote(words.text)} で、人の言葉 "use b.txt instead" が入っていません`));
        if (t.read("c.txt") !== undefined) t.fail(say("c.txt was written although the person said no", "人が断ったのに c.txt が書かれました"));
      },
    },
    {
      id: "no-one-there",
      title: say("With no one at the terminal, an edit is refused at once without asking (never a hang, never a silent yes) while reading still goes ahead", "端末に誰もいなければ、編集は尋ねずにすぐ拒否される（待ち続けず、黙って許しもしない）。読むことはそのまま進む"),
      hints: [
        say("Waiting for someone who is not there hangs the agent (a piped input that never ends); going ahead would be a yes nobody said.", "いない人を待てばエージェントは止まり（終わらないパイプの入力）、進めば誰も言っていない yes になります。"),
        say("terminal().hasPerson is false when no one can answer: look at it before asking, and refuse with a reason instead. Reading never needs asking.", "答えられる人がいないとき terminal().hasPerson は false です。尋ねる前にそれを見て、尋ねずに理由付きで拒否します。読むだけなら尋ねる必要はありません。"),
        say('if (!terminal().hasPerson) return { run: false, why: `Not run: ${tool.name} needs a person\'s approval and no one is at the terminal.` };', 'if (!terminal().hasPerson) return { run: false, why: `Not run: ${tool.name} needs a person\'s approval and no one is at the terminal.` };'),
      ],
      async check(t) {
        const stage = await inMode(t, "default");
        const stand = noOne(t);
        t.write("a.txt", "old\n");
        const read = await runTool(t, use("read_file", { path: "a.txt" }), { stage, ms: 1000, late: waitedWithNoOne("read_file") });
        if (read.result.is_error || read.text !== "old\n") t.fail(say(`read_file answered ${quote(read.text)} with no one at the terminal`, `端末に誰もいないとき、read_file は ${quote(read.text)} と答えました`), say("the file's text: reading never asks", "ファイルの中身（読むだけなら尋ねない）"));
        const edit = await runTool(t, use("write_file", { path: "a.txt", content: "new" }), { stage, ms: 1000, late: waitedWithNoOne("write_file") });
        mustFail(t, "write_file with no one at the terminal", edit.result, edit.text);
        if (t.read("a.txt") !== "old\n") t.fail(say("a.txt was written with no one there to allow it", "許す人がいないのに a.txt が書かれました"));
        if (stand.asked() > 0) t.fail(say("approve asked a terminal with no person (hasPerson is false): in the real program a piped answer would be taken as the person's", "人のいない端末（hasPerson が false）に approve が尋ねました。本物のプログラムでは、パイプで流し込んだ答えが人の答えとして扱われてしまいます"));
      },
    },
    {
      id: "always",
      title: say(
        'Answering "a" (always) allows that tool for the rest of the session: its next call runs without asking, and other tools still ask',
        "「a」（always）と答えると、そのツールはセッションの終わりまで許される。次の呼び出しは尋ねずに動き、ほかのツールは今までどおり尋ねる",
      ),
      hints: [
        say('"a" means "yes, and do not ask me again about this tool". Where does the agent keep what the person said?', "「a」は「はい。このツールについてはもう聞かないで」という意味です。人が言ったことを、エージェントはどこに覚えておくでしょう。"),
        say("alwaysAllowed is a Set of tool names: add the tool's name when the answer is a, and skip the question when the name is in it. Another tool is not in it, so it still asks.", "alwaysAllowed はツール名の Set です。答えが a ならツール名を足し、名前が入っていれば質問を飛ばします。ほかのツールは入っていないので、今までどおり尋ねます。"),
        say("if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true }; … if (/^(a|always)$/i.test(answer)) { if (!changesTheAgent) alwaysAllowed.add(tool.name); return { run: true }; }", "if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true }; … if (/^(a|always)$/i.test(answer)) { if (!changesTheAgent) alwaysAllowed.add(tool.name); return { run: true }; }"),
      ],
      async check(t) {
        const stage = await inMode(t, "default");
        t.write("a.txt", "1\n");
        const you = person(t, ["a", "n"]);
        const edit = (from: string, to: string) => use("edit_file", { path: "a.txt", old_string: from, new_string: to });
        const first = await runTool(t, edit("1", "2"), { stage });
        if (first.result.is_error || t.read("a.txt") !== "2\n") t.fail(say(`after "a", edit_file answered ${quote(first.text)} and a.txt holds ${quote(t.read("a.txt"))}`, `"a" のあと、edit_file は ${quote(first.text)} と答え、a.txt は ${quote(t.read("a.txt"))} でした`));
        const second = await runTool(t, edit("2", "3"), { stage });
        if (you.asked() > 1) t.fail(say(`after the person answered "a" for edit_file, the next edit_file asked again${second.result.is_error ? ` (and was refused: ${quote(second.text)})` : ""}`, `人が edit_file に「a」と答えたのに、次の edit_file でまた尋ねました${second.result.is_error ? `（そして拒否されました: ${quote(second.text)}）` : ""}`));
        mustRun(t, 'the edit_file after "a"', second.result, second.text);
        if (t.read("a.txt") !== "3\n") t.fail(say(`the edit_file after "a" left a.txt holding ${quote(t.read("a.txt"))}`, `「a」のあとの edit_file で、a.txt は ${quote(t.read("a.txt"))} のままでした`));
        const command = await runTool(t, use("bash", { command: "touch ran.txt" }), { stage });
        if (you.asked() < 2 || t.read("ran.txt") !== undefined) {
          t.fail(say(`"a" for edit_file let bash run without asking (it answered ${quote(command.text)})`, `edit_file への「a」で、bash まで尋ねずに動きました（答えは ${quote(command.text)}）`), say("bash asks, and is refused after the person's n", "bash は尋ね、人の n で拒否される"));
        }
        mustFail(t, 'bash after the person\'s "n"', command.result, command.text);
      },
    },
    {
      id: "plan",
      title: say("In plan mode an edit or a command is refused without asking, and the model is told it is plan mode; reading still goes ahead", "plan モードでは、編集やコマンドは尋ねずに拒否され、plan モードだからだとモデルに伝わる。読むことはそのまま進む"),
      hints: [
        say("Plan mode is for looking before changing anything: who may change a file then, even a person who would say yes?", "plan モードは、何かを変える前に見て回るためのものです。そのとき、ファイルを変えてよいのは誰でしょう。yes と言う人がいても同じです。"),
        say("Before mustAsk and before the person: in plan mode, any tool whose kind is not read is refused, with a reason the model can act on (describe the change instead).", "mustAsk より前、人に尋ねるより前に、plan モードでは kind が read でないツールをすべて拒否します。理由はモデルが次の手を選べるように（代わりに変更を説明する）書きます。"),
        say('if (APPROVAL_MODE === "plan" && tool.kind !== "read") return { run: false, why: "Not run: the agent is in plan mode, where it may read but not change files or run commands. Describe the change instead." };', 'if (APPROVAL_MODE === "plan" && tool.kind !== "read") return { run: false, why: "Not run: the agent is in plan mode, where it may read but not change files or run commands. Describe the change instead." };'),
      ],
      async check(t) {
        const stage = await inMode(t, "plan");
        t.write("a.txt", "old\n");
        const you = person(t, ["y", "y", "y"]); // a person who would say yes to anything
        const read = await runTool(t, use("read_file", { path: "a.txt" }), { stage });
        if (read.result.is_error || read.text !== "old\n") t.fail(say(`in plan mode, read_file answered ${quote(read.text)}`, `plan モードで read_file は ${quote(read.text)} と答えました`), say("the file's text: plan mode may read", "ファイルの中身（plan モードでも読める）"));
        const calls: [string, ToolUseBlock, () => boolean][] = [
          ["edit_file", use("edit_file", { path: "a.txt", old_string: "old", new_string: "new" }), () => t.read("a.txt") !== "old\n"],
          ["write_file", use("write_file", { path: "b.txt", content: "b" }), () => t.read("b.txt") !== undefined],
          ["bash", use("bash", { command: "touch ran.txt" }), () => t.read("ran.txt") !== undefined],
        ];
        for (const [name, call, changed] of calls) {
          const answer = await runTool(t, call, { stage });
          if (changed()) t.fail(say(`in plan mode, ${name} ran${you.asked() > 0 ? " after asking the person, who said yes" : ""}`, `plan モードで ${name} が動きました${you.asked() > 0 ? "（人に尋ね、人は yes と言いました）" : ""}`));
          mustFail(t, `${name} in plan mode`, answer.result, answer.text);
          if (!/plan/i.test(answer.text)) t.fail(say(`the model was told ${quote(answer.text)}, which does not say it is plan mode`, `モデルへの結果は ${quote(answer.text)} で、plan モードだからとは書かれていません`));
        }
        if (you.asked() > 0) t.fail(say(`in plan mode the person was asked ${you.asked()} time(s)`, `plan モードなのに人に ${you.asked()} 回尋ねました`), say("refused without asking: nothing in plan mode needs a person", "尋ねずに拒否する（plan モードでは人の判断が要るものはない）"));
      },
    },
    {
      id: "auto-edit",
      title: say("In auto-edit mode edits run without asking, even with no one at the terminal, and a command still asks", "auto-edit モードでは、編集は尋ねずに動き（端末に誰もいなくても）、コマンドは今までどおり尋ねる"),
      hints: [
        say("auto-edit trusts the agent with files, not with commands. Which kinds of tool need a person then?", "auto-edit は、ファイルについてはエージェントを信頼しますが、コマンドについては信頼しません。では、人が要るのはどの種類のツールでしょう。"),
        say("mustAsk decides by the tool's kind and the mode: read never asks, yolo never asks, auto-edit asks only for execute, default for edit and execute. Decide that before looking for a person.", "mustAsk はツールの kind とモードで決めます。read は尋ねず、yolo も尋ねず、auto-edit は execute だけ、default は edit と execute で尋ねます。人がいるかを見るのは、それを決めたあとです。"),
        say('if (tool.kind === "read" || APPROVAL_MODE === "yolo") return false; if (APPROVAL_MODE === "auto-edit") return tool.kind === "execute"; return true;', 'if (tool.kind === "read" || APPROVAL_MODE === "yolo") return false; if (APPROVAL_MODE === "auto-edit") return tool.kind === "execute"; return true;'),
      ],
      async check(t) {
        const stage = await inMode(t, "auto-edit");
        t.write("a.txt", "old\n");
        const stand = noOne(t);
        const edit = await runTool(t, use("edit_file", { path: "a.txt", old_string: "old", new_string: "new" }), { stage, ms: 1000, late: waitedWithNoOne("edit_file in auto-edit mode") });
        mustRun(t, "edit_file in auto-edit mode, with no one at the terminal,", edit.result, edit.text);
        const write = await runTool(t, use("write_file", { path: "b.txt", content: "b" }), { stage, ms: 1000, late: waitedWithNoOne("write_file in auto-edit mode") });
        mustRun(t, "write_file in auto-edit mode, with no one at the terminal,", write.result, write.text);
        if (t.read("a.txt") !== "new\n" || t.read("b.txt") !== "b") t.fail(say(`after the edits a.txt holds ${quote(t.read("a.txt"))} and b.txt ${quote(t.read("b.txt"))}`, `編集のあと、a.txt は ${quote(t.read("a.txt"))}、b.txt は ${quote(t.read("b.txt"))} でした`));
        if (stand.asked() > 0) t.fail(say("in auto-edit mode an edit asked the terminal", "auto-edit モードで、編集が端末に尋ねました"));
        const you = person(t, ["n"]);
        const command = await runTool(t, use("bash", { command: "touch ran.txt" }), { stage });
        if (you.asked() !== 1 || t.read("ran.txt") !== undefined) t.fail(say(`in auto-edit mode bash ran without asking (it answered ${quote(command.text)})`, `auto-edit モードで bash が尋ねずに動きました（答えは ${quote(command.text)}）`), say("bash asks, and is refused after the person's n", "bash は尋ね、人の n で拒否される"));
        mustFail(t, 'bash after the person\'s "n"', command.result, command.text);
      },
    },
    {
      id: "yolo",
      title: say("In yolo mode edits and commands run without asking, even with no one at the terminal", "yolo モードでは、編集もコマンドも尋ねずに動く（端末に誰もいなくても）"),
      hints: [
        say("yolo is for a sandbox or a script: no person is expected. What would asking, or refusing for want of a person, do there?", "yolo はサンドボックスやスクリプトのためのモードで、人がいることを前提にしません。そこで尋ねたり、人がいないからと拒否したりしたら、どうなるでしょう。"),
        say("In yolo mode mustAsk is false for every kind, and a call that need not ask runs before anyone looks for a person.", "yolo モードでは、どの kind でも mustAsk は false です。尋ねる必要のない呼び出しは、人がいるかを見るより前に実行へ進みます。"),
        say('if (tool.kind === "read" || APPROVAL_MODE === "yolo") return false;  and in approve, first: if (!mustAsk(tool) || alwaysAllowed.has(tool.name)) return { run: true };', 'if (tool.kind === "read" || APPROVAL_MODE === "yolo") return false;  そして approve の最初に: if (!mustAsk(tool) || alwaysAllowed.has(tool.name)) return { run: true };'),
      ],
      async check(t) {
        const stage = await inMode(t, "yolo");
        const stand = noOne(t);
        const write = await runTool(t, use("write_file", { path: "a.txt", content: "a" }), { stage, ms: 1000, late: waitedWithNoOne("write_file in yolo mode") });
        mustRun(t, "write_file in yolo mode, with no one at the terminal,", write.result, write.text);
        const command = await runTool(t, use("bash", { command: "touch ran.txt" }), { stage, ms: 3000, late: waitedWithNoOne("bash in yolo mode") });
        mustRun(t, "bash in yolo mode, with no one at the terminal,", command.result, command.text);
        if (t.read("a.txt") !== "a" || t.read("ran.txt") === undefined) t.fail(say("in yolo mode the write or the command did not happen", "yolo モードで、書き込みかコマンドが実行されませんでした"));
        if (stand.asked() > 0) t.fail(say("in yolo mode a call asked the terminal", "yolo モードで、呼び出しが端末に尋ねました"));
      },
    },
    {
      id: "agent-files",
      title: say(
        "A write to the agent's own files (.agent/, skills/, .mcp.json, .env) asks even in auto-edit mode, every time: \"a\" does not cover the next one; yolo still never asks",
        "エージェント自身のファイル（.agent/、skills/、.mcp.json、.env）への書き込みは、auto-edit モードでも毎回尋ねる。「a」と答えても次はまた尋ねる。yolo では今までどおり尋ねない",
      ),
      hints: [
        say("The agent reads .agent/settings.json and .mcp.json when it starts: a write there chooses what it runs next time. Who should agree to that, even in auto-edit?", "エージェントは起動時に .agent/settings.json や .mcp.json を読みます。そこへの書き込みは、次の起動で何を動かすかを決めることになります。auto-edit でも、それに同意すべきなのは誰でしょう。"),
        say("write_file and edit_file have changesTheAgent(params). When it is true (and the mode is not yolo), skip the mustAsk and alwaysAllowed shortcut, and do not add the tool to alwaysAllowed on \"a\".", "write_file と edit_file には changesTheAgent(params) があります。これが true なら（yolo でなければ）、mustAsk と alwaysAllowed による近道を飛ばし、「a」でも alwaysAllowed に足しません。"),
        say('const changesTheAgent = APPROVAL_MODE !== "yolo" && (tool.changesTheAgent?.(params) ?? false); if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };', 'const changesTheAgent = APPROVAL_MODE !== "yolo" && (tool.changesTheAgent?.(params) ?? false); if (!changesTheAgent && (!mustAsk(tool) || alwaysAllowed.has(tool.name))) return { run: true };'),
      ],
      async check(t) {
        const stage = await inMode(t, "auto-edit");
        const you = person(t, ["a", "n"]);
        const first = await runTool(t, use("write_file", { path: ".agent/settings.json", content: "{}" }), { stage });
        if (you.asked() === 0) t.fail(say(`in auto-edit mode write_file(.agent/settings.json) ran without asking (it answered ${quote(first.text)})`, `auto-edit モードで write_file(.agent/settings.json) が尋ねずに動きました（答えは ${quote(first.text)}）`), say("it asks: the agent reads that file when it starts", "尋ねる（エージェントが起動時に読むファイル）"));
        mustRun(t, 'write_file(.agent/settings.json) after the person\'s "a"', first.result, first.text);
        const second = await runTool(t, use("write_file", { path: ".mcp.json", content: "{}" }), { stage });
        if (you.asked() < 2 || t.read(".mcp.json") !== undefined) t.fail(say(`after "a" for write_file(.agent/settings.json), write_file(.mcp.json) ran without asking (it answered ${quote(second.text)})`, `write_file(.agent/settings.json) に「a」と答えたあと、write_file(.mcp.json) が尋ねずに動きました（答えは ${quote(second.text)}）`), say('it asks again ("a" never covers the agent\'s own files), and is refused after the person\'s n', "また尋ね（「a」はエージェント自身のファイルには及ばない）、人の n で拒否される"));
        const plain = await runTool(t, use("write_file", { path: "notes.txt", content: "n" }), { stage, ms: 1000, late: waitedWithNoOne("write_file(notes.txt) in auto-edit mode") });
        mustRun(t, "write_file(notes.txt) in auto-edit mode", plain.result, plain.text);
        if (you.asked() > 2) t.fail(say("in auto-edit mode write_file(notes.txt), an ordinary file, asked the person", "auto-edit モードで、ふつうのファイルへの write_file(notes.txt) が人に尋ねました"));
        const yolo = await inMode(t, "yolo");
        const stand = noOne(t);
        const wild = await runTool(t, use("write_file", { path: ".agent/settings.json", content: "{ }" }), { stage: yolo, ms: 1000, late: waitedWithNoOne("write_file(.agent/settings.json) in yolo mode") });
        mustRun(t, "write_file(.agent/settings.json) in yolo mode, with no one at the terminal,", wild.result, wild.text);
        if (stand.asked() > 0) t.fail(say("in yolo mode write_file(.agent/settings.json) asked the terminal", "yolo モードで write_file(.agent/settings.json) が端末に尋ねました"));
      },
    },
    {
      id: "two-audiences",
      title: say("The model gets llmContent and the person sees returnDisplay: an edit gives the model one line and shows the person the diff; a read gives the model the text and shows the person what was read", "モデルには llmContent、人には returnDisplay。編集ならモデルには 1 行、人には差分。読むならモデルには中身、人には何を読んだか"),
      hints: [
        say("A tool's result has two parts for two readers.", "ツールの結果には、2 人の読み手のための 2 つの部分があります。"),
        say("result.llmContent goes in the tool_result; result.returnDisplay is printed (unless the person has just seen it, approving it).", "result.llmContent は tool_result に入れ、result.returnDisplay は表示します（承認のときに人がもう見たものなら、繰り返しません）。"),
        say('console.log(indent(result.returnDisplay)); return { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent, MAX_OUTPUT) };', 'console.log(indent(result.returnDisplay)); return { type: "tool_result", tool_use_id: call.id, content: clip(result.llmContent, MAX_OUTPUT) };'),
      ],
      async check(t) {
        const stage = await inMode(t, "default");
        t.write("app.js", "export const debug = true;\n");
        const seen = person(t, ["y"]);
        const { result, text } = await runTool(t, use("edit_file", { path: "app.js", old_string: "debug = true", new_string: "debug = false" }), { stage });
        if (result.is_error || text.includes("\n") || !text.includes("app.js")) {
          t.fail(say(`the model got ${quote(text)}`, `モデルへの結果は ${quote(text)} でした`), say("one line saying app.js was edited (llmContent)", "app.js を編集したと伝える 1 行（llmContent）"));
        }
        if (!seen.screen().includes("+export const debug = false;")) t.fail(say("the person never saw the diff's +export const debug = false; line (returnDisplay or the question)", "人は差分の +export const debug = false; の行を見ていません（returnDisplay か確認の質問）"));
        // read_file's two parts, from the tool itself: the text for the model, a line for the person.
        const parts = await stage.registry.getTool("read_file")!.execute({ path: "app.js" }, new AbortController().signal);
        const read = await runTool(t, use("read_file", { path: "app.js" }), { stage });
        if (read.result.is_error || read.text !== parts.llmContent) t.fail(say(`read_file gave the model ${quote(read.text)}`, `read_file がモデルに渡したのは ${quote(read.text)} でした`), say(`the file's text (llmContent), ${quote(parts.llmContent)}`, `ファイルの中身（llmContent）${quote(parts.llmContent)}`));
        if (!seen.screen().includes(parts.returnDisplay)) t.fail(say(`the person never saw read_file's returnDisplay, ${quote(parts.returnDisplay)}`, `人は read_file の returnDisplay（${quote(parts.returnDisplay)}）を見ていません`));
      },
    },
    {
      id: "in-order",
      title: say("The results of one reply go back in the order of its calls, each with its call's id, even when reads side by side finish in another order", "1 つの返事の結果は、呼び出しの順に、それぞれの呼び出しの id を付けて返る。並んで動いた読み取りが別の順に終わっても同じ"),
      hints: [
        say("runTools (given) runs reads side by side. The model matches each result to its call by id, and the API wants them in the order of the calls.", "runTools（用意済み）は読み取りを並べて動かします。モデルは id で結果と呼び出しを結びつけ、API は呼び出しの順に結果が並ぶことを求めます。"),
        say("Every result your runTool returns, errors included, carries tool_use_id: call.id of the call it was given; runTools keeps the order with Promise.all, which gives the results in the order of the calls, whatever finishes first.", "runTool が返す結果は、エラーも含めて、渡された呼び出しの tool_use_id: call.id を持ちます。runTools は Promise.all で順序を保ちます。どれが先に終わっても、結果は呼び出しの順に並びます。"),
        say("for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));", "for (const batch of batches(calls)) results.push(...(await Promise.all(batch.map(runTool))));"),
      ],
      async check(t) {
        // A read of the check's own that takes the time it is given: the first call finishes last.
        const stage = t.stage as unknown as Stage;
        stage.registry.registerTool({
          name: "slow_read",
          displayName: "SlowRead",
          description: "answers with its text after ms milliseconds",
          kind: "read",
          parameterSchema: { type: "object", properties: { text: { type: "string" }, ms: { type: "integer" } } },
          validateToolParams: () => null,
          getDescription: () => "slow read",
          shouldConfirmExecute: async () => false,
          execute: async (params: { text: string; ms: number }) => {
            await new Promise((resolve) => setTimeout(resolve, params.ms));
            return { llmContent: params.text, returnDisplay: params.text };
          },
        });
        t.cleanup(() => stage.registry.unregisterTool("slow_read"));
        t.write("notes.txt", "the notes");
        const calls = [
          { id: "toolu_s06_slow", name: "slow_read", input: { text: "slow, asked first", ms: 300 } },
          { id: "toolu_s06_fast", name: "slow_read", input: { text: "fast, asked second", ms: 0 } },
          { id: "toolu_s06_read", name: "read_file", input: { path: "notes.txt" } },
          { id: "toolu_s06_none", name: "teleport", input: {} },
        ];
        const session = await t.replay(scenarioOf([reply.tools(calls), reply.text("Done.")]));
        const results = toolResults(session.requests, 1);
        const got = results.map((result) => result.tool_use_id);
        if (got.join() !== calls.map((call) => call.id).join()) {
          t.fail(say(`the results went back for ${quote(got)}`, `結果は ${quote(got)} の順で返りました`), say(`one result per call, in the order of the calls: ${quote(calls.map((call) => call.id))}`, `呼び出しごとに 1 つ、呼び出しの順に: ${quote(calls.map((call) => call.id))}`));
        }
        const expected = ["slow, asked first", "fast, asked second", "the notes"];
        results.slice(0, 3).forEach((result, i) => {
          if (resultText(result) !== expected[i]) t.fail(say(`the result for ${calls[i].id} was ${quote(resultText(result))}, not its own call's ${quote(expected[i])}`, `${calls[i].id} の結果が、その呼び出しの ${quote(expected[i])} ではなく ${quote(resultText(result))} でした`));
        });
        if (results[3]?.is_error !== true) t.fail(say(`the call to teleport came back without is_error: ${quote(results[3] && resultText(results[3]))}`, `teleport の呼び出しが is_error なしで返りました: ${quote(results[3] && resultText(results[3]))}`));
        t.asRecorded(session);
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
