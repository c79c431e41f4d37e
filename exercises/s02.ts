// Exercise s02: the dispatch map and the workspace sandbox. The file tools' handlers are
// given; their entries in TOOL_HANDLERS and safePath (with its helpers) are taken out.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { defineExercise, quote, reply, resultText, say, scenarioOf, toolResults, type CheckKit, type ToolAnswer } from "../lib/course/exercises.ts";

const SECRET = "the secret outside the workspace";

/** A file outside the workspace, and how the workspace reaches it with `..`. */
function secretOutside(t: CheckKit): { file: string; relative: string } {
  const file = path.join(t.outside, "secret.txt");
  writeFileSync(file, SECRET);
  return { file, relative: path.relative(t.workspace, file) };
}

/** Fails unless the tool refused: an error result that does not carry the secret. */
function mustRefuse(t: CheckKit, call: string, answer: ToolAnswer): void {
  if (!answer.isError || answer.text.includes(SECRET)) {
    t.fail(say(`${call} was not refused; it returned ${quote(answer.text)}`, `${call} が拒否されず、${quote(answer.text)} を返しました`));
  }
}

function mustBeUnchanged(t: CheckKit, file: string, call: string): void {
  if (readFileSync(file, "utf8") !== SECRET) t.fail(say(`${call} changed ${file}, outside the workspace`, `${call} がワークスペースの外の ${file} を書き換えました`));
}

function mustNotExist(t: CheckKit, file: string, call: string): void {
  if (existsSync(file)) t.fail(say(`${call} created ${file}, outside the workspace`, `${call} がワークスペースの外に ${file} を作りました`));
}

