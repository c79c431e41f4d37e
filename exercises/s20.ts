// Exercise s20: worktrees. git, the log, the bindings, worktree_create and worktree_list, the
// board and the team are given; checkName (what a worktree may be called), removeWorktree (the
// uncommitted-changes guard and what happens to the branch), inWorktree (a call run with the
// worktree as its root) and rootOf (where a teammate works) are taken out. The checks run real
// git in the check's workspace, made a repository with one commit, and look at the folders,
// branches and files left behind.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { defineExercise, quote, reply, say, type CheckKit } from "../lib/course/exercises.ts";
import { loadScenario, type Scenario } from "../lib/course/scenario.ts";

/** git as the checks run it, reading no one's configuration. */
const git = (dir: string, ...args: string[]) =>
  execFileSync("git", args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" } }).trim();

/** The check's workspace as a repository with one commit (hello.txt); the stage's team and tasks reset. */
function repository(t: CheckKit): void {
  (t.stage as unknown as { prepareReplay(): void }).prepareReplay();
  t.cleanup(() => (t.stage as unknown as { prepareReplay(): void }).prepareReplay());
  git(t.workspace, "init", "-q", "--initial-branch=main");
  git(t.workspace, "config", "user.name", "Check");
  git(t.workspace, "config", "user.email", "check@example.com");
  t.write("hello.txt", "hello\n");
  git(t.workspace, "add", "-A");
  git(t.workspace, "commit", "-q", "-m", "start");
}
const branches = (t: CheckKit) => git(t.workspace, "branch", "--format=%(refname:short)").split("\n");
const folder = (t: CheckKit, name: string) => path.join(t.workspace, ".agent", "worktrees", name);
/** A call that must work: its failure is the check's. */
async function mustWork(t: CheckKit, tool: string, input: Record<string, unknown>): Promise<string> {
  const answer = await t.tool(tool)(input);
  if (answer.isError) t.fail(say(`${tool} ${quote(input)} failed: ${quote(answer.text)}`, `${tool} ${quote(input)} が失敗しました: ${quote(answer.text)}`), say("it works", "成功する"));
  return answer.text;
}
/** A commit in the worktree `name` that main does not have. */
function commitIn(t: CheckKit, name: string): void {
  writeFileSync(path.join(folder(t, name), `${name}.txt`), name);
  git(folder(t, name), "add", "-A");
  git(folder(t, name), "commit", "-q", "-m", name);
}
const events = (t: CheckKit) => (t.read(".agent/worktrees/events.jsonl") ?? "").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, string>);

