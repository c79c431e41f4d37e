// The order in which `npm test` starts its files: the slowest first, so that the last file to
// finish is a short one. Four files run at a time, and a 14-second file that starts when the
// others are nearly done makes everyone wait for it alone.
//
// Vitest does this by itself from its cache of the last run (node_modules/.vite). A fresh
// clone has no such cache, and Vitest then starts the largest files first, which are not the
// slowest: the files that start real processes came last, and a newcomer's first `npm test`
// took 30-31 s where the same suite in the order below takes about 24-25 s. So a file the cache
// does not know takes its time from the committed figures of `npm run bench`, which records
// how long each file took (bench/results.json, tests.files).
import { readFileSync } from "node:fs";
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** Milliseconds per test file, by its path from the repository's root ("tests/x.test.ts"). */
export type Durations = Record<string, number>;

/** The per-file times in the committed bench figures; none if the file is missing or older. */
export function committedDurations(resultsFile: string): Durations {
  try {
    const results = JSON.parse(readFileSync(resultsFile, "utf8")) as { tests?: { files?: Durations } | null };
    return results.tests?.files ?? {};
  } catch {
    return {};
  }
}

/**
 * Files in the order to start them: those no figure knows first (most likely a new file,
 * the one being written), then the rest from the slowest down. The order of equal files is kept.
 */
export function slowestFirst<T>(files: T[], durationOf: (file: T) => number | undefined): T[] {
  const unknown = files.filter((file) => durationOf(file) === undefined);
  const known = files.filter((file) => durationOf(file) !== undefined);
  return [...unknown, ...known.sort((a, b) => durationOf(b)! - durationOf(a)!)];
}

export class SlowestFirst extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const committed = committedDurations(path.join(root, "bench", "results.json"));
    return slowestFirst(files, (file) => {
      const relative = path.relative(root, file.moduleId).split(path.sep).join("/");
      // The cache's key is the project's name (none here), a colon and the relative path.
      return this.ctx.cache.getFileTestResults(`${file.project.name}:${relative}`)?.duration ?? committed[relative];
    });
  }
}