export default defineExercise({
  stage: "s02",
  title: say("The dispatch map and the sandbox", "ディスパッチマップとサンドボックス"),
  mechanism: say(
    "the dispatch map's file tools (TOOL_HANDLERS) and safePath with isInside, which keep every path inside the workspace",
    "ディスパッチマップのファイルツール（TOOL_HANDLERS）と、すべてのパスをワークスペースの中に留める safePath と isInside",
  ),
  minutes: 35,
  takeOut: [
    {
      entries: "TOOL_HANDLERS",
      names: ["read_file", "write_file", "edit_file"],
      task: say("map read_file, write_file and edit_file to their handlers (readFile, writeFile, editFile).", "read_file、write_file、edit_file をそれぞれのハンドラ（readFile、writeFile、editFile）に対応づけます。"),
    },
    {
      function: "safePath",
      helpers: ["followLinks", "lexists"],
      task: say(
        "return where `given` really leads, or throw if that is outside the workspace: .., absolute paths and symlinks included.",
        "`given` が実際に指す場所を返します。ワークスペースの外なら throw します（..、絶対パス、シンボリックリンクも含めて）。",
      ),
    },
    {
      // writeAtomically uses it too, to check each folder it enters.
      function: "isInside",
      task: say(
        "true when target is root itself or inside it. Compare path segments: ..notes.md is a name inside, ../notes.md is outside.",
        "target が root そのものか、その中にあれば true を返します。パスの区切りで比べます。..notes.md は中の名前で、../notes.md は外です。",
      ),
    },
  ],
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "containment by startsWith: ../<workspace>-evil/ looks inside",
      change: [["  const relative = path.relative(root, target);\n  // `..report.md` is a fine name; only a `..` segment leaves the folder.\n  return relative !== \"..\" && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);", "  return target.startsWith(root);"]],
      fails: "dotdot",
    },
    {
      name: "only a path of exactly .. counts as outside",
      change: [["return relative !== \"..\" && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);", "return relative !== \"..\" && !path.isAbsolute(relative);"]],
      fails: "dotdot",
    },
    {
      name: "every name that starts with .. counts as outside (..notes.md too)",
      change: [["return relative !== \"..\" && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);", "return !relative.startsWith(\"..\") && !path.isAbsolute(relative);"]],
      fails: "inside-paths",
    },
    {
      name: "links are not followed: the path as written is checked",
      change: [["  const real = followLinks(full, given);", "  const real = full;"]],
      fails: "symlinks",
    },
    {
      name: "the real path only when the file exists",
      change: [["  const real = followLinks(full, given);", "  const real = lexists(full) ? realpathSync(full) : full;"]],
      fails: "symlinks",
    },
    {
      name: "the absolute path is not resolved: path.join(root, given)",
      change: [["  const full = path.resolve(root, given);", "  const full = path.join(root, given);"]],
      fails: "inside-paths",
    },
    {
      name: "read_file and write_file swapped in the map",
      change: [["  read_file: readFile,\n  write_file: writeFile,", "  read_file: writeFile,\n  write_file: readFile,"]],
      fails: "dispatch",
    },
    {
      name: "edit_file left out of the map",
      change: [["  edit_file: editFile,\n", ""]],
      fails: "dispatch",
    },
  ],
  requirements: [
    {
      id: "dispatch",
      title: say("read_file, write_file and edit_file reach their handlers through the dispatch map", "read_file、write_file、edit_file がディスパッチマップを通ってそれぞれのハンドラに届く"),
      hints: [
        say("The loop finds a tool's handler by its name. Look at how runTool does it.", "ループはツールのハンドラを名前で探します。runTool がどうしているか見てみましょう。"),
        say("TOOL_HANDLERS maps each tool name the model sees (in TOOLS) to the function that runs it. The handlers for the file tools are already written.", "TOOL_HANDLERS は、モデルに見えるツール名（TOOLS にあるもの）を、それを実行する関数に対応づけます。ファイルツールのハンドラはもう書いてあります。"),
        say("Add read_file: readFile, write_file: writeFile and edit_file: editFile to TOOL_HANDLERS.", "TOOL_HANDLERS に read_file: readFile、write_file: writeFile、edit_file: editFile を足します。"),
      ],
      async check(t) {
        const session = await t.replay(
          scenarioOf([
            reply.tools([{ id: "toolu_write", name: "write_file", input: { path: "notes/todo.txt", content: "hello\n" } }]),
            reply.tools([
              { id: "toolu_read", name: "read_file", input: { path: "notes/todo.txt" } },
              { id: "toolu_edit", name: "edit_file", input: { path: "notes/todo.txt", old_text: "hello", new_text: "goodbye" } },
            ]),
            reply.text("Done."),
          ]),
        );
        const results = [...toolResults(session.requests, 1), ...toolResults(session.requests, 2)];
        for (const result of results) {
          if (result.is_error) t.fail(say(`the model was told ${quote(resultText(result))}`, `モデルへの結果は ${quote(resultText(result))} でした`));
        }
        if (results.length !== 3) t.fail(say("the loop did not answer the three file tool calls", "ループが3つのファイルツール呼び出しに答えませんでした"));
        if (resultText(results[1]) !== "hello\n") t.fail(say(`read_file returned ${quote(resultText(results[1]))}, not the file's text "hello\\n"`, `read_file がファイルの中身 "hello\\n" ではなく ${quote(resultText(results[1]))} を返しました`));
        if (t.read("notes/todo.txt") !== "goodbye\n") t.fail(say(`after write_file and edit_file, notes/todo.txt holds ${quote(t.read("notes/todo.txt") ?? "nothing")}`, `write_file と edit_file のあと、notes/todo.txt の中身は ${quote(t.read("notes/todo.txt") ?? "なし")} でした`));
      },
    },
    {
      id: "dotdot",
      title: say("A path with .. that leads out of the workspace is refused, before anything is read or written", "ワークスペースの外に出る .. を含むパスは、読み書きの前に拒否される"),
      hints: [
        say('A path from the model is a request, not a promise. Where does "../x" really point?', "モデルが渡すパスは頼みごとであって、約束ではありません。\"../x\" は実際にはどこを指すでしょう。"),
        say("Resolve the path against the workspace's real path (path.resolve), then ask whether the result is still inside: path.relative from the workspace must not begin with a .. segment.", "パスをワークスペースの実パスを基準に解決し（path.resolve）、結果がまだ中にあるかを確かめます。ワークスペースからの path.relative が .. の区切りで始まってはいけません。"),
        say(
          "const root = realpathSync(workspace()); const full = path.resolve(root, given); const rel = path.relative(root, full); if (rel === \"..\" || rel.startsWith(`..${path.sep}`)) throw new Error(`${given} is outside the workspace`);",
          "const root = realpathSync(workspace()); const full = path.resolve(root, given); const rel = path.relative(root, full); if (rel === \"..\" || rel.startsWith(`..${path.sep}`)) throw new Error(`${given} is outside the workspace`);",
        ),
      ],
      async check(t) {
        const secret = secretOutside(t);
        mkdirSync(path.join(t.workspace, "sub"));
        const read = t.tool("read_file");
        for (const given of [secret.relative, `sub/../${secret.relative}`]) mustRefuse(t, `read_file(${quote(given)})`, await read({ path: given }));
        const escaped = path.join(t.outside, "escaped.txt");
        const write = `write_file(${quote(path.relative(t.workspace, escaped))})`;
        mustRefuse(t, write, await t.tool("write_file")({ path: path.relative(t.workspace, escaped), content: "x" }));
        mustNotExist(t, escaped, write);
        const edit = `edit_file(${quote(secret.relative)})`;
        mustRefuse(t, edit, await t.tool("edit_file")({ path: secret.relative, old_text: "secret", new_text: "changed" }));
        mustBeUnchanged(t, secret.file, edit);
        // A folder beside the workspace whose name starts with the workspace's: "inside" by the
        // letters of its path (startsWith), outside by its folders.
        const sibling = `${t.workspace}-evil`;
        mkdirSync(sibling);
        writeFileSync(path.join(sibling, "secret.txt"), SECRET);
        const given = `../${path.basename(sibling)}/secret.txt`;
        mustRefuse(t, `read_file(${quote(given)})`, await read({ path: given }));
      },
    },
    {
      id: "absolute",
      title: say("An absolute path outside the workspace is refused", "ワークスペースの外を指す絶対パスは拒否される"),
      hints: [
        say("What does path.resolve do with a path that is already absolute?", "すでに絶対パスになっているものを path.resolve に渡すと、どうなるでしょう。"),
        say('path.resolve(root, "/etc/passwd") is /etc/passwd. The same inside-or-not test catches it, as long as you test the resolved path, not the text the model gave.', 'path.resolve(root, "/etc/passwd") は /etc/passwd になります。モデルが渡した文字列ではなく、解決したパスを調べていれば、同じ「中か外か」の判定で捕まえられます。'),
        say("Test path.relative(root, full): for /etc/passwd it begins with ..; a result that is itself absolute (another drive on Windows) is outside too.", "path.relative(root, full) を調べます。/etc/passwd なら .. で始まります。結果そのものが絶対パスのとき（Windows の別ドライブ）も外です。"),
      ],
      async check(t) {
        const secret = secretOutside(t);
        mustRefuse(t, `read_file(${quote(secret.file)})`, await t.tool("read_file")({ path: secret.file }));
        mustRefuse(t, 'read_file("/etc/passwd")', await t.tool("read_file")({ path: "/etc/passwd" }));
        const planted = path.join(t.outside, "planted.txt");
        const write = `write_file(${quote(planted)})`;
        mustRefuse(t, write, await t.tool("write_file")({ path: planted, content: "x" }));
        mustNotExist(t, planted, write);
      },
    },
    {
      id: "symlinks",
      title: say("A symlink in the workspace that leads outside is refused, for reading, writing and new files under it", "外を指すワークスペース内のシンボリックリンクは、読むときも書くときも、その下に新しいファイルを作るときも拒否される"),
      hints: [
        say("A path can look inside and still lead outside: a symlink in the workspace may point anywhere.", "中にあるように見えて、外に通じているパスがあります。ワークスペースの中のシンボリックリンクはどこでも指せます。"),
        say("Ask the file system where the path really goes (realpathSync) and test that place too. A file that does not exist yet has no real path: resolve the nearest part that exists, then add the rest.", "パスが実際にどこに行くかをファイルシステムに尋ね（realpathSync）、その場所も調べます。まだないファイルには実パスがないので、存在するいちばん近い部分を解決してから残りを足します。"),
        say(
          "let existing = full; const missing = []; while (!exists(existing)) { missing.unshift(path.basename(existing)); existing = path.dirname(existing); } const real = path.join(realpathSync(existing), ...missing); then test real as you test full. (lstatSync sees a dangling link as existing; realpathSync then throws: refuse it.)",
          "let existing = full; const missing = []; while (!exists(existing)) { missing.unshift(path.basename(existing)); existing = path.dirname(existing); } const real = path.join(realpathSync(existing), ...missing); として、real も full と同じように調べます。（lstatSync は行き先のないリンクも「ある」と見ます。そのとき realpathSync は throw するので、拒否します。）",
        ),
      ],
      async check(t) {
        const secret = secretOutside(t);
        symlinkSync(secret.file, path.join(t.workspace, "link.txt"));
        mustRefuse(t, 'read_file("link.txt")', await t.tool("read_file")({ path: "link.txt" }));
        mustRefuse(t, 'write_file("link.txt")', await t.tool("write_file")({ path: "link.txt", content: "overwritten" }));
        mustBeUnchanged(t, secret.file, 'write_file("link.txt")');
        symlinkSync(t.outside, path.join(t.workspace, "out"));
        mustRefuse(t, 'read_file("out/secret.txt")', await t.tool("read_file")({ path: "out/secret.txt" }));
        const planted = 'write_file("out/new/planted.txt")';
        const answer = await t.tool("write_file")({ path: "out/new/planted.txt", content: "x" });
        mustRefuse(t, planted, answer);
        mustNotExist(t, path.join(t.outside, "new"), planted);
        // The write's own last check (a folder swapped while writing) stopped it, not the sandbox:
        // safePath let a new file through a link because the file did not exist yet.
        if (/while writing/.test(answer.text)) {
          t.fail(
            say(
              `${planted} was let through by safePath (a file that does not exist yet has no real path of its own) and stopped only by the write's last check: ${quote(answer.text)}`,
              `${planted} を safePath が通してしまい（まだないファイルには自分の実パスがありません）、書き込みの最後の確認でようやく止まりました: ${quote(answer.text)}`,
            ),
          );
        }
        symlinkSync(path.join(t.outside, "not-yet.txt"), path.join(t.workspace, "dangling.txt"));
        const dangling = 'write_file("dangling.txt")';
        mustRefuse(t, dangling, await t.tool("write_file")({ path: "dangling.txt", content: "x" }));
        mustNotExist(t, path.join(t.outside, "not-yet.txt"), dangling);
      },
    },
    {
      id: "inside-paths",
      title: say(
        "Paths inside the workspace still work: nested folders, an absolute path inside, a name like ..notes.md, ~ as a plain folder name, a symlink that stays inside",
        "ワークスペースの中のパスは使える（入れ子のフォルダ、中を指す絶対パス、..notes.md のような名前、ただのフォルダ名としての ~、中に留まるシンボリックリンク）",
      ),
      hints: [
        say("A sandbox that refuses everything is safe, and of no use.", "何でも拒否するサンドボックスは安全ですが、役に立ちません。"),
        say("Test path segments, not characters: ..notes.md is an ordinary name, and only a segment that is exactly .. leads up. Return the real path for the tools to use.", "文字ではなくパスの区切りを調べます。..notes.md は普通の名前で、上に行くのはちょうど .. の区切りだけです。ツールが使う実パスを返します。"),
        say("Inside when path.relative(root, target) is \"\", or is not \"..\", does not begin with `..${path.sep}` and is not absolute. Return the resolved real path.", "path.relative(root, target) が \"\" か、\"..\" でなく `..${path.sep}` で始まらず絶対パスでもなければ中です。解決した実パスを返します。"),
      ],
      async check(t) {
        const write = t.tool("write_file");
        const read = t.tool("read_file");
        const files: [string, string][] = [
          ["src/deep/nested/file.txt", "nested"],
          [path.join(t.workspace, "absolute-inside.txt"), "absolute"],
          ["..notes.md", "dots"],
          ["~/home-looking.txt", "tilde"],
        ];
        for (const [given, content] of files) {
          const wrote = await write({ path: given, content });
          if (wrote.isError) t.fail(say(`write_file(${quote(given)}) was refused: ${quote(wrote.text)}`, `write_file(${quote(given)}) が拒否されました: ${quote(wrote.text)}`));
          const back = await read({ path: given });
          if (back.isError || back.text !== content) t.fail(say(`read_file(${quote(given)}) returned ${quote(back.text)}, not ${quote(content)}`, `read_file(${quote(given)}) が ${quote(content)} ではなく ${quote(back.text)} を返しました`));
        }
        if (t.read("absolute-inside.txt") !== "absolute") t.fail(say(`write_file(${quote(path.join(t.workspace, "absolute-inside.txt"))}) did not write that file, but somewhere else`, `write_file(${quote(path.join(t.workspace, "absolute-inside.txt"))}) がそのファイルではなく別の場所に書きました`));
        if (t.read("~/home-looking.txt") !== "tilde") t.fail(say("~/home-looking.txt was not written inside the workspace, in a folder called ~", "~/home-looking.txt がワークスペースの中の ~ という名前のフォルダに書かれていません"));
        symlinkSync("src", path.join(t.workspace, "alias"));
        const aliased = await read({ path: "alias/deep/nested/file.txt" });
        if (aliased.isError || aliased.text !== "nested") t.fail(say(`read_file through a symlink that stays inside returned ${quote(aliased.text)}`, `中に留まるシンボリックリンク経由の read_file が ${quote(aliased.text)} を返しました`));
      },
    },
    {
      id: "demo",
      title: say("Plays the stage's recorded demo: greet.mjs is written and edited, and ../secrets.txt is refused", "ステージの記録済みデモを再生できる（greet.mjs を書いて直し、../secrets.txt は拒否される）"),
      hints: [
        say("Run your copy: npx tsx workshop/s02.ts, and watch each tool result.", "コピーを動かして、ツールの結果を1つずつ見てみます: npx tsx workshop/s02.ts"),
        say("The demo writes greet.mjs, edits it, runs it with node, then asks for ../secrets.txt: the dispatch map and safePath both take part.", "デモは greet.mjs を書き、直し、node で動かし、最後に ../secrets.txt を頼みます。ディスパッチマップと safePath の両方が関わります。"),
        say("If the checks above pass and this one fails, read the message: it names the request or the file that differs from the recording.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージを読んでください。記録と違うリクエストやファイルを示しています。"),
      ],
      async check(t) {
        const session = t.asRecorded(await t.demo());
        const greet = t.read("greet.mjs") ?? "";
        if (!greet) t.fail(say("greet.mjs was not written", "greet.mjs が書かれていません"));
        if (!greet.includes("Hello, ${name}!")) t.fail(say(`greet.mjs holds ${quote(greet)}`, `greet.mjs の中身は ${quote(greet)} でした`));
        const last = toolResults(session.requests, session.requests.length - 1);
        if (last.length !== 1 || !last[0].is_error) {
          t.fail(say(`read_file("../secrets.txt") gave the model ${quote(last.map(resultText).join(" "))}, not an error`, `read_file("../secrets.txt") がエラーではなく ${quote(last.map(resultText).join(" "))} をモデルに返しました`));
        }
      },
    },
  ],
});