export default defineExercise({
  stage: "s20",
  title: say("Worktrees", "ワークツリー"),
  mechanism: say(
    "check a worktree's name; remove a worktree only when nothing uncommitted would be lost (unless force), keeping a branch that holds unmerged work; run a tool call with the worktree as its root; and work out where a teammate works from its task",
    "ワークツリーの名前を確かめる。コミットしていない変更が失われるときは（force がなければ）削除しない。マージされていない作業のあるブランチは残す。ツール呼び出しをワークツリーをルートにして動かす。チームメイトがどこで作業するかをそのタスクから決める",
  ),
  minutes: 45,
  takeOut: [
    {
      function: "checkName",
      task: say(
        "refuse (fail) a name that is not letters, digits, - and _, at most 40 characters, or that starts with -; return it otherwise.",
        "英字・数字・-・_ 以外を含む名前、41文字以上の名前、- で始まる名前を拒否（fail）し、それ以外はそのまま返します。",
      ),
    },
    {
      function: "removeWorktree",
      task: say(
        "find the worktree (listWorktrees; an unknown name is refused, naming them), refuse while uncommitted() finds changes unless force (name them), git worktree remove, then the branch: only wt/<name>, kept with keep_branch, else deleteBranch; unbind its task, log remove, and say what was deleted.",
        "ワークツリーを探し（listWorktrees。知らない名前は一覧を添えて拒否）、uncommitted() が変更を見つけたら force がない限り拒否し（変更を並べる）、git worktree remove のあとブランチを扱います。消すのは wt/<name> だけで、keep_branch なら残し、それ以外は deleteBranch に任せます。タスクとの結びつきを外し、remove を記録し、何を消したかを返します。",
      ),
    },
    {
      function: "inWorktree",
      task: say(
        "without params.worktree, just run work(); with it, find its folder (worktreeRoot refuses an unknown one) and run work inside workingRoot.run, so that call alone has the worktree as its root.",
        "params.worktree がなければ work() をそのまま実行します。あれば、そのフォルダを探し（worktreeRoot は知らない名前を拒否します）、workingRoot.run の中で work を実行して、その呼び出しだけがワークツリーをルートにするようにします。",
      ),
    },
    {
      function: "rootOf",
      task: say(
        "the teammate's in_progress tasks (readBoard of mate.home, owner mate.name): the worktree bound to one of them (bindings), else mate.home; with none in progress, where it was (`was`) if that still exists. A board that cannot be read: mate.home.",
        "チームメイトの in_progress のタスク（mate.home の readBoard で、持ち主が mate.name のもの）に結びついたワークツリー（bindings）を返し、なければ mate.home を返します。進行中のタスクがなければ、`was` がまだあればそこを返します。ボードが読めなければ mate.home です。",
      ),
    },
  ],
  wrong: [
    {
      name: "the name check is a search, not a match: ../x passes",
      change: [["  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$/.test(name)) fail(", "  if (!/[A-Za-z0-9_-]{1,40}/.test(name)) fail("]],
      fails: "names",
    },
    {
      name: "a name may start with -: git reads it as an option",
      change: [["  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$/.test(name)) fail(", "  if (!/^[A-Za-z0-9_-]{1,40}$/.test(name)) fail("]],
      fails: "names",
    },
    {
      name: "41 characters allowed (off by one)",
      change: [["  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$/.test(name)) fail(", "  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,40}$/.test(name)) fail("]],
      fails: "names",
    },
    {
      name: "dots allowed in a name: .. gets through",
      change: [["  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$/.test(name)) fail(", "  if (!/^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,39}$/.test(name)) fail("]],
      fails: "names",
    },
    {
      name: "no guard: git's own refusal is all there is, and it names no file",
      change: [["  if (changes.length > 0 && !options.force) fail(", "  if (false) fail("]],
      fails: "uncommitted",
    },
    {
      name: "always --force: uncommitted work is thrown away without a word",
      change: [
        ["  if (changes.length > 0 && !options.force) fail(", "  if (false) fail("],
        ['  await git(["worktree", "remove", ...(options.force ? ["--force"] : []), path.join(WORKTREES, name)], root, options.signal);', '  await git(["worktree", "remove", "--force", path.join(WORKTREES, name)], root, options.signal);'],
      ],
      fails: "uncommitted",
    },
    {
      name: "force ignored: a worktree with changes can never be removed",
      change: [["  if (changes.length > 0 && !options.force) fail(", "  if (changes.length > 0) fail("]],
      fails: "uncommitted",
    },
    {
      name: "untracked files do not count as changes",
      change: [["  const changes = await uncommitted(worktree);", '  const changes = (await uncommitted(worktree)).filter((line) => !line.startsWith("??"));']],
      fails: "uncommitted",
    },
    {
      name: "keep_branch ignored: the branch is always deleted",
      change: [["  if (worktree.branch === `wt/${name}` && !options.keepBranch) said.push(", "  if (worktree.branch === `wt/${name}`) said.push("]],
      fails: "branch",
    },
    {
      name: "an unmerged branch is deleted without force",
      change: [["said.push(await deleteBranch(root, worktree.branch, options.force === true));", "said.push(await deleteBranch(root, worktree.branch, true));"]],
      fails: "branch",
    },
    {
      name: "whatever branch the worktree is on is deleted, not only wt/<name>",
      change: [["  if (worktree.branch === `wt/${name}` && !options.keepBranch) said.push(", "  if (worktree.branch && !options.keepBranch) said.push("]],
      fails: "branch",
    },
    {
      name: "the result does not say what happened to the branch",
      change: [["said.push(await deleteBranch(root, worktree.branch, options.force === true));", "await deleteBranch(root, worktree.branch, options.force === true);"]],
      fails: "branch",
    },
    {
      name: "the task stays bound to a removed worktree",
      change: [["  if (task !== undefined) writeBindings(inside(root, WORKTREES), rest);\n", ""]],
      fails: "unbind-log",
    },
    {
      name: "the removal is not logged",
      change: [['  logEvent(root, { event: "remove", name, ...(task === undefined ? {} : { task }) });\n', ""]],
      fails: "unbind-log",
    },
    {
      name: "worktree ignored: the call runs in the main checkout",
      change: [["  const root = worktreeRoot(String(params.worktree));\n  return workingRoot.run(() => root, work);", "  return work();"]],
      fails: "in-worktree",
    },
    {
      name: "the worktree's folder made from its name without looking: an unknown one is not named",
      change: [["  const root = worktreeRoot(String(params.worktree));", "  const root = path.join(boardRoot(), WORKTREES, String(params.worktree));"]],
      fails: "unknown",
    },
    {
      name: "process.chdir into the worktree: another call at the same time lands there too",
      change: [
        [
          "  const root = worktreeRoot(String(params.worktree));\n  return workingRoot.run(() => root, work);",
          "  const back = process.cwd();\n  process.chdir(worktreeRoot(String(params.worktree)));\n  return Promise.resolve(work()).finally(() => process.chdir(back)) as T;",
        ],
      ],
      fails: "at-once",
    },
    {
      name: "a teammate works in any in_progress task's worktree, not only its own",
      change: [["    const mine = readBoard(mate.home).filter((task) => task.owner === mate.name && task.status === \"in_progress\");", "    const mine = readBoard(mate.home).filter((task) => task.status === \"in_progress\");"]],
      fails: "teammate",
    },
    {
      name: "a teammate is sent back to the main checkout the moment its task is completed",
      change: [["    if (mine.length === 0) return existsSync(was) ? was : mate.home; // between tasks: where it last worked", "    if (mine.length === 0) return mate.home;"]],
      fails: "teammate",
    },
  ],
  requirements: [
    {
      id: "names",
      title: say(
        "A worktree's name is letters, digits, - and _, at most 40 characters, not starting with -; any other is refused before git runs",
        "ワークツリーの名前は英字・数字・-・_ だけで40文字まで、- で始まらない。それ以外は git を動かす前に拒否する",
      ),
      hints: [
        say("The name becomes a folder (.agent/worktrees/<name>) and a branch (wt/<name>), and git reads a word that starts with - as an option.", "名前はフォルダ（.agent/worktrees/<name>）とブランチ（wt/<name>）になります。git は - で始まる語をオプションとして読みます。"),
        say("One regular expression, anchored at both ends (^...$): the first character without -, then up to 39 more.", "両端を固定した（^...$）正規表現1つで書けます。最初の1文字は - なし、そのあとに最大39文字です。"),
        say("if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$/.test(name)) fail(`${JSON.stringify(name)} cannot be a worktree's name: ...`); return name;", "if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$/.test(name)) fail(`${JSON.stringify(name)} cannot be a worktree's name: ...`); return name;"),
      ],
      async check(t) {
        repository(t);
        for (const name of ["../x", "a/b", "-b", "--force", "x".repeat(41), "a b", "..", "a.b", ""]) {
          const answer = await t.tool("worktree_create")({ name });
          if (!answer.isError) t.fail(say(`worktree_create with the name ${quote(name)} was not refused: ${quote(answer.text)}`, `名前 ${quote(name)} の worktree_create が拒否されませんでした: ${quote(answer.text)}`), say("refused", "拒否"));
        }
        if (branches(t).join(" ") !== "main") t.fail(say(`after the refused names, the branches are ${quote(branches(t))}`, `拒否された名前のあと、ブランチが ${quote(branches(t))} です`), say('only "main": git never ran', '"main" だけ（git は動いていない）'));
        for (const name of ["task-1", "A_b9", `_${"x".repeat(39)}`]) {
          await mustWork(t, "worktree_create", { name });
          if (!branches(t).includes(`wt/${name}`)) t.fail(say(`worktree_create ${quote(name)} left no branch wt/${name}`, `worktree_create ${quote(name)} のあと、ブランチ wt/${name} がありません`));
        }
      },
    },
    {
      id: "uncommitted",
      title: say(
        "worktree_remove refuses a worktree with uncommitted changes, naming them, and leaves it as it was; with force it removes it and says what was thrown away",
        "worktree_remove は、コミットしていない変更のあるワークツリーを、変更を並べて拒否し、そのまま残す。force があれば削除し、何を捨てたかを言う",
      ),
      hints: [
        say("uncommitted(worktree) gives git status --porcelain's lines: new files (??) count too. git's own refusal names no file.", "uncommitted(worktree) は git status --porcelain の行を返します。新しいファイル（??）も変更です。git 自身の拒否はファイル名を出しません。"),
        say("Look before git worktree remove runs; pass --force to git only when force was given.", "git worktree remove の前に確かめます。git に --force を渡すのは force が指定されたときだけです。"),
        say('const changes = await uncommitted(worktree); if (changes.length > 0 && !options.force) fail(`the worktree ${name} has uncommitted changes ...:\\n${changes.join("\\n")}`);', 'const changes = await uncommitted(worktree); if (changes.length > 0 && !options.force) fail(`the worktree ${name} has uncommitted changes ...:\\n${changes.join("\\n")}`);'),
      ],
      async check(t) {
        repository(t);
        await mustWork(t, "worktree_create", { name: "a" });
        writeFileSync(path.join(folder(t, "a"), "new.txt"), "work in progress");
        const refused = await t.tool("worktree_remove")({ name: "a" });
        if (!refused.isError || !existsSync(path.join(folder(t, "a"), "new.txt"))) {
          t.fail(say(`worktree_remove of a worktree with a new file answered ${quote(refused.text)}, and the file is ${existsSync(path.join(folder(t, "a"), "new.txt")) ? "there" : "gone"}`, `新しいファイルのあるワークツリーの worktree_remove の答えは ${quote(refused.text)} で、ファイルは${existsSync(path.join(folder(t, "a"), "new.txt")) ? "残っています" : "消えました"}`), say("refused, the file still there", "拒否され、ファイルは残る"));
        }
        if (!refused.text.includes("new.txt")) t.fail(say(`the refusal ${quote(refused.text)} does not name new.txt`, `拒否 ${quote(refused.text)} が new.txt を挙げていません`), say("the uncommitted changes named", "コミットしていない変更を挙げる"));
        const forced = await mustWork(t, "worktree_remove", { name: "a", force: true });
        if (existsSync(folder(t, "a"))) t.fail(say("worktree_remove with force left the folder .agent/worktrees/a", "force 付きの worktree_remove のあとも .agent/worktrees/a が残っています"), say("removed", "削除される"));
        if (!forced.includes("new.txt")) t.fail(say(`with force, the result ${quote(forced)} does not say new.txt was thrown away`, `force のときの結果 ${quote(forced)} が、new.txt を捨てたことを言っていません`), say("what was thrown away, named", "捨てたものを挙げる"));
      },
    },
    {
      id: "branch",
      title: say(
        "Then the branch: wt/<name> is kept with keep_branch, deleted when merged, kept when it has unmerged commits unless force; another branch is never deleted; the result says which",
        "そのあとブランチを扱う。wt/<name> は keep_branch なら残し、マージ済みなら消し、マージされていないコミットがあれば force がない限り残す。ほかのブランチは決して消さない。どうしたかを結果で言う",
      ),
      hints: [
        say("deleteBranch(root, branch, force) keeps an unmerged branch unless force, and says what it did: put its words in the result.", "deleteBranch(root, branch, force) は、force がなければマージされていないブランチを残し、何をしたかを返します。その言葉を結果に入れます。"),
        say("A worktree may have been switched to another branch (git switch inside it): listWorktrees gives its branch now. Only the branch this tool made is yours to delete.", "ワークツリーの中でほかのブランチに切り替えられていることもあります（git switch）。listWorktrees がいまのブランチを返します。消してよいのは、このツールが作ったブランチだけです。"),
        say("if (worktree.branch === `wt/${name}` && !options.keepBranch) said.push(await deleteBranch(root, worktree.branch, options.force === true)); else if (worktree.branch) said.push(`The branch ${worktree.branch} is kept.`);", "if (worktree.branch === `wt/${name}` && !options.keepBranch) said.push(await deleteBranch(root, worktree.branch, options.force === true)); else if (worktree.branch) said.push(`The branch ${worktree.branch} is kept.`);"),
      ],
      async check(t) {
        repository(t);
        for (const name of ["merged", "unmerged", "kept", "switched", "forced"]) await mustWork(t, "worktree_create", { name });
        commitIn(t, "unmerged");
        commitIn(t, "forced");
        git(folder(t, "switched"), "switch", "-q", "-c", "feature");
        const cases: [string, Record<string, unknown>, string, boolean][] = [
          ["merged", {}, "wt/merged", false],
          ["unmerged", {}, "wt/unmerged", true],
          ["kept", { keep_branch: true }, "wt/kept", true],
          ["switched", {}, "feature", true],
          ["forced", { force: true }, "wt/forced", false],
        ];
        for (const [name, options, branch, stays] of cases) {
          const text = await mustWork(t, "worktree_remove", { name, ...options });
          const what = `worktree_remove ${quote({ name, ...options })}`;
          if (branches(t).includes(branch) !== stays) t.fail(say(`after ${what}, the branch ${branch} is ${stays ? "gone" : "still there"}`, `${what} のあと、ブランチ ${branch} が${stays ? "消えています" : "残っています"}`), say(`${branch} ${stays ? "kept" : "deleted"}`, `${branch} は${stays ? "残る" : "消える"}`));
          if (!text.includes(branch)) t.fail(say(`${what} answered ${quote(text)}, which does not say what happened to ${branch}`, `${what} の答え ${quote(text)} が、${branch} をどうしたかを言っていません`), say(`the result names ${branch}`, `結果が ${branch} を挙げる`));
        }
      },
    },
    {
      id: "unbind-log",
      title: say(
        "A removed worktree's task is free for another, and the removal is a line in .agent/worktrees/events.jsonl",
        "削除したワークツリーのタスクはほかのワークツリーに結びつけられ、削除は .agent/worktrees/events.jsonl の1行になる",
      ),
      hints: [
        say("bindings(root) is name -> task id; writeBindings writes it whole. logEvent appends one line.", "bindings(root) は名前 -> タスク id です。writeBindings がそれを丸ごと書きます。logEvent は1行を足します。"),
        say("Take the worktree's entry out of the bindings, and log { event: \"remove\", name, task } when it had one.", "ワークツリーの項目を bindings から外し、{ event: \"remove\", name, task }（タスクがあれば）を記録します。"),
        say('const { [name]: task, ...rest } = bindings(root); if (task !== undefined) writeBindings(inside(root, WORKTREES), rest); logEvent(root, { event: "remove", name, ...(task === undefined ? {} : { task }) });', 'const { [name]: task, ...rest } = bindings(root); if (task !== undefined) writeBindings(inside(root, WORKTREES), rest); logEvent(root, { event: "remove", name, ...(task === undefined ? {} : { task }) });'),
      ],
      async check(t) {
        repository(t);
        await mustWork(t, "task_create", { subject: "Greet", description: "Greet by name" });
        await mustWork(t, "worktree_create", { name: "first", task_id: "1" });
        await mustWork(t, "worktree_remove", { name: "first" });
        const last = events(t).at(-1);
        if (last?.event !== "remove" || last.name !== "first") t.fail(say(`the log's last line after the removal is ${quote(last)}`, `削除のあと、記録の最後の行が ${quote(last)} です`), say('{ event: "remove", name: "first", ... }', '{ event: "remove", name: "first", ... }'));
        const again = await t.tool("worktree_create")({ name: "second", task_id: "1" });
        if (again.isError) t.fail(say(`a new worktree for task 1, whose worktree was removed, was refused: ${quote(again.text)}`, `ワークツリーを削除したタスク 1 に新しいワークツリーを作ろうとして拒否されました: ${quote(again.text)}`), say("task 1 free again", "タスク 1 はまた空いている"));
      },
    },
    {
      id: "in-worktree",
      title: say(
        "bash, read_file, write_file and edit_file with worktree work inside it, as their root; without it, in the main checkout",
        "bash・read_file・write_file・edit_file に worktree を渡すと、そのワークツリーをルートとして中で動く。渡さなければメインのチェックアウトで動く",
      ),
      hints: [
        say("The tools read s06's workspace() at every call. workingRoot, an AsyncLocalStorage, can give one call (and all it awaits) another root.", "ツールは呼び出しのたびに s06 の workspace() を読みます。AsyncLocalStorage の workingRoot を使うと、1つの呼び出し（とその中で await するものすべて）に別のルートを与えられます。"),
        say("worktreeRoot(name) gives the folder; workingRoot.run(() => folder, work) runs work with it.", "worktreeRoot(name) がフォルダを返します。workingRoot.run(() => folder, work) で、そのフォルダをルートにして work を実行します。"),
        say("if (params.worktree === undefined) return work(); const root = worktreeRoot(String(params.worktree)); return workingRoot.run(() => root, work);", "if (params.worktree === undefined) return work(); const root = worktreeRoot(String(params.worktree)); return workingRoot.run(() => root, work);"),
      ],
      async check(t) {
        repository(t);
        await mustWork(t, "worktree_create", { name: "a" });
        await mustWork(t, "write_file", { path: "notes.md", content: "in a\n", worktree: "a" });
        await mustWork(t, "edit_file", { path: "hello.txt", old_string: "hello", new_string: "hello from a", worktree: "a" });
        if (!existsSync(path.join(folder(t, "a"), "notes.md")) || t.read("notes.md") !== undefined) t.fail(say(`write_file with worktree "a" wrote ${t.read("notes.md") !== undefined ? "notes.md in the main checkout" : "no .agent/worktrees/a/notes.md"}`, `worktree "a" の write_file が${t.read("notes.md") !== undefined ? "メインのチェックアウトに notes.md を書きました" : ".agent/worktrees/a/notes.md を書いていません"}`), say(".agent/worktrees/a/notes.md only", ".agent/worktrees/a/notes.md だけ"));
        if (t.read("hello.txt") !== "hello\n") t.fail(say(`edit_file with worktree "a" changed the main checkout's hello.txt: ${quote(t.read("hello.txt"))}`, `worktree "a" の edit_file がメインの hello.txt を変えました: ${quote(t.read("hello.txt"))}`), say("the main hello.txt unchanged", "メインの hello.txt は変わらない"));
        const read = await mustWork(t, "read_file", { path: "hello.txt", worktree: "a" });
        if (read !== "hello from a\n") t.fail(say(`read_file hello.txt with worktree "a" gave ${quote(read)}`, `worktree "a" の read_file hello.txt が ${quote(read)} を返しました`), say('"hello from a\\n"', '"hello from a\\n"'));
        const here = await mustWork(t, "bash", { command: "pwd", worktree: "a" });
        if (here.trim() !== folder(t, "a")) t.fail(say(`bash pwd with worktree "a" printed ${quote(here)}`, `worktree "a" の bash pwd が ${quote(here)} を出しました`), say(folder(t, "a"), folder(t, "a")));
        const main = await mustWork(t, "bash", { command: "pwd" });
        if (main.trim() !== t.workspace) t.fail(say(`bash pwd without worktree printed ${quote(main)}`, `worktree なしの bash pwd が ${quote(main)} を出しました`), say(t.workspace, t.workspace));
      },
    },
    {
      id: "unknown",
      title: say(
        "An unknown worktree is refused, naming the ones there are; inside one, ../ out of it is refused as the sandbox refuses it",
        "知らないワークツリーは、あるものを挙げて拒否する。ワークツリーの中から ../ で外へ出るパスは、サンドボックスと同じく拒否する",
      ),
      hints: [
        say("The model may guess a name: tell it which there are. worktreeRoot does.", "モデルは名前を当て推量するかもしれません。どれがあるかを伝えます。worktreeRoot がそうします。"),
        say("The sandbox's root is workspace(): inside the call, the worktree. So ../hello.txt leads out of it, and is refused.", "サンドボックスのルートは workspace() で、呼び出しの中ではワークツリーです。だから ../hello.txt は外へ出るパスで、拒否されます。"),
        say("const root = worktreeRoot(String(params.worktree)); return workingRoot.run(() => root, work);", "const root = worktreeRoot(String(params.worktree)); return workingRoot.run(() => root, work);"),
      ],
      async check(t) {
        repository(t);
        await mustWork(t, "worktree_create", { name: "only-one" });
        const unknown = await t.tool("write_file")({ path: "x.md", content: "x", worktree: "nope" });
        if (!unknown.isError || !unknown.text.includes("only-one")) t.fail(say(`write_file with worktree "nope" answered ${quote(unknown.text)}`, `worktree "nope" の write_file の答えは ${quote(unknown.text)} でした`), say('refused, naming the worktree "only-one"', 'ワークツリー "only-one" を挙げて拒否'));
        const out = await t.tool("read_file")({ path: "../../../hello.txt", worktree: "only-one" });
        if (!out.isError) t.fail(say(`read_file ../../../hello.txt inside the worktree "only-one" read the main checkout's file: ${quote(out.text)}`, `ワークツリー "only-one" の中から read_file ../../../hello.txt がメインのファイルを読みました: ${quote(out.text)}`), say("refused: outside the worktree", "拒否（ワークツリーの外）"));
        if (t.read("x.md") !== undefined || existsSync(path.join(t.workspace, ".agent", "worktrees", "nope"))) t.fail(say("the refused write left x.md or a folder nope behind", "拒否された書き込みのあとに x.md か nope フォルダが残っています"), say("nothing written", "何も書かれない"));
      },
    },
    {
      id: "at-once",
      title: say(
        "The worktree is the root of that call alone: a call at the same moment without worktree still works in the main checkout",
        "ワークツリーがルートになるのはその呼び出しだけ。同じ瞬間に worktree なしで動く呼び出しは、メインのチェックアウトで動く",
      ),
      hints: [
        say("The lead and its teammates run in one process: process.chdir would move them all.", "リードとチームメイトは1つのプロセスで動きます。process.chdir はその全員を動かしてしまいます。"),
        say("An AsyncLocalStorage's value follows one call through all it awaits, and no other.", "AsyncLocalStorage の値は、1つの呼び出しとその中で await するものだけについていきます。"),
        say("return workingRoot.run(() => root, work);", "return workingRoot.run(() => root, work);"),
      ],
      async check(t) {
        repository(t);
        await mustWork(t, "worktree_create", { name: "a" });
        writeFileSync(path.join(folder(t, "a"), "hello.txt"), "hello from a\n");
        const slow = mustWork(t, "bash", { command: "sleep 0.3; cat hello.txt", worktree: "a" });
        await new Promise((resolve) => setTimeout(resolve, 100));
        const main = await mustWork(t, "read_file", { path: "hello.txt" });
        const inA = await slow;
        if (main !== "hello\n" || inA !== "hello from a\n") {
          t.fail(say(`while bash ran in worktree "a" (it printed ${quote(inA)}), read_file hello.txt without worktree read ${quote(main)}`, `worktree "a" で bash が動いている間（出力は ${quote(inA)}）、worktree なしの read_file hello.txt が ${quote(main)} を読みました`), say('"hello\\n" from the main checkout, "hello from a\\n" in a', 'メインから "hello\\n"、a では "hello from a\\n"'));
        }
      },
    },
    {
      id: "teammate",
      title: say(
        "A teammate whose in_progress task has a worktree works in it (its root, its system prompt, its tool calls), and stays there once the task is completed; a teammate on a task without one works in the main checkout",
        "in_progress のタスクにワークツリーがあるチームメイトは、その中で作業する（ルート、システムプロンプト、ツール呼び出し）。タスクを完了したあともそこに留まる。ワークツリーのないタスクのチームメイトはメインのチェックアウトで作業する",
      ),
      hints: [
        say("readBoard(mate.home) gives the tasks; the teammate's are those with owner mate.name; bindings(mate.home) maps a worktree's name to its task.", "readBoard(mate.home) がタスクを返します。チームメイトのものは owner が mate.name のものです。bindings(mate.home) はワークツリーの名前からタスクへの対応です。"),
        say("No task in progress (it has just completed one): stay in `was`, where it last worked, while that folder exists.", "進行中のタスクがない（完了したところ）なら、最後に作業した `was` に、そのフォルダがある間は留まります。"),
        say('const mine = readBoard(mate.home).filter((task) => task.owner === mate.name && task.status === "in_progress"); if (mine.length === 0) return existsSync(was) ? was : mate.home; ...', 'const mine = readBoard(mate.home).filter((task) => task.owner === mate.name && task.status === "in_progress"); if (mine.length === 0) return existsSync(was) ? was : mate.home; ...'),
      ],
      async check(t) {
        repository(t);
        const as = (agent: string, message: ReturnType<typeof reply.text>) => ({ ...message, agent });
        const scenario: Scenario = {
          description: "two teammates, one task with a worktree",
          prompts: ["Two tasks, one in a worktree."],
          sideTurns: 3,
          answers: ["y", "y", "y", "y"],
          replies: [
            reply.tools([
              { name: "task_create", input: { subject: "In a worktree", description: "x" } },
              { name: "task_create", input: { subject: "In the main checkout", description: "x" } },
              { name: "worktree_create", input: { name: "w", task_id: "1" } },
              { name: "spawn_teammate", input: { name: "alice", prompt: "Take task 1." } },
              { name: "spawn_teammate", input: { name: "bob", prompt: "Take task 2." } },
            ]),
            reply.text("Waiting."),
            as("alice", reply.tools([{ name: "task_update", input: { task_id: "1", status: "in_progress", owner: "alice" } }])),
            as("bob", reply.tools([{ name: "task_update", input: { task_id: "2", status: "in_progress", owner: "bob" } }])),
            as("alice", reply.tools([{ name: "write_file", input: { path: "work.txt", content: "alice" } }])),
            as("bob", reply.tools([{ name: "write_file", input: { path: "bob.txt", content: "bob" } }])),
            as("alice", reply.tools([{ name: "task_update", input: { task_id: "1", status: "completed" } }])),
            as("alice", reply.tools([{ name: "write_file", input: { path: "report.md", content: "done" } }])),
            as("bob", reply.text("Done.")),
            as("alice", reply.text("Done.")),
            reply.text("Both done."),
          ],
        };
        const session = t.asRecorded(await t.replay(scenario));
        const w = folder(t, "w");
        const where = (file: string) => (existsSync(path.join(w, file)) ? "the worktree w" : t.read(file) !== undefined ? "the main checkout" : "nowhere");
        if (where("work.txt") !== "the worktree w") t.fail(say(`alice, on task 1 (worktree w), wrote work.txt in ${where("work.txt")}`, `タスク 1（ワークツリー w）の alice が work.txt を${where("work.txt")}に書きました`), say("the worktree w", "ワークツリー w"));
        if (where("report.md") !== "the worktree w") t.fail(say(`alice, having just completed task 1, wrote report.md in ${where("report.md")}`, `タスク 1 を完了した直後の alice が report.md を${where("report.md")}に書きました`), say("still the worktree w", "まだワークツリー w"));
        if (where("bob.txt") !== "the main checkout") t.fail(say(`bob, on task 2 (no worktree), wrote bob.txt in ${where("bob.txt")}`, `タスク 2（ワークツリーなし）の bob が bob.txt を${where("bob.txt")}に書きました`), say("the main checkout", "メインのチェックアウト"));
        const prompts = session.requests.filter((request) => String(request.system).includes("Your name is alice.")).map((request) => String(request.system));
        if (!prompts.slice(1).every((system) => system.includes(w))) t.fail(say(`alice's system prompt, once task 1 was hers, did not name ${w}`, `タスク 1 を引き受けたあとの alice のシステムプロンプトが ${w} を挙げていません`), say(`"working in ${w}"`, `"working in ${w}"`));
      },
    },
    {
      id: "demo",
      title: say(
        "The demo: each teammate's change in its own worktree and branch, the main checkout untouched, the worktrees removed and their unmerged branches kept",
        "デモ: 各チームメイトの変更はそれぞれのワークツリーとブランチに入り、メインのチェックアウトは変わらず、ワークツリーは削除され、マージされていないブランチは残る",
      ),
      hints: [
        say("Run npx tsx workshop/s20.ts and read what each teammate did, and where.", "npx tsx workshop/s20.ts を実行して、各チームメイトが何をどこでしたかを読みます。"),
        say("The earlier requirements are what the demo leans on: the teammates' root, the guard, the branch rule.", "デモが頼っているのは、これまでの要件（チームメイトのルート、削除の確認、ブランチの扱い）です。"),
        say("If every other requirement passes, compare the demo's output with the stage's (npx tsx agents/s20_worktrees.ts).", "ほかの要件がすべて通るなら、デモの出力をステージのもの（npx tsx agents/s20_worktrees.ts）と比べます。"),
      ],
      async check(t) {
        (t.stage as unknown as { prepareReplay(): void }).prepareReplay();
        t.cleanup(() => (t.stage as unknown as { prepareReplay(): void }).prepareReplay());
        t.asRecorded(await t.demo());
        const original = readFileSync(path.join(t.workspace, "hello.py"), "utf8");
        if (original !== loadScenario("s20").files?.["hello.py"] || existsSync(path.join(t.workspace, "NOTES.md"))) t.fail(say("the teammates' changes reached the main checkout", "チームメイトの変更がメインのチェックアウトに入りました"), say("the main checkout untouched", "メインのチェックアウトは変わらない"));
        const onBranch = (spec: string) => {
          try {
            return git(t.workspace, "show", spec);
          } catch {
            return "";
          }
        };
        if (!onBranch("wt/greet:hello.py").includes("def greet(name") || !onBranch("wt/notes:NOTES.md").includes("Notes")) t.fail(say("the branches wt/greet and wt/notes do not hold the teammates' commits", "ブランチ wt/greet と wt/notes にチームメイトのコミットがありません"), say("each change on its branch", "それぞれの変更がそのブランチに"));
        if (existsSync(folder(t, "greet")) || existsSync(folder(t, "notes"))) t.fail(say("the worktrees' folders are still there after the lead removed them", "リードが削除したあとも、ワークツリーのフォルダが残っています"), say("removed", "削除される"));
      },
    },
  ],
});
