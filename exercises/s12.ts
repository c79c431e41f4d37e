// Exercise s12: skills and memory. The load_skill and save_memory schemas, readSkills (the
// folder walk), memoryPlace, asFact, writeAtomically, readKnowledge (the text of the prompt's
// end) and the rest of s06 are given; parseSkill, load_skill's execute, proposeMemory and
// knowledge (when the workspace is read) are taken out. The checks look at what the model
// received (its system prompt, its tool results) and at the memory file in the workspace.
import { defineExercise, notWrittenIn, quote, reply, say, scenarioOf, toolResults, resultText, type CheckKit, type ReplayedSession } from "../lib/course/exercises.ts";

const MEMORY = ".agent/MEMORY.md";
const skill = (name: string, description: string, instructions: string) => `---\nname: ${name}\ndescription: ${description}\n---\n${instructions}\n`;

/** Three good skills and four bad ones; the check names which is which. */
function writeSkills(t: CheckKit): void {
  t.write("skills/changelog/SKILL.md", skill("changelog", "Add a CHANGELOG.md entry.", "STEPS-OF-CHANGELOG"));
  t.write("skills/release/SKILL.md", skill("release", "Cut a release.", "STEPS-OF-RELEASE"));
  t.write("skills/review/SKILL.md", `---\r\nname: review\r\ndescription: >-\r\n  Review a change\r\n  before it is merged.\r\n---\r\nSTEPS-OF-REVIEW\r\n`);
  t.write("skills/notes/SKILL.md", "# Notes\n\nNo frontmatter at all.\n");
  t.write("skills/broken/SKILL.md", "---\nname: broken\ndescription: [unclosed\n---\nSTEPS-OF-BROKEN\n");
  t.write("skills/nameless/SKILL.md", "---\ndescription: A skill with no name.\n---\nSTEPS-OF-NAMELESS\n");
  t.write("skills/other-folder/SKILL.md", skill("changelog", "A second changelog skill.", "STEPS-OF-IMPOSTOR"));
}

/** One prompt, the model answering at once: the request it received. */
async function firstRequest(t: CheckKit) {
  const session = await t.replay(scenarioOf([reply.text("ok")]));
  noTurnError(t, session);
  return session.requests[0];
}

function noTurnError(t: CheckKit, session: ReplayedSession): void {
  for (const error of session.turnErrors) {
    const text = error instanceof Error ? error.message : String(error);
    t.fail(say(`the turn ended with an error: ${text}`, `ターンがエラーで終わりました: ${text}`));
  }
  t.asRecorded(session);
}

/** A stub reached while reading the skills is only a warning on the screen: make it the failure. */
function stubOnScreen(t: CheckKit): void {
  const name = notWrittenIn(t.printed.join("\n"));
  if (name) throw new Error(`TODO: ${name}() is not written yet`);
}

const bullets = (text: string | undefined) => (text ?? "").split(/\r?\n/).filter((line) => /^\s*[-*+] /.test(line));
const headings = (text: string | undefined) => (text ?? "").split(/\r?\n/).filter((line) => line.startsWith("#"));

