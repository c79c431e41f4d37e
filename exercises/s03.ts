// Exercise s03: edit_file's unique-match rule and replace_all, with the count in the error.
// The schema, safePath, readText, writeAtomically and noMatchHint are given; editFile is taken out.
import { defineExercise, quote, say, type CheckKit, type ToolAnswer } from "../lib/course/exercises.ts";

/** Call edit_file on a file with `content`, and return the answer and the file afterwards. */
async function edit(t: CheckKit, content: string, input: Record<string, unknown>) {
  t.write("file.txt", content);
  const answer = await t.tool("edit_file")({ path: "file.txt", ...input });
  return { answer, after: t.read("file.txt") };
}

const call = (input: Record<string, unknown>) => `edit_file(${Object.entries(input).map(([k, v]) => `${k}: ${quote(v)}`).join(", ")})`;

function mustSucceed(t: CheckKit, input: Record<string, unknown>, answer: ToolAnswer): void {
  if (answer.isError) t.fail(say(`${call(input)} failed: ${quote(answer.text)}`, `${call(input)} が失敗しました: ${quote(answer.text)}`));
}

function mustRefuse(t: CheckKit, input: Record<string, unknown>, answer: ToolAnswer, before: string, after: string | undefined): void {
  if (!answer.isError) t.fail(say(`${call(input)} was not refused; it answered ${quote(answer.text)}`, `${call(input)} が拒否されず、${quote(answer.text)} と答えました`));
  if (after !== before) t.fail(say(`${call(input)} was refused, but the file changed to ${quote(after)}`, `${call(input)} は拒否されましたが、ファイルが ${quote(after)} に変わりました`));
}

function mustHold(t: CheckKit, input: Record<string, unknown>, after: string | undefined, expected: string): void {
  if (after !== expected) t.fail(say(`after ${call(input)} the file holds ${quote(after)}`, `${call(input)} のあと、ファイルの中身は ${quote(after)} でした`), say(`the file holds ${quote(expected)}`, `ファイルの中身が ${quote(expected)} になる`));
}

/** The count must appear as a number of its own: 3, not part of 3000. */
const saysCount = (text: string, count: number) => new RegExp(`(^|[^\\d])${count}([^\\d]|$)`).test(text);

