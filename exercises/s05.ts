// Exercise s05: ask_user, which waits for a person and never for someone who is not there.
// The schema, readOptions (the options' checks) and the terminal (lib/runtime/terminal.ts) are
// given; askUser is taken out.
import { PassThrough } from "node:stream";
import { scriptedTerminal, useTerminal, type Terminal } from "../lib/runtime/terminal.ts";
import { defineExercise, nobodyWhoHangs, quote, resultText, say, toolResults, type CheckKit } from "../lib/course/exercises.ts";

const OPTIONS = ["Delete all 3 .log files", "Delete only the older logs", "Keep everything"];

/** A person who types `lines`, one per question, and whose screen the check can read. */
function person(lines: string[]): { terminal: Terminal; screen: () => string } {
  const stream = new PassThrough();
  let shown = "";
  stream.on("data", (chunk: Buffer) => (shown += chunk.toString()));
  return { terminal: scriptedTerminal(lines, stream as unknown as NodeJS.WriteStream), screen: () => shown };
}

/** ask_user through the given terminal; fails if it has not answered within a second ("at once"). */
async function ask(t: CheckKit, terminal: Terminal, input: Record<string, unknown>, late: ReturnType<typeof say>) {
  useTerminal(terminal);
  return t.within(1000, t.tool("ask_user")(input), late);
}

const waited = say("ask_user was still waiting after 1 s", "ask_user は 1 秒たっても待ち続けていました");

