// Test files share a worker process (isolate: false in vitest.config.ts): loading the SDK,
// msw and the other packages once per worker instead of once per file is most of what the
// suite used to spend. What a file may change for itself is put back before the next one:
// its own copies of the stages and lib/ (a stage reads its settings, such as the approval
// mode, when it loads), the environment, the working directory and the mocks. And no test
// reads or writes the real home folder (s12's global memory lives there): HOME is a
// temporary folder of the file's own.
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, vi } from "vitest";

vi.resetModules();
// Each file's copies of the stages add their own exit, signal and EPIPE handlers to this
// shared process: more than Node's warning threshold of ten, and expected.
for (const emitter of [process, process.stdout, process.stderr]) emitter.setMaxListeners(0);
const env = { ...process.env };
const cwd = process.cwd();
const home = realpathSync(mkdtempSync(path.join(os.tmpdir(), "workbook-home-")));
process.env.HOME = home;
// Nor the workbook's own .env: a developer's key or approval mode there must not change a test.
process.env.WORKBOOK_ENV_FILE = path.join(home, "no-settings.env");
writeFileSync(process.env.WORKBOOK_ENV_FILE, "");

afterAll(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
  Object.assign(process.env, env);
  process.chdir(cwd);
  rmSync(home, { recursive: true, force: true });
});