export default defineExercise({
  stage: "s03",
  title: say("Precise edits", "正確な編集"),
  mechanism: say("editFile: a unique match, or replace_all, with the number of occurrences in the error", "editFile: 一意に一致するか replace_all か。エラーには出現回数を入れる"),
  minutes: 25,
  takeOut: [
    {
      function: "editFile",
      task: say(
        "replace old_string with new_string: refuse when it is empty or equal to new_string, not found, or found more than once without replace_all (say how many times); never change the file when refusing.",
        "old_string を new_string に置き換えます。old_string が空か new_string と同じとき、見つからないとき、replace_all なしで2回以上見つかったとき（何回かを伝えます）は拒否し、そのときファイルは変えません。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the first of several matches is replaced (String.replace), without asking which",
      change: [
        ["if (count > 1 && !replaceAll) {", "if (false) {"],
        ["writeAtomically(file, pieces.join(replacement), given, inWorkspace());", "writeAtomically(file, replaceAll ? pieces.join(replacement) : content.replace(find, () => replacement), given, inWorkspace());"],
      ],
      fails: "several-matches",
    },
    {
      name: "off by one: only three or more matches are refused",
      change: [["if (count > 1 && !replaceAll) {", "if (count > 2 && !replaceAll) {"]],
      fails: "several-matches",
    },
    {
      name: "the file is written before the matches are counted",
      change: [["  const count = pieces.length - 1;\n", "  const count = pieces.length - 1;\n  writeAtomically(file, content.replace(find, () => replacement), given, inWorkspace());\n"]],
      fails: "several-matches",
    },
    {
      name: "replace_all ignored: read as input.replaceAll",
      change: [["input.replace_all ?? false", "input.replaceAll ?? false"]],
      fails: "replace-all",
    },
    {
      name: "new_string given to String.replaceAll, so $& and $$ are expanded",
      change: [["pieces.join(replacement)", "content.replaceAll(find, replacement)"]],
      fails: "plain-text",
    },
    {
      name: "old_string taken as a regular expression",
      change: [["const pieces = content.split(find);", "const pieces = content.split(new RegExp(find));"]],
      fails: "plain-text",
    },
    {
      name: "count off by one: split's length taken as the number of matches",
      change: [["const count = pieces.length - 1;", "const count = pieces.length;"]],
      fails: "unique-match",
    },
    {
      name: "old_string equal to new_string accepted",
      change: [['  if (oldString === newString) throw new Error("old_string and new_string are the same, so there is nothing to change");\n', ""]],
      fails: "bad-input",
    },
    {
      name: "an empty old_string accepted",
      change: [['  if (oldString === "") throw new Error("old_string is empty; to write a whole file use write_file");\n', ""]],
      fails: "bad-input",
    },
    {
      name: "an old_string that is not there counts as done",
      change: [["if (count === 0) throw new Error(`old_string was not found in ${given}: ${noMatchHint(content, find, crlf)}. The file is unchanged`);", "if (count === 0) return `Nothing to change: old_string is not in ${given}`;"]],
      fails: "not-found",
    },
    {
      name: "old_string trimmed before it is looked for",
      change: [['const find = crlf ? oldString.replace(/\\r?\\n/g, "\\r\\n") : oldString;', 'const find = crlf ? oldString.replace(/\\r?\\n/g, "\\r\\n") : oldString.trim();']],
      fails: "not-found",
    },
  ],
  requirements: [
    {
      id: "unique-match",
      title: say("An old_string found exactly once is replaced, and the rest of the file stays as it was", "ちょうど1回だけ見つかった old_string は置き換えられ、ほかの部分はそのまま残る"),
      hints: [
        say("Find old_string in the file, as plain text, and write the file back with new_string in its place.", "ファイルの中から old_string をただの文字列として探し、その場所を new_string にしてファイルを書き戻します。"),
        say("Read the file through safePath and readText, make the new content, and write it with writeAtomically; the helpers are in the file already.", "safePath と readText でファイルを読み、新しい中身を作って writeAtomically で書きます。どれもファイルにもうあります。"),
        say("const pieces = content.split(oldString); ... writeAtomically(file, pieces.join(newString), given); return `Edited ${given}: replaced 1 occurrence`;", "const pieces = content.split(oldString); ... writeAtomically(file, pieces.join(newString), given); return `Edited ${given}: replaced 1 occurrence`;"),
      ],
      async check(t) {
        const input = { old_string: "beta", new_string: "BETA" };
        const { answer, after } = await edit(t, "alpha\nbeta\ngamma\n", input);
        mustSucceed(t, input, answer);
        mustHold(t, input, after, "alpha\nBETA\ngamma\n");
      },
    },
    {
      id: "several-matches",
      title: say(
        "An old_string found more than once is refused without replace_all, the error says how many times it occurs, and the file is unchanged",
        "2回以上見つかった old_string は、replace_all がなければ拒否され、エラーに出現回数が書かれ、ファイルは変わらない",
      ),
      hints: [
        say("If old_string occurs twice, which one did the model mean? Do not guess.", "old_string が2回出てくるなら、モデルが指したのはどちらでしょう。当て推量はしません。"),
        say("Count the occurrences before changing anything. More than one without replace_all: throw an error that gives the count, so the model can add context or set replace_all.", "何かを変える前に出現回数を数えます。replace_all なしで2回以上なら、回数を書いたエラーを throw します。モデルは前後の行を足すか replace_all を付けて、やり直せます。"),
        say("const count = content.split(oldString).length - 1; if (count > 1 && !replaceAll) throw new Error(`old_string occurs ${count} times in ${given}; include more context or set replace_all`);", "const count = content.split(oldString).length - 1; if (count > 1 && !replaceAll) throw new Error(`old_string occurs ${count} times in ${given}; include more context or set replace_all`);"),
      ],
      async check(t) {
        for (const [content, count] of [["timeout: 3000\nretry: 1\ntimeout: 3000\n", 2], ["x = 1\nx = 1\ny = 2\nx = 1\n", 3]] as const) {
          const input = { old_string: content.split("\n")[0], new_string: "changed" };
          const { answer, after } = await edit(t, content, input);
          mustRefuse(t, input, answer, content, after);
          if (!saysCount(answer.text, count)) {
            t.fail(say(`the error does not say how many times (${count}): ${quote(answer.text)}`, `エラーに出現回数（${count}）が書かれていません: ${quote(answer.text)}`));
          }
        }
      },
    },
    {
      id: "replace-all",
      title: say("With replace_all: true every occurrence is replaced, and the result says how many", "replace_all: true なら、すべての出現が置き換えられ、結果に何か所かが書かれる"),
      hints: [
        say("replace_all is the model saying: yes, all of them.", "replace_all は、モデルの「はい、全部です」という返事です。"),
        say("When replace_all is true, replace every occurrence at once and report the count, so the model can check it changed what it meant to.", "replace_all が true なら、すべての出現を一度に置き換えて、その数を返します。モデルは意図したとおりに変わったかを確かめられます。"),
        say("writeAtomically(file, pieces.join(newString), given); return `Edited ${given}: replaced ${count} occurrence${count === 1 ? \"\" : \"s\"}`;", "writeAtomically(file, pieces.join(newString), given); return `Edited ${given}: replaced ${count} occurrence${count === 1 ? \"\" : \"s\"}`;"),
      ],
      async check(t) {
        const input = { old_string: "retries", new_string: "maxRetries", replace_all: true };
        const { answer, after } = await edit(t, "retries: 2\n// retries are counted\nconst n = retries;\n", input);
        mustSucceed(t, input, answer);
        mustHold(t, input, after, "maxRetries: 2\n// maxRetries are counted\nconst n = maxRetries;\n");
        if (!saysCount(answer.text, 3)) t.fail(say(`the result does not say how many were replaced (3): ${quote(answer.text)}`, `結果に置き換えた数（3）が書かれていません: ${quote(answer.text)}`));
        const once = { old_string: "only", new_string: "just", replace_all: true };
        const single = await edit(t, "the only one\n", once);
        mustSucceed(t, once, single.answer);
        mustHold(t, once, single.after, "the just one\n");
      },
    },
    {
      id: "not-found",
      title: say("An old_string that is not in the file is refused, and the file is unchanged", "ファイルにない old_string は拒否され、ファイルは変わらない"),
      hints: [
        say("What should the model hear when the text it quoted is not there?", "モデルが引用したテキストがファイルになかったら、モデルには何を伝えるべきでしょう。"),
        say("Zero occurrences is an error, not a success that changed nothing: throw, and say how to do better (noMatchHint gives the usual reasons).", "出現0回は「何も変えずに成功」ではなくエラーです。throw して、どうすればよいかを伝えます（よくある原因は noMatchHint が返します）。"),
        say("if (count === 0) throw new Error(`old_string was not found in ${given}: ${noMatchHint(content, oldString, crlf)}. The file is unchanged`);", "if (count === 0) throw new Error(`old_string was not found in ${given}: ${noMatchHint(content, oldString, crlf)}. The file is unchanged`);"),
      ],
      async check(t) {
        for (const old_string of ["delta", "  beta"]) {
          const input = { old_string, new_string: "x" };
          const { answer, after } = await edit(t, "alpha\nbeta\n", input);
          mustRefuse(t, input, answer, "alpha\nbeta\n", after);
        }
      },
    },
    {
      id: "plain-text",
      title: say("old_string and new_string are plain text: no pattern characters, no $ replacements", "old_string と new_string はただの文字列（パターン文字も $ の置換もない）"),
      hints: [
        say("What does String.replace do with a \"$&\" in its replacement? And what does a regular expression do with a \".\"?", "String.replace は置換文字列の \"$&\" をどう扱うでしょう。正規表現は \".\" をどう扱うでしょう。"),
        say("Search with split or indexOf, which take text as text, and build the result with join or slices, never with String.replace.", "検索には文字列をそのまま扱う split や indexOf を使い、結果は join やスライスで組み立てます。String.replace は使いません。"),
        say("const pieces = content.split(oldString); const count = pieces.length - 1; ... pieces.join(newString)", "const pieces = content.split(oldString); const count = pieces.length - 1; ... pieces.join(newString)"),
      ],
      async check(t) {
        const input = { old_string: "a.b(1)", new_string: "$&-$1-$$" };
        const { answer, after } = await edit(t, "a.b(1)\naxb(1)\n", input);
        mustSucceed(t, input, answer);
        mustHold(t, input, after, "$&-$1-$$\naxb(1)\n");
      },
    },
    {
      id: "bad-input",
      title: say(
        "Bad input gets a clear error and changes nothing: an empty old_string (with or without replace_all), an old_string equal to new_string, a missing file, a path outside the workspace",
        "おかしな入力には分かりやすいエラーを返し、何も変えない（空の old_string（replace_all の有無を問わず）、new_string と同じ old_string、存在しないファイル、ワークスペースの外のパス）",
      ),
      hints: [
        say("What does \"abc\".split(\"\") give, and what would replace_all then do to the file?", "\"abc\".split(\"\") は何を返すでしょう。そのとき replace_all はファイルをどうしてしまうでしょう。"),
        say("Check the input before touching the file: an empty old_string is an error (to write a whole file there is write_file), and so is an old_string equal to new_string (nothing would change, so the model has made a mistake). Go through safePath and readText, which already refuse what is outside or missing.", "ファイルに触る前に入力を確かめます。空の old_string はエラーです（ファイル全体を書くなら write_file があります）。new_string と同じ old_string もエラーです（何も変わらないので、モデルが何か間違えています）。外のパスやないファイルは safePath と readText がもう拒否してくれるので、必ずそれらを通します。"),
        say("if (oldString === \"\") throw new Error(\"old_string is empty; to write a whole file use write_file\"); if (oldString === newString) throw new Error(\"old_string and new_string are the same, so there is nothing to change\"); const file = safePath(given); const content = readText(file, given);", "if (oldString === \"\") throw new Error(\"old_string is empty; to write a whole file use write_file\"); if (oldString === newString) throw new Error(\"old_string and new_string are the same, so there is nothing to change\"); const file = safePath(given); const content = readText(file, given);"),
      ],
      async check(t) {
        for (const extra of [{}, { replace_all: true }]) {
          const input = { old_string: "", new_string: "x", ...extra };
          const { answer, after } = await edit(t, "abc\n", input);
          mustRefuse(t, input, answer, "abc\n", after);
        }
        // Nothing would change: the model has made a mistake, and a success would hide it.
        for (const extra of [{}, { replace_all: true }]) {
          const input = { old_string: "b", new_string: "b", ...extra };
          const { answer, after } = await edit(t, "abc\n", input);
          mustRefuse(t, input, answer, "abc\n", after);
        }
        const missing = await t.tool("edit_file")({ path: "no-such-file.txt", old_string: "a", new_string: "b" });
        if (!missing.isError) t.fail(say(`editing a file that does not exist answered ${quote(missing.text)}`, `存在しないファイルの編集が ${quote(missing.text)} と答えました`));
        if (t.read("no-such-file.txt") !== undefined) t.fail(say("editing a file that does not exist created it", "存在しないファイルの編集で、そのファイルができてしまいました"));
        t.write("../outside/secret.txt", "secret");
        const outside = await t.tool("edit_file")({ path: "../outside/secret.txt", old_string: "secret", new_string: "changed" });
        if (!outside.isError || t.read("../outside/secret.txt") !== "secret") {
          t.fail(say(`edit_file on ../outside/secret.txt was not refused: ${quote(outside.text)}`, `../outside/secret.txt への edit_file が拒否されませんでした: ${quote(outside.text)}`));
        }
      },
    },
    {
      id: "demo",
      title: say(
        "Plays the stage's recorded demo: only the API timeout becomes 10000, and retries becomes maxRetries everywhere in src/",
        "ステージの記録済みデモを再生できる（API のタイムアウトだけが 10000 になり、src/ の retries がすべて maxRetries になる）",
      ),
      hints: [
        say("Run your copy: npx tsx workshop/s03.ts, and read each edit_file result.", "コピーを動かして、edit_file の結果を1つずつ読んでみます: npx tsx workshop/s03.ts"),
        say("In the demo the model's first edit matches twice (the API and the database timeouts). It must be refused, or the database timeout changes too.", "デモでモデルが最初に試す編集は2か所に一致します（API とデータベースのタイムアウト）。これが拒否されないと、データベースのタイムアウトまで変わってしまいます。"),
        say("If the checks above pass and this one fails, compare the files the message names with the demo's description in fixtures/s03/demo.json.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージにあるファイルを fixtures/s03/demo.json のデモの説明と比べてみてください。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        const config = t.read("src/config.js") ?? "";
        const expected = [
          'api: { baseUrl: "https://api.example.com", timeout: 10000, maxRetries: 2 }',
          'db: { host: "localhost", timeout: 3000, maxRetries: 5 }',
        ];
        for (const line of expected) {
          if (!config.includes(line)) t.fail(say(`src/config.js has no line ${quote(line)}; it holds ${quote(config)}`, `src/config.js に ${quote(line)} の行がありません。中身は ${quote(config)} でした`));
        }
        for (const file of ["src/api.js", "src/db.js"]) {
          if (/\bretries\b/.test(t.read(file) ?? "")) t.fail(say(`${file} still says retries`, `${file} に retries が残っています`));
        }
      },
    },
  ],
});
