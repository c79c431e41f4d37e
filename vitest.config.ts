import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { memoryTmpdir } from "./tests/memory-tmpdir.ts";
import { SlowestFirst } from "./tests/sequencer.ts";

// Temporary folders in memory when the machine has room for them (tests/memory-tmpdir.ts says why).
const tmpdir = memoryTmpdir();

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    // Test files run in child processes, so a test may change directory into its own temporary
    // workspace (worker threads cannot chdir). Four at a time even on two cores: many tests
    // wait on a timer or a child process, not the processor, and more files fill that time (on
    // this project's two-core machine, twelve runs of each in turns: 27-32 s with four, 30-34 s with three).
    pool: "forks",
    maxWorkers: Math.max(4, availableParallelism() - 1),
    // Files share a worker, so the packages load once per worker; tests/setup.ts gives each
    // file fresh copies of the stages and puts back what a file changed.
    isolate: false,
    setupFiles: ["tests/setup.ts"],
    // The slowest files first, even in a fresh clone, which has no record of an earlier run.
    sequence: { sequencer: SlowestFirst },
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // What a learner's shell holds must not change a test: no key, no provider, no model.
    env: {
      ...(tmpdir ? { TMPDIR: tmpdir } : {}),
      ANTHROPIC_API_KEY: "", ANTHROPIC_BASE_URL: "", ANTHROPIC_AUTH_TOKEN: "", MODEL_ID: "", PROVIDER: "", OPENAI_API_KEY: "", OPENAI_BASE_URL: "",
    },
    silent: "passed-only",
  },
});
