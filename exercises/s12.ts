// Exercise s12: skills and memory. The load_skill and save_memory schemas, readSkills (the
// folder walk), memoryPlace, asFact, writeAtomically, readKnowledge (the text of the prompt's
// end) and the rest of s06 are given; parseSkill, load_skill's execute, proposeMemory and
// knowledge (when the workspace is read) are taken out. The checks look at what the model
// received (its system prompt, its tool results) and at the memory file in the workspace, or in
// a home folder of the check's own for a global fact.
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
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
  // Valid YAML, but far more than a name, a description and a few keys: never parsed.
  const keys = Array.from({ length: 600 }, (_, i) => `key_${i}: a value`).join("\n");
  t.write("skills/huge/SKILL.md", `---\nname: huge\ndescription: A frontmatter of 600 keys.\n${keys}\n---\nSTEPS-OF-HUGE\n`);
  // Two ways out of the workspace: a skill folder that is a link, and a SKILL.md that is one.
  mkdirSync(path.join(t.outside, "linked"));
  writeFileSync(path.join(t.outside, "linked", "SKILL.md"), skill("linked", "A skill from outside the workspace.", "STEPS-OF-OUTSIDE"));
  symlinkSync(path.join(t.outside, "linked"), path.join(t.workspace, "skills", "linked"));
  writeFileSync(path.join(t.outside, "sneaky.md"), skill("sneaky", "A SKILL.md from outside the workspace.", "STEPS-OF-SNEAKY"));
  mkdirSync(path.join(t.workspace, "skills", "sneaky"));
  symlinkSync(path.join(t.outside, "sneaky.md"), path.join(t.workspace, "skills", "sneaky", "SKILL.md"));
  // A good SKILL.md in the workspace, but not under skills/: no skill, whatever a name says.
  t.write("elsewhere/SKILL.md", skill("elsewhere", "Not in the skills folder.", "STEPS-OF-ELSEWHERE"));
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
        "read one SKILL.md: YAML frontmatter (the yaml package) of at most MAX_FRONTMATTER characters, with a name and a description, then the instructions; the name must be the folder's; throw an Error saying what is wrong with the file.",
        "SKILL.md を1つ読みます。YAML のフロントマター(yaml パッケージで解析。長さは MAX_FRONTMATTER 文字まで)に name と description があり、そのあとが手順です。name はフォルダ名と同じでなければなりません。ファイルのどこが悪いかを書いた Error を throw します。",
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
  // What learners really write, and the check that must refuse it (npm run verify:all proves it).
  wrong: [
    {
      name: "the name taken from the folder: the frontmatter's name is never read",
      change: [["const { name, description } = meta as Record<string, unknown>;", "const { description } = meta as Record<string, unknown>;\n  const name: unknown = folder;"]],
      fails: "listed",
    },
    {
      name: "the name taken from the frontmatter, never compared with the folder's",
      change: [["  if (name !== folder) throw new Error(`its name \"${name}\" is not its folder's name \"${folder}\"; they must be the same`);\n", ""]],
      fails: "listed",
    },
    {
      name: "a SKILL.md read where its path says, links not followed: a skill linked from outside the workspace is listed",
      change: [["  const real = safePath(file); // the sandbox's rules", "  const real = path.join(workspace(), file); // the sandbox's rules"]],
      fails: "listed",
    },
    {
      name: "frontmatter found only with \\n line endings: a CRLF SKILL.md is skipped",
      change: [["const parts = /^---[ \\t]*\\r?\\n(?:([\\s\\S]*?)\\r?\\n)?---[ \\t]*(?:\\r?\\n|$)([\\s\\S]*)$/.exec(text);", "const parts = /^---\\n(?:([\\s\\S]*?)\\n)?---\\n([\\s\\S]*)$/.exec(text);"]],
      fails: "listed",
    },
    {
      name: "any frontmatter parsed, however long: yaml's duplicate-key check takes a minute on 100,000 keys",
      change: [["  if ((parts[1] ?? \"\").length > MAX_FRONTMATTER) throw new Error(`its frontmatter is ${parts[1].length} characters; at most ${MAX_FRONTMATTER}, for a name, a description and a few keys`);\n", ""]],
      fails: "listed",
    },
    {
      name: "load_skill reads skills/<the name it was given>/SKILL.md: ../ leaves the skills folder",
      change: [[
        "    const skill = skills.find((candidate) => candidate.name === params.name);",
        "    const given = `${SKILLS_FOLDER}/${String(params.name)}/SKILL.md`;\n    const skill = existsSync(safePath(given)) ? { name: String(params.name), file: given, instructions: readText(safePath(given), given).replace(/^---[\\s\\S]*?\\n---\\r?\\n/, \"\").trim() } : undefined;",
      ]],
      fails: "load-skill",
    },
    {
      name: "the fact not made one line: its line breaks add a heading and a second bullet",
      change: [["  const fact = asFact(String(params.fact));\n  if (fact === \"\")", "  const fact = String(params.fact).trim();\n  if (fact === \"\")"]],
      fails: "one-bullet",
    },
    {
      name: "the same fact saved twice: no look for a bullet already there",
      change: [["  if (known !== undefined) return { ...place, before, after: before, known };\n", ""]],
      fails: "one-bullet",
    },
    {
      name: "the same fact looked for letter for letter: other case or spacing is added again",
      change: [["factKey(bullet) === factKey(fact)", "bullet === fact"]],
      fails: "one-bullet",
    },
    {
      name: "the fact appended at the end of the file, under whatever section is last",
      change: [["  lines.splice(end, 0, ...(end === heading + 1 ? [\"\", `- ${fact}`] : [`- ${fact}`]));", "  lines.push(`- ${fact}`);"]],
      fails: "one-bullet",
    },
    {
      name: "no limit: the memory file grows past 4,000 characters",
      change: [["  if (after.length <= MEMORY_LIMIT) return { ...place, before, after };", "  return { ...place, before, after };"]],
      fails: "memory-full",
    },
    {
      name: "the limit checked on the file before the fact is added",
      change: [["  if (after.length <= MEMORY_LIMIT) return { ...place, before, after };", "  if (before.length <= MEMORY_LIMIT) return { ...place, before, after };"]],
      fails: "memory-full",
    },
    {
      name: "off by one: a file of exactly 4,000 characters refused",
      change: [["  if (after.length <= MEMORY_LIMIT) return { ...place, before, after };", "  if (after.length < MEMORY_LIMIT) return { ...place, before, after };"]],
      fails: "memory-full",
    },
    {
      name: "the memory written while the change is worked out, before the person answers: a declined global fact is kept anyway",
      change: [[
        "  if (after.length <= MEMORY_LIMIT) return { ...place, before, after };",
        "  if (after.length <= MEMORY_LIMIT) {\n    writeAtomically(place.file, after, place.given, { root: place.root, isInside }, { createFolders: true });\n    return { ...place, before, after };\n  }",
      ]],
      fails: "asks-first",
    },
    {
      name: "the scope ignored: a global fact is written into the workspace",
      change: [["const place = memoryPlace((params.scope as Scope | undefined) ?? \"workspace\");", "const place = memoryPlace(\"workspace\");"]],
      fails: "asks-first",
    },
    {
      name: "the knowledge read at every request: the system prompt changes mid-session",
      change: [["  if (session?.workspace !== workspace()) session = { workspace: workspace(), text: readKnowledge() };\n  return session.text;", "  return readKnowledge();"]],
      fails: "once-per-session",
    },
  ],
  requirements: [
    {
      id: "listed",
      title: say(
        "The system prompt lists each valid skill by name and description, not its instructions; a SKILL.md without frontmatter, with bad YAML, with a frontmatter over MAX_FRONTMATTER characters, without a name, named unlike its folder, or leading out of the workspace by a link is skipped with a warning naming the file",
        "システムプロンプトには正しいスキルが名前と説明で並び、手順は入らない。フロントマターのない SKILL.md、YAML の壊れたもの、フロントマターが MAX_FRONTMATTER 文字を超えるもの、name のないもの、フォルダ名と違う name のもの、リンクでワークスペースの外に通じるものは、ファイル名を挙げた警告を出して飛ばす",
      ),
      hints: [
        say("The model only needs to know a skill exists and when to use it. What is the least it must see, and what if one file is broken?", "モデルが知る必要があるのは、スキルがあることと、いつ使うかだけです。最低限見せるべきものは何でしょう。1つのファイルが壊れていたら?"),
        say(
          "In parseSkill: the text must start with a line ---; the frontmatter ends at the next line ---; one longer than MAX_FRONTMATTER is refused unparsed (yaml's duplicate-key check is slow on many keys); YAML.parse it (it throws on bad YAML); name and description must be non-empty strings, and name the folder's. Throw for each problem: readSkills turns your error into the warning.",
          "parseSkill では、テキストは --- の行で始まり、次の --- の行でフロントマターが終わります。MAX_FRONTMATTER より長いものは解析せずに断ります(キーが多いと yaml の重複キー検査が遅いからです)。それを YAML.parse します(壊れた YAML なら例外になります)。name と description は空でない文字列で、name はフォルダ名と同じです。問題ごとに throw すれば、readSkills がそれを警告にします。",
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
        const leaked = ["STEPS-OF-", "A second changelog skill", "A skill with no name", "from outside the workspace", "Not in the skills folder", "A frontmatter of 600 keys"].find((text) => system.includes(text));
        if (leaked) t.fail(say(`the system prompt holds ${quote(leaked)}: instructions, or a skill that should have been skipped`, `システムプロンプトに ${quote(leaked)} が入っています。手順か、飛ばすべきスキルです`));
        const screen = t.printed.join("\n");
        for (const folder of ["notes", "broken", "nameless", "other-folder", "linked", "sneaky", "huge"]) {
          if (!screen.includes(`skills/${folder}/SKILL.md`)) t.fail(say(`no warning names skills/${folder}/SKILL.md; the screen showed ${quote(screen)}`, `skills/${folder}/SKILL.md を挙げた警告がありません。画面は ${quote(screen)} でした`));
        }
      },
    },
    {
      id: "load-skill",
      title: say(
        "load_skill returns the skill's instructions in its result; an unknown name is an error that lists the skills there are, and so is a name that is a path (../) or a skill that leads out of the workspace",
        "load_skill は結果にスキルの手順を入れて返す。知らない名前はエラーになり、あるスキルの一覧を示す。パスになった名前(../)や、ワークスペースの外に通じるスキルも同じくエラー",
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
        for (const [name, steps] of [["../elsewhere", "STEPS-OF-ELSEWHERE"], ["linked", "STEPS-OF-OUTSIDE"], ["sneaky", "STEPS-OF-SNEAKY"]]) {
          const answer = await t.tool("load_skill")({ name });
          if (!answer.isError || answer.text.includes(steps)) t.fail(say(`load_skill(${quote(name)}) answered ${quote(answer.text)}: only a listed skill of skills/ may be loaded`, `load_skill(${quote(name)}) の答えは ${quote(answer.text)} でした。読み込めるのは skills/ にある、一覧に載るスキルだけです`));
        }
        const impostor = await t.tool("load_skill")({ name: "changelog" });
        if (impostor.text.includes("STEPS-OF-IMPOSTOR") || !impostor.text.includes("STEPS-OF-CHANGELOG")) t.fail(say(`load_skill("changelog") answered ${quote(impostor.text)}: the skill is the one in skills/changelog/`, `load_skill("changelog") の答えは ${quote(impostor.text)} でした。スキルは skills/changelog/ にあるものです`));
      },
    },
    {
      id: "one-bullet",
      title: say(
        "save_memory adds the fact as one bullet under the facts' heading in .agent/MEMORY.md (not under a section that follows it), keeps what was there, and adds the same fact (case and spacing aside) only once; a fact with line breaks or Markdown stays one bullet",
        "save_memory は事実を .agent/MEMORY.md の事実の見出しの下に(そのあとに続く節の下ではなく)箇条書き1行として足し、元の内容は残す。同じ事実(大文字小文字と空白の違いは無視)は1回しか足さない。改行や Markdown を含む事実も1行の箇条書きのまま",
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

        // A section of the person's own after the facts: a new fact goes among the facts, not under it.
        t.write(MEMORY, "# Memory\n\n## Saved facts\n\n- An old fact.\n\n## Notes by hand\n\nKeep this line too.\n");
        await save("The deploy key is in the vault.");
        const sections = (t.read(MEMORY) ?? "").split(/\r?\n/);
        const at = sections.findIndex((line) => /^\s*[-*+] .*deploy key/.test(line));
        const [facts, notes] = [sections.indexOf("## Saved facts"), sections.indexOf("## Notes by hand")];
        if (at < 0 || facts < 0 || notes < 0 || at < facts || at > notes) t.fail(say(`the fact did not go under "## Saved facts": ${quote(t.read(MEMORY))}`, `事実が "## Saved facts" の下に入りませんでした: ${quote(t.read(MEMORY))}`));
      },
    },
    {
      id: "memory-full",
      title: say(
        "A fact that would take .agent/MEMORY.md past 4,000 characters is refused with an error saying memory is full, and the file is unchanged; one that makes it exactly 4,000 is saved",
        ".agent/MEMORY.md が 4,000 文字を超えてしまう事実は、メモリがいっぱいだと伝えるエラーで拒否され、ファイルは変わらない。ちょうど 4,000 文字になる事実は保存される",
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
        full += `- The last fact${".".repeat(3960 - full.length - 16)}\n`;
        t.write(MEMORY, full);
        const answer = await t.tool("save_memory")({ fact: "One more fact, which does not fit in the file any more." });
        if (!answer.isError) t.fail(say(`a save past 4,000 characters was not refused (the file had ${full.length}): ${quote(answer.text)}`, `4,000 文字を超える保存が拒否されませんでした(ファイルは ${full.length} 文字): ${quote(answer.text)}`));
        if (!/full|4,?000|limit/i.test(answer.text)) t.fail(say(`the refusal does not say memory is full: ${quote(answer.text)}`, `拒否のエラーが、メモリがいっぱいだと伝えていません: ${quote(answer.text)}`));
        if (t.read(MEMORY) !== full) t.fail(say(`the refused save changed ${MEMORY}`, `拒否された保存で ${MEMORY} が変わりました`));
        const fits = await t.tool("save_memory")({ fact: "Short." });
        if (fits.isError) t.fail(say(`a short fact that fits was refused: ${quote(fits.text)}`, `収まる短い事実が拒否されました: ${quote(fits.text)}`));
        // One more bullet, "- <fact>\n", that makes the file exactly 4,000 characters: at the limit, not past it.
        const now = t.read(MEMORY) ?? "";
        const edge = `The edge fact${"!".repeat(Math.max(1, 4000 - now.length - 3 - 13))}`;
        const atLimit = await t.tool("save_memory")({ fact: edge });
        if (atLimit.isError) t.fail(say(`a fact that makes ${MEMORY} exactly 4,000 characters (${now.length} + ${edge.length + 3}) was refused: ${quote(atLimit.text)}`, `${MEMORY} をちょうど 4,000 文字(${now.length} + ${edge.length + 3})にする事実が拒否されました: ${quote(atLimit.text)}`));
        const last = t.read(MEMORY) ?? "";
        if (last.length > 4000) t.fail(say(`${MEMORY} grew to ${last.length} characters`, `${MEMORY} が ${last.length} 文字になりました`));
      },
    },
    {
      id: "asks-first",
      title: say(
        "save_memory changes nothing until the person agrees: declined, no memory file is written; agreed with scope global, the fact goes to ~/.agent/MEMORY.md in the home folder, not the workspace's",
        "save_memory は人が同意するまで何も変えない。断られたらメモリファイルは書かない。scope が global で同意されたら、事実はワークスペースではなくホームフォルダの ~/.agent/MEMORY.md に入る",
      ),
      hints: [
        say(
          "save_memory asks the person first, like an edit: shouldConfirmExecute calls your proposeMemory to show the change. What may proposeMemory do, if the person can still say no?",
          "save_memory は編集と同じく、まず人に尋ねます。shouldConfirmExecute は変更を見せるためにあなたの proposeMemory を呼びます。人がまだ断れるなら、proposeMemory がしてよいことは何でしょう。",
        ),
        say(
          "proposeMemory only works out the change: it reads the file and returns before and after, and writes nothing; execute writes, after the person agreed. The file is memoryPlace(params.scope ?? \"workspace\"): the home folder's for \"global\".",
          "proposeMemory は変更を組み立てるだけです。ファイルを読み、before と after を返し、何も書きません。書くのは人が同意したあとの execute です。ファイルは memoryPlace(params.scope ?? \"workspace\") で、\"global\" ならホームフォルダのものです。",
        ),
        say(
          "const place = memoryPlace((params.scope as Scope | undefined) ?? \"workspace\"); const before = readMemory(place); ... return { ...place, before, after }; (no writeAtomically in proposeMemory)",
          "const place = memoryPlace((params.scope as Scope | undefined) ?? \"workspace\"); const before = readMemory(place); ... return { ...place, before, after };(proposeMemory の中では writeAtomically を呼ばない)",
        ),
      ],
      async check(t) {
        // A home folder of the check's own, so the person's real ~/.agent/MEMORY.md is never touched.
        const home = path.join(t.outside, "home");
        mkdirSync(home);
        const realHome = process.env.HOME;
        process.env.HOME = home;
        t.cleanup(() => (realHome === undefined ? delete process.env.HOME : (process.env.HOME = realHome)));
        const global = path.join(home, MEMORY);
        const save = (fact: string, answer: string) =>
          t.replay(scenarioOf([reply.tools([{ id: "toolu_save", name: "save_memory", input: { fact, scope: "global" } }]), reply.text("ok")], { answers: [answer] }));

        const declined = await save("GLOBAL-FACT-1 I like tabs.", "n");
        noTurnError(t, declined);
        const [refused] = toolResults(declined.requests, 1);
        if (!refused?.is_error) t.fail(say(`save_memory, declined by the person, answered ${quote(refused && resultText(refused))}`, `人が断った save_memory の答えは ${quote(refused && resultText(refused))} でした`), say("an error: the person declined", "エラー(人が断った)"));
        for (const [file, shown] of [[global, `~/${MEMORY}`], [path.join(t.workspace, MEMORY), MEMORY]]) {
          if (existsSync(file)) t.fail(say(`the person declined, and ${shown} was written anyway`, `人が断ったのに、${shown} が書かれました`));
        }

        const agreed = await save("GLOBAL-FACT-2 I like spaces.", "y");
        noTurnError(t, agreed);
        const [kept] = toolResults(agreed.requests, 1);
        if (!kept || kept.is_error) t.fail(say(`save_memory with scope global, approved, answered ${quote(kept && resultText(kept))}`, `scope が global で承認された save_memory の答えは ${quote(kept && resultText(kept))} でした`));
        const globalText = existsSync(global) ? (t.read(path.relative(t.workspace, global)) ?? "") : "";
        if (!globalText.includes("GLOBAL-FACT-2")) t.fail(say(`after an approved global save, ~/${MEMORY} holds ${quote(globalText)}`, `承認された global の保存のあと、~/${MEMORY} の中身は ${quote(globalText)} でした`), say("the fact, in the home folder's memory file", "ホームフォルダのメモリファイルに入った事実"));
        if ((t.read(MEMORY) ?? "").includes("GLOBAL-FACT")) t.fail(say(`a global fact was written into the workspace's ${MEMORY}`, `global の事実がワークスペースの ${MEMORY} に書かれました`));
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
