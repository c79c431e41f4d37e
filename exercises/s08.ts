// Exercise s08: tools from a command. The settings file, MCP servers, the registry, runOutside
// (which runs a command of the settings with bash, its arguments as words of their own) and
// discoverTools are given; the command protocol is taken out: toolsFromCommand (the discovery
// command's declarations become tools), callCommandTool (a call runs the call command) and
// freeName (a name the API takes). The checks write a project's tools as two small files in
// the workspace, `cat tools.json` and `bash call.sh`, and run them as real commands.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CheckFailure, defineExercise, notWrittenIn, quote, resultText, say, toolResults, type CheckKit } from "../lib/course/exercises.ts";

type Report = { tools: string[]; problems: string[] };
type Stage = {
  discoverTools(): Promise<Report>;
  dropDiscoveredTools(): Promise<void>;
  TOOLS: { name: string; description?: string; input_schema: Record<string, unknown> }[];
  TIME_LIMITS: { discovery: number; call: number };
};

const BUILT_IN = ["bash", "read_file", "write_file", "edit_file"];
const SHOUT = { name: "shout", description: "Say the text louder.", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } };
const ECHO_CALL = 'echo "name=$1"; echo "input=$(cat)"';

/**
 * A project whose discovery command prints `declarations` and whose call command runs
 * `callScript` (with the tool's name as $1 and the arguments on stdin); then discovery, as the
 * program runs it before the first prompt. A problem that is a TODO's message fails the check
 * naming the function.
 */
async function discover(t: CheckKit, declarations: unknown, callScript = ECHO_CALL, discovery = "cat tools.json"): Promise<Report> {
  const stage = t.stage as unknown as Stage;
  t.write("tools.json", JSON.stringify(declarations));
  t.write("call.sh", `${callScript}\n`);
  const settings = { tools: { toolDiscoveryCommand: discovery, toolCallCommand: "bash call.sh" } };
  mkdirSync(path.join(t.workspace, ".agent"), { recursive: true });
  writeFileSync(path.join(t.workspace, ".agent", "settings.json"), JSON.stringify(settings));
  // The person allowed the project's commands before, in their own settings: here a home of the
  // check's own, so the learner's ~/.agent/settings.json is never read or written.
  const home = path.join(t.outside, "home");
  mkdirSync(path.join(home, ".agent"), { recursive: true });
  writeFileSync(path.join(home, ".agent", "settings.json"), JSON.stringify({ trustedProjects: { [t.workspace]: settings } }));
  const realHome = process.env.HOME;
  process.env.HOME = home;
  t.cleanup(() => (realHome === undefined ? delete process.env.HOME : (process.env.HOME = realHome)));
  t.cleanup(() => stage.dropDiscoveredTools());
  let report: Report;
  try {
    report = await t.within(10_000, stage.discoverTools(), say("discoverTools was still waiting after 10 s", "discoverTools が 10 秒たっても終わりませんでした"));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof CheckFailure || notWrittenIn(message)) throw error;
    // The program runs discovery before its first prompt: an error here means no agent at all.
    t.fail(say(`discoverTools failed with ${quote(message)}: the program would stop before its first prompt, built-in tools and all`, `discoverTools が ${quote(message)} で失敗しました。プログラムは最初のプロンプトの前に止まり、組み込みのツールも使えません`), say("every failure of a source is a problem in the report; discovery itself never fails", "発見元の失敗はすべて報告の problem になり、発見そのものは失敗しない"));
  }
  const stub = report.problems.find((problem) => notWrittenIn(problem));
  if (stub) throw new Error(stub);
  return report;
}

const names = (t: CheckKit) => (t.stage as unknown as Stage).TOOLS.map((tool) => tool.name);