export default defineExercise({
  stage: "s12",
  title: say("Skills and memory", "スキルとメモリ"),
  mechanism: say(
    "parseSkill, load_skill, proposeMemory and knowledge: skills listed by name and loaded on demand, facts kept as bullets, both read once per session",
    "parseSkill、load_skill、proposeMemory、knowledge: 名前で一覧にして必要なときに読み込むスキルと、箇条書きで残す事実。どちらもセッションごとに1回読みます",
  ),
  minutes: 45,
  takeOut: [
    {
      function: "parseSkill",
      task: say(
        "read one SKILL.md: YAML frontmatter (the yaml package) with a name and a description, then the instructions; the name must be the folder's; throw an Error saying what is wrong with the file.",
        "SKILL.md を1つ読みます。YAML のフロントマター(yaml パッケージで解析)に name と description があり、そのあとが手順です。name はフォルダ名と同じでなければなりません。ファイルのどこが悪いかを書いた Error を throw します。",
      ),
    },
    {
      function: "loadSkillTool.execute",
      task: say(
        "return the named skill's instructions, read from disk now (readSkills()); for an unknown name, throw an error that lists the skills there are.",
        "名前で指定されたスキルの手順を、いまディスクから読んで(readSkills())返します。知らない名前なら、あるスキルの一覧を書いたエラーを throw します。",
      ),
    },
    {
      function: "proposeMemory",
      task: say(
        "the memory file with the fact added as one bullet under MEMORY_HEADING (made if missing); a fact already there (case and spacing aside) changes nothing (known); over MEMORY_LIMIT, throw saying memory is full.",
        "事実を MEMORY_HEADING の下に箇条書き1行として足したメモリファイルを作ります(見出しがなければ作ります)。すでにある事実(大文字小文字と空白の違いは無視)なら何も変えません(known)。MEMORY_LIMIT を超えるなら、メモリがいっぱいだと書いて throw します。",
      ),
    },
    {
      function: "knowledge",
      task: say(
        "the end of the system prompt: readKnowledge() read at the first request of a session (a new workspace is a new session) and kept for the rest of it.",
        "システムプロンプトの末尾です。readKnowledge() をセッションの最初のリクエストで読み(ワークスペースが変われば新しいセッション)、そのあとはずっと同じものを使います。",
      ),
    },
  ],
  requirements: [
    {
      id: "listed",
      title: say(
        "The system prompt lists each valid skill by name and description, not its instructions; a SKILL.md without frontmatter, with bad YAML, without a name, or named unlike its folder is skipped with a warning naming the file",
        "システムプロンプトには正しいスキルが名前と説明で並び、手順は入らない。フロントマターのない SKILL.md、YAML の壊れたもの、name のないもの、フォルダ名と違う name のものは、ファイル名を挙げた警告を出して飛ばす",
      ),
      hints: [
        say("The model only needs to know a skill exists and when to use it. What is the least it must see, and what if one file is broken?", "モデルが知る必要があるのは、スキルがあることと、いつ使うかだけです。最低限見せるべきものは何でしょう。1つのファイルが壊れていたら?"),
        say(
          "In parseSkill: the text must start with a line ---; the frontmatter ends at the next line ---; YAML.parse it (it throws on bad YAML); name and description must be non-empty strings, and name the folder's. Throw for each problem: readSkills turns your error into the warning.",
          "parseSkill では、テキストは --- の行で始まり、次の --- の行でフロントマターが終わります。それを YAML.parse します(壊れた YAML なら例外になります)。name と description は空でない文字列で、name はフォルダ名と同じです。問題ごとに throw すれば、readSkills がそれを警告にします。",
        ),
        say(
          "const parts = /^---\\r?\\n([\\s\\S]*?)\\r?\\n---\\r?\\n([\\s\\S]*)$/.exec(text); const meta = YAML.parse(parts[1]); if (meta.name !== folder) throw new Error(...); return { name, description, file, instructions: parts[2].trim() };",
          "const parts = /^---\\r?\\n([\\s\\S]*?)\\r?\\n---\\r?\\n([\\s\\S]*)$/.exec(text); const meta = YAML.parse(parts[1]); if (meta.name !== folder) throw new Error(...); return { name, description, file, instructions: parts[2].trim() };",
        ),
      ],
      async check(t) {
        writeSkills(t);
        const system = String((await firstRequest(t)).system ?? "");
        stubOnScreen(t);
        for (const [name, description] of [["changelog", "Add a CHANGELOG.md entry."], ["release", "Cut a release."], ["review", "Review a change before it is merged."]]) {
          const line = system.split("\n").find((candidate) => candidate.includes(name) && candidate.includes(description));
          if (!line) t.fail(say(`the system prompt does not list the skill ${name} with its description ${quote(description)}; it ends ${quote(system.slice(-600))}`, `システムプロンプトにスキル ${name} が説明 ${quote(description)} と一緒に並んでいません。末尾は ${quote(system.slice(-600))} でした`));
        }
        const leaked = ["STEPS-OF-CHANGELOG", "STEPS-OF-RELEASE", "STEPS-OF-REVIEW", "A second changelog skill", "STEPS-OF-BROKEN", "A skill with no name"].find((text) => system.includes(text));
        if (leaked) t.fail(say(`the system prompt holds ${quote(leaked)}: instructions, or a skill that should have been skipped`, `システムプロンプトに ${quote(leaked)} が入っています。手順か、飛ばすべきスキルです`));
        const screen = t.printed.join("\n");
        for (const folder of ["notes", "broken", "nameless", "other-folder"]) {
          if (!screen.includes(`skills/${folder}/SKILL.md`)) t.fail(say(`no warning names skills/${folder}/SKILL.md; the screen showed ${quote(screen)}`, `skills/${folder}/SKILL.md を挙げた警告がありません。画面は ${quote(screen)} でした`));
        }
      },
    },
    {
      id: "load-skill",
      title: say(
        "load_skill returns the skill's instructions in its result; an unknown name is an error that lists the skills there are",
        "load_skill は結果にスキルの手順を入れて返す。知らない名前はエラーになり、あるスキルの一覧を示す",
      ),
      hints: [
        say("The list in the prompt is a promise: when the model asks for a skill by name, what should it get back, and what if it misremembers the name?", "プロンプトの一覧は約束です。モデルが名前でスキルを求めたら何を返し、名前を覚え違えていたらどうしますか。"),
        say("Call readSkills() and find the skill whose name is params.name. Return its instructions as llmContent (a one-line returnDisplay for the person). Not found: throw an Error naming the skills there are; runTool makes it is_error.", "readSkills() を呼び、name が params.name のスキルを探します。手順を llmContent として返します(人向けの returnDisplay は1行)。なければ、あるスキルの名前を並べた Error を throw します。runTool が is_error にします。"),
        say(
          "const skill = readSkills().skills.find((s) => s.name === params.name); if (!skill) throw new Error(`there is no skill named ... The skills are: ${skills.map((s) => s.name).join(\", \")}.`); return { llmContent: skill.instructions, returnDisplay: `${skill.file} loaded` };",
          "const skill = readSkills().skills.find((s) => s.name === params.name); if (!skill) throw new Error(`there is no skill named ... The skills are: ${skills.map((s) => s.name).join(\", \")}.`); return { llmContent: skill.instructions, returnDisplay: `${skill.file} loaded` };",
        ),
      ],
      async check(t) {
        writeSkills(t);
        const loaded = await t.tool("load_skill")({ name: "release" });
        if (loaded.isError || !loaded.text.includes("STEPS-OF-RELEASE")) t.fail(say(`load_skill("release") answered ${quote(loaded.text)}`, `load_skill("release") の答えは ${quote(loaded.text)} でした`), say("the instructions of skills/release/SKILL.md", "skills/release/SKILL.md の手順"));
        if (loaded.text.includes("name: release")) t.fail(say(`load_skill("release") returned the frontmatter too: ${quote(loaded.text)}`, `load_skill("release") がフロントマターまで返しました: ${quote(loaded.text)}`));
        const crlf = await t.tool("load_skill")({ name: "review" });
        if (crlf.isError || !crlf.text.includes("STEPS-OF-REVIEW")) t.fail(say(`load_skill("review") (a file with CRLF line endings) answered ${quote(crlf.text)}`, `load_skill("review")(改行が CRLF のファイル)の答えは ${quote(crlf.text)} でした`));
        const unknown = await t.tool("load_skill")({ name: "deploy" });
        if (!unknown.isError) t.fail(say(`load_skill("deploy"), a skill that does not exist, was not an error: ${quote(unknown.text)}`, `存在しないスキルの load_skill("deploy") がエラーになりませんでした: ${quote(unknown.text)}`));
        const missing = ["changelog", "release", "review"].filter((name) => !unknown.text.includes(name));
        if (missing.length > 0) t.fail(say(`the error for an unknown skill does not list ${missing.join(", ")}: ${quote(unknown.text)}`, `知らないスキルのエラーに ${missing.join("、")} が挙がっていません: ${quote(unknown.text)}`));
        const impostor = await t.tool("load_skill")({ name: "changelog" });
        if (impostor.text.includes("STEPS-OF-IMPOSTOR") || !impostor.text.includes("STEPS-OF-CHANGELOG")) t.fail(say(`load_skill("changelog") answered ${quote(impostor.text)}: the skill is the one in skills/changelog/`, `load_skill("changelog") の答えは ${quote(impostor.text)} でした。スキルは skills/changelog/ にあるものです`));
      },
    },
    {
      id: "one-bullet",
      title: say(
        "save_memory adds the fact as one bullet under a heading in .agent/MEMORY.md, keeps what was there, and adds the same fact (case and spacing aside) only once; a fact with line breaks or Markdown stays one bullet",
        "save_memory は事実を .agent/MEMORY.md の見出しの下に箇条書き1行として足し、元の内容は残す。同じ事実(大文字小文字と空白の違いは無視)は1回しか足さない。改行や Markdown を含む事実も1行の箇条書きのまま",
      ),
      hints: [
        say("The file is read by every later session and by the person. What must a second save of the same fact do, and what must a fact never be able to add?", "このファイルは後のセッションすべてと、人が読みます。同じ事実をもう一度保存したら何が起きるべきでしょう。そして事実が決して足してはいけないものは?"),
        say(
          "In proposeMemory: asFact(fact) makes it one line without list or heading marks. Read the file (readMemory(place)); if a bullet's factKey equals the fact's, return it unchanged with known. Otherwise find MEMORY_HEADING (add it if missing) and insert `- fact` at the end of its section.",
          "proposeMemory では、asFact(fact) で箇条書きや見出しの記号のない1行にします。ファイルを読み(readMemory(place))、factKey が同じ箇条書きがあれば known を付けて変えずに返します。なければ MEMORY_HEADING を探し(なければ足し)、その節の終わりに `- fact` を入れます。",
        ),
        say(
          "const lines = before.split(\"\\n\"); const known = lines.map((l) => /^- (.*)$/.exec(l)?.[1]).find((b) => b !== undefined && factKey(b) === factKey(fact)); if (known !== undefined) return { ...place, before, after: before, known }; ... lines.splice(end, 0, `- ${fact}`);",
          "const lines = before.split(\"\\n\"); const known = lines.map((l) => /^- (.*)$/.exec(l)?.[1]).find((b) => b !== undefined && factKey(b) === factKey(fact)); if (known !== undefined) return { ...place, before, after: before, known }; ... lines.splice(end, 0, `- ${fact}`);",
        ),
      ],
      async check(t) {
        const save = (fact: string) => t.tool("save_memory")({ fact });
        const first = await save("Run the tests with node check.js.");
        if (first.isError) t.fail(say(`save_memory failed on an empty workspace: ${quote(first.text)}`, `空のワークスペースで save_memory が失敗しました: ${quote(first.text)}`));
        const created = t.read(MEMORY);
        if (!bullets(created).some((line) => line.includes("Run the tests with node check.js."))) t.fail(say(`${MEMORY} holds ${quote(created)}`, `${MEMORY} の中身は ${quote(created)} でした`), say("the fact as a bullet", "事実の箇条書き"));
        if (headings(created).length === 0) t.fail(say(`${MEMORY} has no heading: ${quote(created)}`, `${MEMORY} に見出しがありません: ${quote(created)}`));
        await save("  run the TESTS with   node check.js  ");
        if (bullets(t.read(MEMORY)).length !== 1) t.fail(say(`the same fact, in other case and spacing, was added again: ${quote(t.read(MEMORY))}`, `大文字小文字と空白だけが違う同じ事実が、もう一度足されました: ${quote(t.read(MEMORY))}`));
        t.write(MEMORY, "# Notes by hand\n\nKeep this line.\n");
        await save("The staging server is staging.example.test.");
        await save("Two lines\n# Not a heading\n- not a second bullet");
        const after = t.read(MEMORY) ?? "";
        if (!after.includes("Keep this line.")) t.fail(say(`what the person wrote was lost: ${quote(after)}`, `人が書いた内容が消えました: ${quote(after)}`));
        if (bullets(after).length !== 2) t.fail(say(`two facts saved, but the file has ${bullets(after).length} bullets: ${quote(after)}`, `事実を2つ保存したのに、箇条書きが ${bullets(after).length} 行あります: ${quote(after)}`));
        if (headings(after).some((line) => /not a heading/i.test(line))) t.fail(say(`a fact added a heading of its own: ${quote(after)}`, `事実が見出しを足してしまいました: ${quote(after)}`));
      },
    },
    {
      id: "memory-full",
      title: say(
        "A fact that would take .agent/MEMORY.md past 4,000 characters is refused with an error saying memory is full, and the file is unchanged",
        ".agent/MEMORY.md が 4,000 文字を超えてしまう事実は、メモリがいっぱいだと伝えるエラーで拒否され、ファイルは変わらない",
      ),
      hints: [
        say("Everything in the memory file goes into every request. What keeps it from growing for ever?", "メモリファイルの中身は、すべてのリクエストに入ります。際限なく大きくならないようにするには?"),
        say("Work out the whole new file first; if it is longer than MEMORY_LIMIT, throw an Error that says memory is full and what to do. Nothing is written, since execute writes only what proposeMemory returned.", "まず新しいファイル全体を組み立てます。MEMORY_LIMIT より長ければ、メモリがいっぱいであることと、どうすればよいかを書いた Error を throw します。execute は proposeMemory が返したものしか書かないので、何も書かれません。"),
        say("const after = `${lines.join(eol)}${eol}`; if (after.length > MEMORY_LIMIT) throw new Error(`memory is full: ... ${MEMORY_LIMIT} ...`); return { ...place, before, after };", "const after = `${lines.join(eol)}${eol}`; if (after.length > MEMORY_LIMIT) throw new Error(`memory is full: ... ${MEMORY_LIMIT} ...`); return { ...place, before, after };"),
      ],
      async check(t) {
        // Exactly 3,960 characters: a fact of 55 more does not fit, "Short." still does.
        let full = "# Memory\n\n## Saved facts\n\n";
        for (let i = 0; full.length < 3900; i++) full += `- Fact number ${String(i).padStart(2, "0")} is kept here, with some words to take room.\n`;
        full += `- The last fact${".".repeat(3960 - full.length - 17)}\n`;
        t.write(MEMORY, full);
        const answer = await t.tool("save_memory")({ fact: "One more fact, which does not fit in the file any more." });
        if (!answer.isError) t.fail(say(`a save past 4,000 characters was not refused (the file had ${full.length}): ${quote(answer.text)}`, `4,000 文字を超える保存が拒否されませんでした(ファイルは ${full.length} 文字): ${quote(answer.text)}`));
        if (!/full|4,?000|limit/i.test(answer.text)) t.fail(say(`the refusal does not say memory is full: ${quote(answer.text)}`, `拒否のエラーが、メモリがいっぱいだと伝えていません: ${quote(answer.text)}`));
        if (t.read(MEMORY) !== full) t.fail(say(`the refused save changed ${MEMORY}`, `拒否された保存で ${MEMORY} が変わりました`));
        const fits = await t.tool("save_memory")({ fact: "Short." });
        if (fits.isError) t.fail(say(`a short fact that fits was refused: ${quote(fits.text)}`, `収まる短い事実が拒否されました: ${quote(fits.text)}`));
      },
    },
    {
      id: "once-per-session",
      title: say(
        "The skills and the memory are read at the first request of a session: the same system prompt for all of it, even after a save; the next session starts with the fact",
        "スキルとメモリはセッションの最初のリクエストで読む。保存したあとも、そのセッションのシステムプロンプトは変わらない。次のセッションはその事実を持って始まる",
      ),
      hints: [
        say("If the system prompt changed in the middle of a conversation, what would the model (and the prompt cache) see? And when can the workspace be read, if a replay makes it after the program has loaded?", "会話の途中でシステムプロンプトが変わったら、モデル(とプロンプトキャッシュ)には何が見えるでしょう。また、プログラムが読み込まれたあとで再生がワークスペースを作るなら、いつ読めばよいでしょう。"),
        say("Keep what readKnowledge() returned, with the workspace it was read in. Return the kept text while the workspace is the same; read again when it differs (a new session). prepareReplay already forgets it.", "readKnowledge() が返したものを、読んだワークスペースと一緒に取っておきます。ワークスペースが同じあいだはそれを返し、違えば(新しいセッション)読み直します。prepareReplay はすでにそれを忘れるようになっています。"),
        say("if (session?.workspace !== workspace()) session = { workspace: workspace(), text: readKnowledge() }; return session.text;", "if (session?.workspace !== workspace()) session = { workspace: workspace(), text: readKnowledge() }; return session.text;"),
      ],
      async check(t) {
        const fact = "The staging server is staging.example.test.";
        const saving = await t.replay(scenarioOf([reply.tools([{ id: "toolu_save", name: "save_memory", input: { fact } }]), reply.text("Saved.")], { answers: ["y"] }));
        noTurnError(t, saving);
        const [saved] = toolResults(saving.requests, 1);
        if (!saved || saved.is_error) t.fail(say(`save_memory, approved by the person, did not save: ${quote(saved && resultText(saved))}`, `人が承認した save_memory が保存しませんでした: ${quote(saved && resultText(saved))}`));
        const [before, after] = saving.requests.map((request) => String(request.system ?? ""));
        if (before.includes(fact)) t.fail(say("the first request already held the fact, before it was saved", "保存する前の最初のリクエストに、もう事実が入っていました"));
        if (after !== before) t.fail(say("the system prompt changed in the middle of the session, after the save", "保存のあと、セッションの途中でシステムプロンプトが変わりました"));
        const next = await t.replay(scenarioOf([reply.text("It is staging.example.test.")]));
        noTurnError(t, next);
        if (!String(next.requests[0].system ?? "").includes(fact)) t.fail(say("the next session's first request does not hold the saved fact", "次のセッションの最初のリクエストに、保存した事実が入っていません"));
      },
    },
    {
      id: "demo",
      title: say(
        "Plays the stage's recorded demo: two skills listed (one skipped), the changelog skill loaded and followed, the fact saved; the next run's fixture starts from exactly that memory file",
        "ステージの記録済みデモを再生できる(スキルは2つ並び1つは飛ばされ、changelog スキルを読み込んで従い、事実を保存する)。次の実行のフィクスチャは、そのメモリファイルそのものから始まる",
      ),
      hints: [
        say("Run your copy: npx tsx workshop/s12.ts, then npm run replay -- s12 next-session for the run after it.", "コピーを動かします: npx tsx workshop/s12.ts。そのあとの実行は npm run replay -- s12 next-session で見られます。"),
        say("The demo's skills/notes/SKILL.md has no frontmatter: it must be skipped with a warning, and the model loads changelog. The saved memory file must be byte for byte the one fixtures/s12/next-session.json starts with.", "デモの skills/notes/SKILL.md にはフロントマターがないので、警告を出して飛ばします。モデルは changelog を読み込みます。保存したメモリファイルは、fixtures/s12/next-session.json が始めに置くものと1バイトも違ってはいけません。"),
        say("If the checks above pass and this one fails, compare the two memory files in the message: the heading, the blank lines and the last line break.", "ここまでのチェックが通ってこれだけ失敗するなら、メッセージの2つのメモリファイルを比べてください。見出し、空行、最後の改行です。"),
      ],
      async check(t) {
        const demo = await t.demo();
        noTurnError(t, demo);
        const system = String(demo.requests[0].system ?? "");
        if (!system.includes("changelog") || !system.includes("release")) t.fail(say(`the demo's system prompt does not list the changelog and release skills: ${quote(system.slice(-500))}`, `デモのシステムプロンプトに changelog と release のスキルが並んでいません: ${quote(system.slice(-500))}`));
        const [loaded] = toolResults(demo.requests, 1);
        if (!loaded || loaded.is_error || !resultText(loaded).includes("## Unreleased")) t.fail(say(`load_skill("changelog") gave the model ${quote(loaded && resultText(loaded))}`, `load_skill("changelog") がモデルに返したのは ${quote(loaded && resultText(loaded))} でした`));
        if (!(t.read("CHANGELOG.md") ?? "").includes("- Added: `--quiet`")) t.fail(say("CHANGELOG.md has no entry for --quiet after the demo", "デモのあと、CHANGELOG.md に --quiet の項目がありません"));
        const { loadScenario } = await import("../lib/course/scenario.ts");
        const expected = loadScenario("s12", "next-session").files?.[MEMORY];
        if (t.read(MEMORY) !== expected) t.fail(say(`after the demo ${MEMORY} holds ${quote(t.read(MEMORY))}`, `デモのあと ${MEMORY} の中身は ${quote(t.read(MEMORY))} でした`), say(`what the next run starts from: ${quote(expected)}`, `次の実行が始めに置くもの: ${quote(expected)}`));
      },
    },
  ],
});