export default defineExercise({
  stage: "s05",
  title: say("Asking the person", "人に尋ねる"),
  mechanism: say("askUser: ask the person and wait for the answer, and answer at once when no one is there", "askUser: 人に尋ねて答えを待ち、誰もいなければすぐに答える"),
  minutes: 25,
  takeOut: [
    {
      function: "askUser",
      task: say(
        "show the question and numbered options, read the answer from terminal() (an empty line or a number with no option is asked again); answer at once when no one is there (terminal().hasPerson) or the input ends (null).",
        "質問と番号付きの選択肢を見せ、terminal() から答えを読みます（空の行や、選択肢のない番号なら尋ね直します）。誰もいないとき（terminal().hasPerson）や入力が終わったとき（null）は、すぐに答えを返します。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the person asked with no one there (a terminal that never answers)",
      change: [["  if (!person.hasPerson) return noOneAnswered(NO_ONE_THERE);\n", ""]],
      fails: "nobody-there",
    },
    {
      name: "no one there answered with an error",
      change: [["if (!person.hasPerson) return noOneAnswered(NO_ONE_THERE);", 'if (!person.hasPerson) throw new Error("no one is at the terminal");']],
      fails: "nobody-there",
    },
    {
      name: "the answer is the option's number, not its text",
      change: [["return `The person chose option ${choice}: ${JSON.stringify(options[choice - 1])}`;", "return `The person chose option ${choice}`;"]],
      fails: "picks-option",
    },
    {
      name: "off by one: options counted from 0",
      change: [["JSON.stringify(options[choice - 1])", "JSON.stringify(options[choice])"]],
      fails: "picks-option",
    },
    {
      name: "a number that is no option's passed on as the person's words",
      change: [["if (options.length > 0 && /^\\d+$/.test(answer)) {", "if (options.length > 0 && /^\\d+$/.test(answer) && Number(answer) >= 1 && Number(answer) <= options.length) {"]],
      fails: "not-an-answer",
    },
    {
      name: "off by one: 0 taken as an option",
      change: [["if (choice >= 1 && choice <= options.length)", "if (choice >= 0 && choice <= options.length)"]],
      fails: "not-an-answer",
    },
    {
      name: "an empty line taken as an answer",
      change: [["if (answer === \"\") {", "if (answer === \"\" && false) {"]],
      fails: "not-an-answer",
    },
    {
      name: "parseInt: an answer that begins with a number taken as that option",
      change: [
        ["if (options.length > 0 && /^\\d+$/.test(answer)) {", "if (options.length > 0 && !Number.isNaN(parseInt(answer, 10))) {"],
        ["const choice = Number(answer);", "const choice = parseInt(answer, 10);"],
      ],
      fails: "own-words",
    },
    {
      name: "null (the input ended, Ctrl-C) not handled",
      change: [["    if (line === null) return noOneAnswered(NO_ANSWER);\n", ""]],
      fails: "no-answer",
    },
    {
      name: "null taken as a reason to ask again",
      change: [["if (line === null) return noOneAnswered(NO_ANSWER);", "if (line === null) continue;"]],
      fails: "no-answer",
    },
    {
      name: "the options checked by hand: the same choice twice accepted",
      change: [
        [
          "const options = readOptions(input.options);",
          [
            "const given: unknown = input.options ?? [];",
            "  if (!Array.isArray(given) || !given.every((option) => typeof option === \"string\")) throw new Error('\"options\" must be a list of strings');",
            "  if (given.length === 1 || given.length > MAX_OPTIONS) throw new Error(`\"options\" must hold 2 to ${MAX_OPTIONS} choices`);",
            "  const options = given as string[];",
          ].join("\n"),
        ],
      ],
      fails: "bad-options",
    },
    {
      name: "the options shown without their numbers",
      change: [["options.forEach((option, i) => console.log(`  ${i + 1}. ${visible(option)}`));", "options.forEach((option) => console.log(`  - ${visible(option)}`));"]],
      fails: "shows-question",
    },
  ],
  requirements: [
    {
      id: "nobody-there",
      title: say(
        "With no person at the terminal, it never waits for input: it tells the model at once that no one answered (a result, not an error)",
        "端末に人がいなければ、入力を待たない。誰も答えなかったことを、すぐにモデルに伝える（エラーではなく結果として）",
      ),
      hints: [
        say("A script, a pipe or a CI job runs the agent with no one at the keyboard. What happens if ask_user waits for a line then?", "スクリプトやパイプや CI では、キーボードの前に誰もいない状態でエージェントが動きます。そこで ask_user が1行を待ったらどうなるでしょう。"),
        say("Before asking, look at terminal().hasPerson. When it is false, return at once with a result that tells the model no one answered, so it can take the safe choice.", "尋ねる前に terminal().hasPerson を見ます。false なら、誰も答えなかったことをモデルに伝える結果をすぐに返します。モデルは安全な選択をとれます。"),
        say("const person = terminal(); if (!person.hasPerson) return \"No one answered (no person at the terminal). Decide without them, choosing the safe option.\";", "const person = terminal(); if (!person.hasPerson) return \"No one answered (no person at the terminal). Decide without them, choosing the safe option.\";"),
      ],
      async check(t) {
        const nobody = nobodyWhoHangs();
        const answer = await ask(t, nobody.terminal, { question: "Delete the logs?", options: OPTIONS }, say("with no one at the terminal, ask_user was still waiting after 1 s", "端末に誰もいないのに、ask_user は 1 秒たっても待ち続けていました"));
        if (nobody.asked() > 0) t.fail(say("ask_user asked a terminal that has no person (hasPerson is false)", "人のいない端末（hasPerson が false）に ask_user が尋ねました"));
        if (answer.isError) t.fail(say(`with no one at the terminal, ask_user failed: ${quote(answer.text)}. No one answering is an answer the model can act on, not a failure of the tool`, `端末に誰もいないとき、ask_user が失敗しました: ${quote(answer.text)}。誰も答えないことは、ツールの失敗ではなく、モデルが次の手を決められる答えです`));
        if (answer.text.trim() === "") t.fail(say("ask_user answered with nothing the model could act on", "ask_user の答えが空で、モデルが次の手を決められません"));
      },
    },
    {
      id: "picks-option",
      title: say("A number picks an option, and the model is told which option the person chose", "番号で選択肢を選べ、人が選んだ選択肢がモデルに伝わる"),
      hints: [
        say("The person sees numbered options and types 2. What should the model hear?", "人は番号付きの選択肢を見て 2 と打ちます。モデルには何を伝えるべきでしょう。"),
        say("Read a line with terminal().ask(prompt). If it is a number between 1 and the number of options, answer with that option's text: the model never saw the numbers.", "terminal().ask(prompt) で1行読みます。1 から選択肢の数までの番号なら、その選択肢のテキストで答えます。モデルには番号が見えていません。"),
        say("const line = await person.ask(\"answer> \", { fresh: true }); const choice = Number(line.trim()); if (choice >= 1 && choice <= options.length) return `The person chose option ${choice}: ${JSON.stringify(options[choice - 1])}`;", "const line = await person.ask(\"answer> \", { fresh: true }); const choice = Number(line.trim()); if (choice >= 1 && choice <= options.length) return `The person chose option ${choice}: ${JSON.stringify(options[choice - 1])}`;"),
      ],
      async check(t) {
        const you = person(["2"]);
        const answer = await ask(t, you.terminal, { question: "Delete the logs?", options: OPTIONS }, waited);
        if (answer.isError || !answer.text.includes(OPTIONS[1])) {
          t.fail(say(`the person typed 2, and the model was told ${quote(answer.text)}`, `人が 2 と打ったのに、モデルへの結果は ${quote(answer.text)} でした`), say(`a result that names option 2, ${quote(OPTIONS[1])}`, `選択肢 2（${quote(OPTIONS[1])}）を示す結果`));
        }
      },
    },
    {
      id: "not-an-answer",
      title: say(
        "An empty line, or a number that is no option's (0, or 4 when there are 3), is not an answer: the person is asked again",
        "空の行や、どの選択肢のものでもない番号（0、選択肢が3つのときの 4）は答えではない。人にもう一度尋ねる",
      ),
      hints: [
        say("The person presses Enter by mistake, or types 4 when there are three options. What did they choose?", "人がうっかり Enter を押したり、選択肢が3つなのに 4 と打ったりします。何を選んだのでしょう。"),
        say(
          "Nothing yet: say why, and ask again, in a loop that ends when a line is an option's number (1 to the number of options) or the person's own words. An empty line and a number with no option are neither.",
          "まだ何も選んでいません。理由を伝えて、もう一度尋ねます。行が選択肢の番号（1 から選択肢の数まで）か、その人自身の言葉になったら終わるループにします。空の行と、選択肢のない番号はどちらでもありません。",
        ),
        say(
          'while (true) { const line = await person.ask(ANSWER_PROMPT, { fresh: true }); ...; if (answer === "") { console.log("  (an empty line is not an answer)"); continue; } if (/^\\d+$/.test(answer)) { const choice = Number(answer); if (choice >= 1 && choice <= options.length) return ...; console.log(`  There is no option ${answer}`); continue; } ... }',
          'while (true) { const line = await person.ask(ANSWER_PROMPT, { fresh: true }); ...; if (answer === "") { console.log("  (an empty line is not an answer)"); continue; } if (/^\\d+$/.test(answer)) { const choice = Number(answer); if (choice >= 1 && choice <= options.length) return ...; console.log(`  There is no option ${answer}`); continue; } ... }',
        ),
      ],
      async check(t) {
        const typed = ["", "0", "4", "3"];
        const you = person(typed);
        const answer = await ask(t, you.terminal, { question: "Delete the logs?", options: OPTIONS }, waited);
        if (answer.isError || !answer.text.includes(OPTIONS[2])) {
          t.fail(
            say(
              `the person typed ${typed.map((line) => quote(line)).join(", then ")}, and the model was told ${quote(answer.text)}`,
              `人が ${typed.map((line) => quote(line)).join("、次に ")} と打ったのに、モデルへの結果は ${quote(answer.text)} でした`,
            ),
            say(`the first three lines are not answers, so the person is asked again until 3: a result that names option 3, ${quote(OPTIONS[2])}`, `最初の3行は答えではないので 3 まで尋ね直し、選択肢 3（${quote(OPTIONS[2])}）を示す結果`),
          );
        }
      },
    },
    {
      id: "own-words",
      title: say("An answer in the person's own words reaches the model as typed", "人が自分の言葉で書いた答えは、そのままモデルに届く"),
      hints: [
        say("Options are suggestions: the person may want something none of them says.", "選択肢は提案にすぎません。人はどれにもないことを望むかもしれません。"),
        say("Anything that is not an option's number is the person's answer (2 of them is words, not option 2): pass it on, trimmed, so the model reads exactly what they wrote.", "選択肢の番号でないものは、その人の答えです（「2 of them」は選択肢 2 ではなく言葉です）。前後の空白だけ取って、そのまま渡します。モデルは書かれたとおりに読めます。"),
        say("return `The person answered: ${JSON.stringify(line.trim())}`;", "return `The person answered: ${JSON.stringify(line.trim())}`;"),
      ],
      async check(t) {
        // The second begins with a number, and is still words, not option 2.
        for (const words of ["Only the ones from May, please", "2 of them: the two oldest"]) {
          for (const options of [OPTIONS, undefined]) {
            const you = person([words]);
            const answer = await ask(t, you.terminal, { question: "Which logs should go?", ...(options ? { options } : {}) }, waited);
            if (answer.isError || !answer.text.includes(words)) {
              t.fail(say(`the person typed ${quote(words)}, and the model was told ${quote(answer.text)}`, `人が ${quote(words)} と打ったのに、モデルへの結果は ${quote(answer.text)} でした`));
            }
          }
        }
      },
    },
    {
      id: "shows-question",
      title: say("The person sees the question and every option, numbered", "人には質問とすべての選択肢が番号付きで見える"),
      hints: [
        say("The person can only answer what they can see.", "人は、見えているものにしか答えられません。"),
        say("Print the question, then each option with its number, before reading the answer (console.log, or the prompt you give terminal().ask).", "答えを読む前に、質問を表示し、続けて選択肢を番号付きで表示します（console.log か、terminal().ask に渡すプロンプトで）。"),
        say("console.log(`\\n${question}`); options.forEach((option, i) => console.log(`  ${i + 1}. ${option}`));", "console.log(`\\n${question}`); options.forEach((option, i) => console.log(`  ${i + 1}. ${option}`));"),
      ],
      async check(t) {
        const you = person(["1"]);
        const question = "Which build logs should I delete?";
        await ask(t, you.terminal, { question, options: OPTIONS }, waited);
        const seen = `${t.printed.join("\n")}\n${you.screen()}`;
        if (!seen.includes(question)) t.fail(say(`the person never saw the question; the screen showed ${quote(seen.trim())}`, `質問が表示されていません。画面には ${quote(seen.trim())} が出ていました`));
        OPTIONS.forEach((option, i) => {
          const line = seen.split("\n").find((l) => l.includes(option));
          if (!line || !line.includes(String(i + 1))) t.fail(say(`option ${i + 1}, ${quote(option)}, was not shown with its number`, `選択肢 ${i + 1}（${quote(option)}）が番号付きで表示されていません`));
        });
      },
    },
    {
      id: "no-answer",
      title: say(
        "When the input ends or the person presses Ctrl-C (no line: null), it tells the model at once that no one answered (a result, not an error) instead of asking again",
        "入力が終わったり Ctrl-C が押されたり（行がなく null）したら、尋ね直さずに、誰も答えなかったことをすぐにモデルに伝える（エラーではなく結果として）",
      ),
      hints: [
        say("terminal().ask can give back null. What does that mean, and what if you ask again?", "terminal().ask は null を返すことがあります。それは何を意味し、もう一度尋ねたらどうなるでしょう。"),
        say("null means no one will answer: the input ended or the person pressed Ctrl-C. Asking again would get null again, for ever. Return at once, telling the model no one answered.", "null は、もう誰も答えないという意味です（入力が終わったか、Ctrl-C が押された）。尋ね直しても null が返り続けるだけです。誰も答えなかったとモデルに伝えて、すぐに返します。"),
        say("const line = await person.ask(\"answer> \", { fresh: true }); if (line === null) return \"No one answered (the input ended or the person pressed Ctrl-C). Decide without them, choosing the safe option.\";", "const line = await person.ask(\"answer> \", { fresh: true }); if (line === null) return \"No one answered (the input ended or the person pressed Ctrl-C). Decide without them, choosing the safe option.\";"),
      ],
      async check(t) {
        let asked = 0;
        const endedInput: Terminal = {
          hasPerson: true,
          // The first two questions get "no line"; a third would wait for ever.
          ask: () => (++asked <= 2 ? Promise.resolve(null) : new Promise<string | null>(() => {})),
          close() {},
        };
        const answer = await ask(t, endedInput, { question: "Delete the logs?", options: OPTIONS }, say("after the input ended, ask_user kept asking (and would wait for ever)", "入力が終わったあとも ask_user が尋ね続けていました（永遠に待つところでした）"));
        if (asked > 1) t.fail(say(`after the input ended, ask_user asked ${asked} times`, `入力が終わったあと、ask_user が ${asked} 回尋ねました`), say("one question, then an answer at once", "1回尋ねたら、すぐに答えを返す"));
        if (answer.isError) t.fail(say(`after the input ended, ask_user failed: ${quote(answer.text)}`, `入力が終わったあと、ask_user が失敗しました: ${quote(answer.text)}`), say("a result that tells the model no one answered", "誰も答えなかったことをモデルに伝える結果"));
        if (answer.text.trim() === "") t.fail(say("ask_user answered with nothing the model could act on", "ask_user の答えが空で、モデルが次の手を決められません"));
      },
    },
    {
      id: "bad-options",
      title: say("Options that are not 2 to 4 different strings get a clear error, and the person is not asked", "2〜4個の異なる文字列でない選択肢には分かりやすいエラーを返し、人には尋ねない"),
      hints: [
        say("What should a question with one option, with five, or with the same option twice, look like to the person?", "選択肢が1つだけ、5つ、あるいは同じ選択肢が2回ある質問は、人にはどう見えるべきでしょう。"),
        say("Check the input before showing anything: readOptions is written already and throws a clear error for bad options.", "何かを表示する前に入力を確かめます。readOptions はもう書いてあり、おかしな選択肢には分かりやすいエラーを throw します。"),
        say("const question = requireString(input, \"question\").trim(); const options = readOptions(input.options); // before terminal() and console.log", "const question = requireString(input, \"question\").trim(); const options = readOptions(input.options); // terminal() や console.log より前に"),
      ],
      async check(t) {
        const bad: unknown[] = [["Only one"], ["a", "b", "c", "d", "e"], "yes or no", [1, 2], ["Keep everything", "Delete the logs", "Keep everything"]];
        for (const options of bad) {
          const you = person(["1"]);
          const answer = await ask(t, you.terminal, { question: "Go ahead?", options }, waited);
          if (!answer.isError) t.fail(say(`options ${quote(options)} gave ${quote(answer.text)}, not an error`, `選択肢 ${quote(options)} でエラーではなく ${quote(answer.text)} が返りました`));
          if (you.screen().includes("1")) t.fail(say(`with options ${quote(options)} the person was asked anyway`, `選択肢が ${quote(options)} なのに、人に尋ねてしまいました`));
        }
      },
    },
    {
      id: "demo",
      title: say("Plays the stage's recorded demo: the person types 1, the model hears option 1, the logs go and src/app.js stays", "ステージの記録済みデモを再生できる（人が 1 と打ち、モデルに選択肢 1 が伝わり、ログが消えて src/app.js は残る）"),
      hints: [
        say("Run your copy: npx tsx workshop/s05.ts, and watch the question and the answer.", "コピーを動かして、質問と答えを見てみます: npx tsx workshop/s05.ts"),
        say("In the replay a recorded person types 1 at the answer prompt: your askUser must read it through terminal().ask.", "再生では、記録された人が答えのプロンプトで 1 と打ちます。askUser はそれを terminal().ask で読む必要があります。"),
        say("If the checks above pass and this one fails, read the message: it names the result or the file that differs.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを読んでください。違っている結果やファイルを示しています。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        const [answer] = toolResults(session.requests, 2);
        if (!answer || !resultText(answer).includes("Delete all 3 .log files")) {
          t.fail(say(`the person typed 1, and the model was told ${quote(answer ? resultText(answer) : "nothing")}`, `人が 1 と打ったのに、モデルへの結果は ${quote(answer ? resultText(answer) : "なし")} でした`));
        }
        if (t.read("src/app.js") === undefined) t.fail(say("src/app.js was deleted", "src/app.js が消えました"));
        const left = ["build-2024-05-01.log", "build-2024-05-02.log", "build-2024-05-03.log"].filter((log) => t.read(log) !== undefined);
        if (left.length > 0) t.fail(say(`the logs were not deleted: ${left.join(", ")}`, `ログが消えていません: ${left.join(", ")}`));
      },
    },
  ],
});