export default defineExercise({
  stage: "s08",
  title: say("Tools from a command", "コマンドから来るツール"),
  mechanism: say(
    "the discovery command's declarations become tools, a call runs the call command with the arguments on stdin, and every name is one the API takes",
    "発見コマンドの宣言をツールにし、呼び出しでは呼び出しコマンドに引数を標準入力で渡し、どの名前も API が受け付けるものにする",
  ),
  minutes: 45,
  takeOut: [
    {
      function: "toolsFromCommand",
      task: say(
        "run the discovery command (runOutside, TIME_LIMITS.discovery); a non-zero exit, text that is not JSON or JSON that is not a list is a problem; each declaration that passes checkDeclaration becomes a FoundTool whose run is callCommandTool, the others are left out with their number.",
        "発見コマンドを実行します（runOutside、TIME_LIMITS.discovery）。0 以外の終了、JSON でない出力、リストでない JSON は problem です。checkDeclaration を通る宣言は、run が callCommandTool の FoundTool にし、通らないものは番号を添えて除きます。",
      ),
    },
    {
      function: "callCommandTool",
      task: say(
        "run `callCommand <name>` with runOutside: the name as an argument of its own, the params as JSON on stdin; a non-zero exit throws an Error with stderr, otherwise stdout is the result.",
        "runOutside で `callCommand <name>` を実行します。名前は独立した引数に、params は JSON にして標準入力に渡します。0 以外で終わったら標準エラーを添えた Error を throw し、そうでなければ標準出力が結果です。",
      ),
    },
    {
      function: "freeName",
      task: say(
        "turn every character other than letters, digits, _ and - into _, keep at most 64 characters, and add _2, _3, ... while the registry already has the name.",
        "英字・数字・_・- 以外の文字を _ にし、64 文字までに切り、その名前がレジストリにある間は _2、_3 … を付けます。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "a declaration without parameters left out",
      change: [["    found.tools.push({\n      ...{ wanted: name,", "    if (!parameters) {\n      found.problems.push(`declaration ${i + 1} has no parameters`);\n      continue;\n    }\n    found.tools.push({\n      ...{ wanted: name,"]],
      fails: "declarations-become-tools",
    },
    {
      name: "the declaration's description left out",
      change: [["      description: `${description}\\n(A tool of this project, found by its discovery command.)`.trim(),", "      description: \"A tool of this project, found by its discovery command.\","]],
      fails: "declarations-become-tools",
    },
    {
      name: "stdout and stderr mixed into the result",
      change: [["  const text = run.stdout || \"(no output)\";", "  const text = run.stdout + run.stderr || \"(no output)\";"]],
      fails: "call-runs-command",
    },
    {
      name: "the arguments passed as a word of the command line, not on stdin",
      change: [["runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal)", "runOutside(callCommand, [name, JSON.stringify(params)], \"\", TIME_LIMITS.call, signal)"]],
      fails: "call-runs-command",
    },
    {
      name: "a call command's non-zero exit taken as a result",
      change: [["  if (run.code !== 0) throw new Error(`${name} failed (exit code ${run.code}): ${run.stderr.trim() || run.stdout.trim() || \"no output\"}`);\n", ""]],
      fails: "call-fails",
    },
    {
      name: "a failed call's error without its stderr",
      change: [["${run.stderr.trim() || run.stdout.trim() || \"no output\"}", "${run.stdout.trim() || \"no output\"}"]],
      fails: "call-fails",
    },
    {
      name: "the name pasted into the call command's line: shell code in it runs",
      change: [["runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal)", "runOutside(`${callCommand} ${name}`, [], JSON.stringify(params), TIME_LIMITS.call, signal)"]],
      fails: "name-is-a-word",
    },
    {
      name: "the name quoted into the call command's line: $( ) and a quote in it still run",
      change: [["runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal)", "runOutside(`${callCommand} \"${name}\"`, [], JSON.stringify(params), TIME_LIMITS.call, signal)"]],
      fails: "name-is-a-word",
    },
    {
      name: "the discovery command's exit code not looked at",
      change: [["    if (run.code !== 0) throw new Error(`it exited with code ${run.code}: ${lastLine(run.stderr) || \"(nothing on stderr)\"}`);\n", ""]],
      fails: "discovery-fails",
    },
    {
      name: "a JSON object taken for the list",
      change: [["    if (!Array.isArray(declarations)) throw new Error(\"it printed JSON, but not a list of function declarations\");\n", ""]],
      fails: "discovery-fails",
    },
    {
      name: "a failing discovery takes down the built-in tools: its error escapes discoverTools",
      change: [
        ["    found.problems.push(`could not list its tools: ${(error as Error).message}`);\n    return found;", "    throw error;"],
        ["  const settle = (source: string, found: Promise<Found>) => found.catch((error: Error): Found => ({ source, tools: [], problems: [error.message] }));", "  const settle = (_source: string, found: Promise<Found>) => found;"],
      ],
      fails: "discovery-fails",
    },
    {
      name: "one bad declaration drops the ones after it",
      change: [["      found.problems.push(`declaration ${i + 1} was left out: ${placedErrors(checkDeclaration.errors ?? [], \"it\")}`);\n      continue;", "      found.problems.push(`declaration ${i + 1} was left out: ${placedErrors(checkDeclaration.errors ?? [], \"it\")}`);\n      return found;"]],
      fails: "bad-declaration",
    },
    {
      name: "declarations numbered from 0",
      change: [["`declaration ${i + 1} was left out:", "`declaration ${i} was left out:"]],
      fails: "bad-declaration",
    },
    {
      name: "the name as it came: spaces and accents and all",
      change: [["  const valid = (wanted.replace(/[^A-Za-z0-9_-]/g, \"_\") || \"_\").slice(0, 64);", "  const valid = wanted.slice(0, 64);"]],
      fails: "valid-names",
    },
    {
      name: "only spaces made into _: other characters the API refuses kept",
      change: [["wanted.replace(/[^A-Za-z0-9_-]/g, \"_\")", "wanted.replace(/ /g, \"_\")"]],
      fails: "valid-names",
    },
    {
      name: "a name collision: a found tool called bash takes the built-in tool's name",
      change: [["  for (let n = 2; registry.getTool(name); n++) name = `${valid.slice(0, 63 - String(n).length)}_${n}`;\n", ""]],
      fails: "valid-names",
    },
    {
      name: "the suffix pushes a name past 64 characters",
      change: [["name = `${valid.slice(0, 63 - String(n).length)}_${n}`", "name = `${valid}_${n}`"]],
      fails: "valid-names",
    },
  ],
  requirements: [
    {
      id: "declarations-become-tools",
      title: say(
        "Each function declaration the discovery command prints becomes a tool the model sees, with its description and its parameters as the schema",
        "発見コマンドが出力する関数宣言の1つ1つが、説明とパラメータのスキーマを持ち、モデルに見えるツールになる",
      ),
      hints: [
        say("The discovery command prints a JSON array. What does the registry need from each entry to make it a tool?", "発見コマンドは JSON の配列を出力します。それぞれの要素からツールを作るのに、レジストリには何が必要でしょう。"),
        say(
          "runOutside(discover, [], \"\", TIME_LIMITS.discovery) gives stdout; JSON.parse it, check each entry with checkDeclaration, and push a FoundTool: wanted and original are the name, the schema is parameters (or an empty object schema), run calls callCommandTool.",
          "runOutside(discover, [], \"\", TIME_LIMITS.discovery) で標準出力が得られます。JSON.parse し、各要素を checkDeclaration で確かめ、FoundTool を push します。wanted と original は名前、schema は parameters（なければ空の object のスキーマ）、run は callCommandTool を呼びます。",
        ),
        say(
          "found.tools.push({ wanted: name, original: name, origin: \"discovery command\", displayName: name, trusted: false, description, schema: parameters ?? { type: \"object\", properties: {} }, run: (params, signal) => callCommandTool(callCommand, name, params, signal) });",
          "found.tools.push({ wanted: name, original: name, origin: \"discovery command\", displayName: name, trusted: false, description, schema: parameters ?? { type: \"object\", properties: {} }, run: (params, signal) => callCommandTool(callCommand, name, params, signal) });",
        ),
      ],
      async check(t) {
        const whisper = { name: "whisper", description: "Say it quietly." };
        const report = await discover(t, [SHOUT, whisper]);
        if (report.tools.join(",") !== "shout,whisper") t.fail(say(`the tools found were ${quote(report.tools)}, and the problems ${quote(report.problems)}`, `見つかったツールは ${quote(report.tools)}、problem は ${quote(report.problems)} でした`));
        const tools = (t.stage as unknown as Stage).TOOLS;
        if (tools.map((tool) => tool.name).join(",") !== [...BUILT_IN, "shout", "whisper"].join(",")) t.fail(say(`the model sees ${quote(names(t))}`, `モデルに見えるのは ${quote(names(t))} でした`));
        const shout = tools.find((tool) => tool.name === "shout");
        if (!shout?.description?.includes(SHOUT.description)) t.fail(say(`shout's description is ${quote(shout?.description)}, without the declaration's ${quote(SHOUT.description)}`, `shout の説明は ${quote(shout?.description)} で、宣言の ${quote(SHOUT.description)} が入っていません`));
        if (JSON.stringify(shout?.input_schema) !== JSON.stringify(SHOUT.parameters)) t.fail(say(`shout's schema is ${quote(shout?.input_schema)}, not its parameters`, `shout のスキーマが parameters ではなく ${quote(shout?.input_schema)} でした`));
        const quiet = tools.find((tool) => tool.name === "whisper");
        if (quiet?.input_schema.type !== "object") t.fail(say(`a declaration with no parameters got the schema ${quote(quiet?.input_schema)}; the API needs an object schema`, `parameters のない宣言のスキーマが ${quote(quiet?.input_schema)} でした。API には object のスキーマが必要です`));
      },
    },
    {
      id: "call-runs-command",
      title: say(
        "Calling a found tool runs `toolCallCommand <name>` with the arguments as JSON on stdin, and its stdout is the result",
        "見つかったツールを呼ぶと `toolCallCommand <name>` が動き、引数は JSON で標準入力に渡り、その標準出力が結果になる",
      ),
      hints: [
        say("The call command is one program for every tool. How does it know which tool, and with what arguments?", "呼び出しコマンドは、すべてのツールで同じ1つのプログラムです。どのツールを、どんな引数で動かすのかを、どうやって知るのでしょう。"),
        say("runOutside(command, args, input, ms, signal): the tool's name goes in args, JSON.stringify(params) is the input; return stdout as both llmContent and returnDisplay.", "runOutside(command, args, input, ms, signal) の args にツール名を、input に JSON.stringify(params) を渡します。標準出力を llmContent と returnDisplay の両方で返します。"),
        say("const run = await runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal); return { llmContent: run.stdout, returnDisplay: run.stdout };", "const run = await runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal); return { llmContent: run.stdout, returnDisplay: run.stdout };"),
      ],
      async check(t) {
        // What the command says on stderr when it succeeds (a warning, progress) is not its result.
        await discover(t, [SHOUT], `${ECHO_CALL}; echo "warning: the cache is cold" >&2`);
        const answer = await t.tool("shout")({ text: "hi" });
        if (answer.isError || answer.text !== 'name=shout\ninput={"text":"hi"}\n') {
          t.fail(say(`call.sh printed its $1 and its stdin on stdout, and a warning on stderr; the model got ${quote(answer.text)}`, `call.sh は $1 と標準入力を標準出力に、警告を標準エラーに出力します。モデルへの結果は ${quote(answer.text)} でした`), say('exactly its stdout: name=shout and input={"text":"hi"}', '標準出力そのもの: name=shout と input={"text":"hi"}'));
        }
      },
    },
    {
      id: "call-fails",
      title: say("A call command that exits non-zero is an error result that carries its stderr", "0 以外で終わった呼び出しコマンドは、標準エラーを添えたエラーの結果になる"),
      hints: [
        say("The command said why it failed, on stderr. Who needs to read that?", "コマンドは失敗の理由を標準エラーに書きました。それを読む必要があるのは誰でしょう。"),
        say("runOutside gives the exit code and stderr. Throw an Error when the code is not 0: s06's runTool turns it into an is_error result with your message.", "runOutside は終了コードと標準エラーを返します。コードが 0 でなければ Error を throw します。s06 の runTool がそのメッセージで is_error の結果にします。"),
        say("if (run.code !== 0) throw new Error(`${name} failed (exit code ${run.code}): ${run.stderr.trim() || \"no output\"}`);", "if (run.code !== 0) throw new Error(`${name} failed (exit code ${run.code}): ${run.stderr.trim() || \"no output\"}`);"),
      ],
      async check(t) {
        await discover(t, [SHOUT], 'echo "half a result"; echo "the disk is full" >&2; exit 4');
        const answer = await t.tool("shout")({ text: "hi" });
        if (!answer.isError) t.fail(say(`the call command exited with 4, and the model got a plain result: ${quote(answer.text)}`, `呼び出しコマンドは 4 で終わったのに、モデルへの結果はエラーではありませんでした: ${quote(answer.text)}`));
        if (!answer.text.includes("the disk is full")) t.fail(say(`the error does not carry stderr: ${quote(answer.text)}`, `エラーに標準エラーの内容がありません: ${quote(answer.text)}`));
      },
    },
    {
      id: "name-is-a-word",
      title: say("A tool's name reaches the call command as a word of its own: a name with shell syntax in it is never run", "ツール名は独立した1語として呼び出しコマンドに届く。シェルの構文を含む名前が実行されることはない"),
      hints: [
        say("The discovery command chose the names. What if one is `x; touch injected`, and you paste it into a command line?", "名前を決めたのは発見コマンドです。もし `x; touch injected` という名前を、そのままコマンドラインに貼り込んだらどうなるでしょう。"),
        say("Never build the command line from the name. runOutside passes its args to bash as \"$@\", separate words that bash never parses.", "名前からコマンドラインを組み立てないことです。runOutside は args を bash に \"$@\" として渡します。bash が構文として読むことのない、独立した語です。"),
        say("runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal), not runOutside(`${callCommand} ${name}`, [], …)", "runOutside(callCommand, [name], JSON.stringify(params), TIME_LIMITS.call, signal)。runOutside(`${callCommand} ${name}`, [], …) ではありません"),
      ],
      async check(t) {
        // Shell code bare, in $( ), and breaking out of double quotes: quoting the name is not enough.
        const wanted = ["x; touch injected-1", "y $(touch injected-2)", 'z"; touch injected-3; echo "'];
        const report = await discover(t, wanted.map((name) => ({ name })));
        if (report.tools.length !== wanted.length) t.fail(say(`the tools ${quote(wanted)} were registered as ${quote(report.tools)}: ${quote(report.problems)}`, `ツール ${quote(wanted)} が ${quote(report.tools)} として登録されました: ${quote(report.problems)}`));
        for (const [i, name] of report.tools.entries()) {
          const answer = await t.tool(name)({});
          if (t.read(`injected-${i + 1}`) !== undefined) t.fail(say(`calling the tool named ${quote(wanted[i])} ran \`touch injected-${i + 1}\`: the name was read as shell code`, `${quote(wanted[i])} という名前のツールを呼ぶと \`touch injected-${i + 1}\` が実行されました。名前がシェルのコードとして読まれています`));
          if (!answer.text.includes(`name=${wanted[i]}\n`)) t.fail(say(`the call command did not get the tool's own name ${quote(wanted[i])} as $1: ${quote(answer.text)}`, `呼び出しコマンドの $1 がツール本来の名前 ${quote(wanted[i])} ではありませんでした: ${quote(answer.text)}`));
        }
      },
    },
    {
      id: "discovery-fails",
      title: say(
        "A discovery command that exits non-zero, prints something that is not a JSON list, or never ends is one problem in words; discovery ends and the built-in tools stay",
        "0 以外で終わる、JSON のリストでないものを出力する、終わらない、そんな発見コマンドは言葉で1つの problem になる。発見は終わり、組み込みのツールは残る",
      ),
      hints: [
        say("Someone else's command can fail in many ways. Which of them may stop the agent?", "他人のコマンドはいろいろな形で失敗します。そのうち、エージェントを止めてよいものはあるでしょうか。"),
        say("Return a Found with no tools and a problem for each way: the exit code with stderr's last line, text that JSON.parse refuses, JSON that is not an array. runOutside ends a command that outlives TIME_LIMITS.discovery by rejecting: catch that too.", "それぞれの場合に、ツールなしで problem を1つ持つ Found を返します。終了コードと標準エラーの最後の行、JSON.parse が受け付けない出力、配列でない JSON。TIME_LIMITS.discovery を過ぎたコマンドは runOutside が reject で終わらせるので、それも catch します。"),
        say("try { const run = await runOutside(discover, [], \"\", TIME_LIMITS.discovery); if (run.code !== 0) throw new Error(`it exited with code ${run.code}: ${lastLine(run.stderr)}`); … } catch (error) { found.problems.push(`could not list its tools: ${(error as Error).message}`); return found; }", "try { const run = await runOutside(discover, [], \"\", TIME_LIMITS.discovery); if (run.code !== 0) throw new Error(`it exited with code ${run.code}: ${lastLine(run.stderr)}`); … } catch (error) { found.problems.push(`could not list its tools: ${(error as Error).message}`); return found; }"),
      ],
      async check(t) {
        const stage = t.stage as unknown as Stage;
        const saved = stage.TIME_LIMITS.discovery;
        stage.TIME_LIMITS.discovery = 500;
        t.cleanup(() => void (stage.TIME_LIMITS.discovery = saved));
        const cases: [string, string, RegExp][] = [
          ["exits with code 3", "echo 'cannot read the manifest' >&2; exit 3", /cannot read the manifest/],
          ["prints text", "echo 'Usage: tools [list]'", /JSON/],
          ["prints a JSON object", `echo '{"name": "shout"}'`, /list|array/i],
          ["never ends", "sleep 30", /\S/],
        ];
        for (const [what, command, words] of cases) {
          const report = await discover(t, [], ECHO_CALL, command);
          if (report.tools.length > 0 || report.problems.length !== 1 || !words.test(report.problems[0])) {
            t.fail(say(`a discovery command that ${what} gave the tools ${quote(report.tools)} and the problems ${quote(report.problems)}`, `${what} 発見コマンドで、ツールは ${quote(report.tools)}、problem は ${quote(report.problems)} でした`), say(`no tools, and one problem that says what happened (${words})`, `ツールはなく、何が起きたかを言う problem が1つ（${words}）`));
          }
          if (names(t).join(",") !== BUILT_IN.join(",")) t.fail(say(`after a discovery command that ${what}, the model sees ${quote(names(t))}`, `${what} 発見コマンドのあと、モデルに見えるのは ${quote(names(t))} でした`));
        }
      },
    },
    {
      id: "bad-declaration",
      title: say("A declaration that is not one is left out with a problem naming its number; the others become tools", "宣言になっていないものは番号を添えた problem とともに除かれ、ほかはツールになる"),
      hints: [
        say("One broken entry in a list of ten: should the other nine be lost?", "10個のうち1つが壊れていたら、残りの9つまで失うべきでしょうか。"),
        say("Check each entry with checkDeclaration. When it fails, push a problem with the entry's number (i + 1) and placedErrors(checkDeclaration.errors ?? [], \"it\"), and go on to the next.", "各要素を checkDeclaration で確かめます。通らなければ、番号（i + 1）と placedErrors(checkDeclaration.errors ?? [], \"it\") を添えた problem を push して、次に進みます。"),
        say("for (const [i, declaration] of declarations.entries()) { if (!checkDeclaration(declaration)) { found.problems.push(`declaration ${i + 1} was left out: ${placedErrors(checkDeclaration.errors ?? [], \"it\")}`); continue; } … }", "for (const [i, declaration] of declarations.entries()) { if (!checkDeclaration(declaration)) { found.problems.push(`declaration ${i + 1} was left out: ${placedErrors(checkDeclaration.errors ?? [], \"it\")}`); continue; } … }"),
      ],
      async check(t) {
        const report = await discover(t, [{ description: "no name" }, SHOUT, { name: "listing", parameters: { type: "array" } }]);
        if (report.tools.join(",") !== "shout") t.fail(say(`the tools found were ${quote(report.tools)}`, `見つかったツールは ${quote(report.tools)} でした`), say("shout only", "shout だけ"));
        const [first, third] = report.problems;
        if (report.problems.length !== 2 || !/\b1\b/.test(first ?? "") || !/\b3\b/.test(third ?? "")) {
          t.fail(say(`the problems were ${quote(report.problems)}`, `problem は ${quote(report.problems)} でした`), say("two problems, naming declarations 1 and 3", "宣言 1 と 3 を名指しする problem が2つ"));
        }
      },
    },
    {
      id: "valid-names",
      title: say(
        "Every tool gets a name the API takes (letters, digits, _ and -, at most 64) that no other tool has, and is still called by its own name",
        "どのツールにも API が受け付け（英字・数字・_・-、64 文字まで）、ほかのツールと重ならない名前が付き、呼び出しには本来の名前が使われる",
      ),
      hints: [
        say("The API refuses a request whose tool names break its rule, and a name given twice would be ambiguous. Which names here would do that?", "API は、ツール名の規則を破るリクエストを拒否します。同じ名前が2つあれば、どちらのことか分かりません。ここでそうなる名前はどれでしょう。"),
        say("Replace what is not allowed with _, cut to 64, then add _2, _3, ... while registry.getTool(name) finds one; keep the suffix inside the 64.", "許されない文字を _ に置き換え、64 文字で切り、registry.getTool(name) が見つける間は _2、_3 … を付けます。番号を付けても 64 文字に収まるようにします。"),
        say("const valid = (wanted.replace(/[^A-Za-z0-9_-]/g, \"_\") || \"_\").slice(0, 64); let name = valid; for (let n = 2; registry.getTool(name); n++) name = `${valid.slice(0, 63 - String(n).length)}_${n}`; return name;", "const valid = (wanted.replace(/[^A-Za-z0-9_-]/g, \"_\") || \"_\").slice(0, 64); let name = valid; for (let n = 2; registry.getTool(name); n++) name = `${valid.slice(0, 63 - String(n).length)}_${n}`; return name;"),
      ],
      async check(t) {
        const long = `a${"b".repeat(70)}`;
        const report = await discover(t, [{ name: "bash" }, { name: "két szó" }, { name: "k_t_sz_" }, { name: long }, { name: `${long}c` }, { name: "read page" }]);
        const all = names(t);
        const bad = all.filter((name) => !/^[A-Za-z0-9_-]{1,64}$/.test(name));
        if (report.tools.length !== 6 || bad.length > 0 || new Set(all).size !== all.length) {
          t.fail(say(`the model sees ${quote(all)}`, `モデルに見えるのは ${quote(all)} でした`), say("all 4 built-in tools and 6 found ones, each name valid and different", "組み込み4つと見つかった6つ。どの名前も有効で、すべて異なる"));
        }
        if (all.slice(0, 4).join(",") !== BUILT_IN.join(",")) t.fail(say(`a found tool took a built-in tool's name: ${quote(all)}`, `見つかったツールが組み込みのツールの名前を奪いました: ${quote(all)}`));
        const renamed = report.tools[1];
        const answer = await t.tool(renamed)({});
        if (!answer.text.includes("name=két szó")) t.fail(say(`calling ${renamed} ran the call command with ${quote(answer.text)}, not its own name "két szó"`, `${renamed} を呼ぶと、本来の名前 "két szó" ではなく ${quote(answer.text)} で呼び出しコマンドが動きました`));
      },
    },
    {
      id: "demo",
      title: say(
        "Plays the stage's recorded demo: the project's tool bump_version is found and run, and raises the version to 1.5.0",
        "ステージの記録済みデモを再生できる（プロジェクトのツール bump_version が見つかって動き、バージョンが 1.5.0 に上がる）",
      ),
      hints: [
        say("Run your copy: npx tsx workshop/s08.ts, and read the [tools] lines before the prompt.", "コピーを動かして、プロンプトの前の [tools] の行を読みます: npx tsx workshop/s08.ts"),
        say("The demo's discovery command and call command are fixtures/s08/project-tools.mjs, run with node: list prints the declaration of bump_version, call runs it.", "デモの発見コマンドと呼び出しコマンドは fixtures/s08/project-tools.mjs を node で動かしたものです。list は bump_version の宣言を出力し、call はそれを実行します。"),
        say("If the checks above pass and this one fails, compare the message with the demo's description in fixtures/s08/demo.json.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを fixtures/s08/demo.json のデモの説明と比べてみてください。"),
      ],
      async check(t) {
        // A copy whose functions are not written yet is told so at once, before the demo starts its processes.
        await discover(t, [SHOUT]);
        t.cleanup(() => (t.stage as unknown as Stage).dropDiscoveredTools());
        const session = t.asRecorded(await t.demo());
        const offered = (session.requests[0]?.tools ?? []).map((tool) => (tool as { name: string }).name);
        // Discovery says what went wrong in a [tools] line; a TODO's message there names the function.
        const stub = t.printed.find((line) => notWrittenIn(line));
        if (stub) throw new Error(stub);
        if (!offered.includes("bump_version")) t.fail(say(`the model's first request offered ${quote(offered)}`, `モデルへの最初のリクエストにあったツールは ${quote(offered)} でした`), say("bump_version among them", "その中に bump_version"));
        const [bumped] = toolResults(session.requests, 5);
        if (!bumped || bumped.is_error || !resultText(bumped).includes("1.4.2 -> 1.5.0")) t.fail(say(`bump_version answered ${quote(bumped && resultText(bumped))}`, `bump_version の答えは ${quote(bumped && resultText(bumped))} でした`));
        const version = JSON.parse(t.read("package.json") ?? "{}").version;
        if (version !== "1.5.0") t.fail(say(`package.json says ${quote(version)} after the demo`, `デモのあと、package.json は ${quote(version)} でした`), say("1.5.0", "1.5.0"));
      },
    },
  ],
});
