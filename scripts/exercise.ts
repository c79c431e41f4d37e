// `npm run exercise -- s02` gives the learner their own copy of exercise s02: workshop/s02.ts,
// made now from the stage file with the lesson's code taken out and TODOs in its place.
// workshop/ is git-ignored, so `git pull` never meets the learner's work.
//
//   npm run exercise -- s02            make workshop/s02.ts (never overwrites work without asking)
//   npm run exercise -- s02 --force    start again: the old copy is kept beside it as a .bak
//   npm run exercise -- s02 --lang ja  TODO comments and messages in Japanese
//   npm run exercise -- s02 --dir workshop/pair2
//                                      the copy in another folder inside the workbook (not
//                                      outside it: there Node would not load it as an ES
//                                      module, nor find the packages it imports)
import { copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import readline from "node:readline/promises";
import { fileURLToPath } from "node:url";
import { dirOption, folderProblem, stageFileOf, starterOf, type Exercise, type Lang } from "../lib/course/exercises.ts";
import { REPO_ROOT } from "../lib/course/stages.ts";
import { findExercise, forgetHints, parseOptions, shown } from "./verify.ts";

const WORDS = {
  en: {
    fresh: (file: string) => `${file} is already a fresh copy; nothing to do.`,
    question: (file: string, backup: string) => `${file} holds your work. Start again from a fresh copy? Your work is kept as ${backup}. [y/N] `,
    kept: (file: string) => `Kept ${file} as it is.`,
    refused: (file: string, stage: string) =>
      `${file} already holds your work, and there is no one at the terminal to ask, so nothing was overwritten.\nTo start again: npm run exercise -- ${stage} --force (your copy is kept beside it as a .bak file).`,
    backedUp: (backup: string) => `Your earlier copy is kept as ${backup}.`,
    made: (file: string, stageFile: string) => `Made ${file} from ${stageFile}.`,
    todo: (stage: string) => `What to write (marked TODO(${stage}) in the file):`,
    task: (page: string) => `The task and its hints: ${page}`,
    check: (stage: string) => `Check it:  npm run verify -- ${stage}   (--watch: on every save, --hint: a hint)`,
    run: (file: string) => `Run it:    npx tsx ${file}   (no key: your code replays the stage's recorded demo)`,
  },
  ja: {
    fresh: (file: string) => `${file} は作りたてのコピーのままです。何もしません。`,
    question: (file: string, backup: string) => `${file} にはあなたの作業が入っています。新しいコピーでやり直しますか？ 今の内容は ${backup} に残します。[y/N] `,
    kept: (file: string) => `${file} はそのままにしました。`,
    refused: (file: string, stage: string) =>
      `${file} にはすでにあなたの作業が入っていて、確認できる人が端末にいないため、上書きしませんでした。\nやり直すには: npm run exercise -- ${stage} --force（今のコピーは .bak ファイルとして横に残ります）`,
    backedUp: (backup: string) => `前のコピーは ${backup} に残しました。`,
    made: (file: string, stageFile: string) => `${stageFile} から ${file} を作りました。`,
    todo: (stage: string) => `書くもの（ファイルの中の TODO(${stage}) の箇所）:`,
    task: (page: string) => `課題とヒント: ${page}`,
    check: (stage: string) => `確かめる: npm run verify -- ${stage}   （--watch: 保存のたびに、--hint: ヒント）`,
    run: (file: string) => `動かす:   npx tsx ${file}   （キーなし: あなたのコードで記録済みのデモを再生します）`,
  },
} as const;

/** Ask the person a yes/no question; undefined when no person is at the terminal. */
export type AskPerson = (question: string) => Promise<boolean> | undefined;

const askAtTerminal: AskPerson = (question) => {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return undefined;
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
  return rl
    .question(question)
    .then((answer) => /^y(es)?$/i.test(answer.trim()))
    .catch(() => false)
    .finally(() => rl.close());
};

export async function main(argv: string[], askPerson: AskPerson = askAtTerminal): Promise<number> {
  const options = parseOptions(argv);
  const { exercise, message } = await findExercise(options.stage, "exercise", options.lang);
  if (options.problems.length > 0 || !exercise) {
    console.log([...options.problems, message].filter(Boolean).join("\n"));
    return 1;
  }
  const words = WORDS[options.lang];
  const folder = folderProblem(options.dir);
  if (folder) {
    console.log(folder[options.lang]);
    return 1;
  }
  const file = path.join(options.dir, `${exercise.stage}.ts`);
  const stageFile = stageFileOf(exercise);
  const stageText = readFileSync(stageFile, "utf8");
  const starter = await starterOf(exercise, stageText, { destDir: options.dir, lang: options.lang });
  const otherLanguageStarter = await starterOf(exercise, stageText, { destDir: options.dir, lang: options.lang === "ja" ? "en" : "ja" });

  const current = existsSync(file) ? readFileSync(file, "utf8") : undefined;
  if (current === starter) {
    console.log(words.fresh(shown(file)));
    return 0;
  }
  // A fresh copy in the other language holds no work: it is simply made again.
  if (current !== undefined && current !== otherLanguageStarter) {
    const backup = `${file.slice(0, -3)}.${new Date().toISOString().replace(/[:.]/g, "-")}.ts.bak`;
    if (!options.force) {
      const answer = askPerson(words.question(shown(file), shown(backup)));
      if (answer === undefined) {
        console.log(words.refused(shown(file), exercise.stage + dirOption(options.dir)));
        return 1;
      }
      if (!(await answer)) {
        console.log(words.kept(shown(file)));
        return 0;
      }
    }
    copyFileSync(file, backup);
    console.log(words.backedUp(shown(backup)));
  }

  mkdirSync(options.dir, { recursive: true });
  writeEditorConfig(options.dir);
  writeFileSync(file, starter);
  forgetHints(options.dir, exercise.stage);
  for (const line of nextSteps(exercise, file, stageFile, options)) console.log(line);
  return 0;
}

function nextSteps(exercise: Exercise, file: string, stageFile: string, { lang, dir }: { lang: Lang; dir: string }): string[] {
  const words = WORDS[lang];
  const page = lang === "ja" ? `docs/ja/exercises/${exercise.stage}.md` : `docs/exercises/${exercise.stage}.md`;
  return [
    words.made(shown(file), shown(stageFile)),
    "",
    words.todo(exercise.stage),
    ...exercise.takeOut.map((part) => `  - ${"function" in part ? `${part.function}()` : part.entries}: ${part.task[lang]}`),
    "",
    words.task(page),
    words.check(exercise.stage + dirOption(dir)),
    words.run(shown(file)),
  ];
}

/**
 * workshop/ is not in the project's tsconfig (a half-written copy must not break
 * `npm run typecheck`), so it gets its own: an editor then checks the copy with the
 * project's settings, and `npx tsc -p workshop` does the same on the command line.
 */
function writeEditorConfig(dir: string): void {
  const config = path.join(dir, "tsconfig.json");
  if (existsSync(config)) return;
  const base = path.relative(dir, path.join(REPO_ROOT, "tsconfig.json")).split(path.sep).join("/");
  writeFileSync(config, JSON.stringify({ extends: base, include: ["*.ts"] }, null, 2) + "\n");
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(await main(process.argv.slice(2)));
}
