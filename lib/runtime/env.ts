// The learner's settings: the environment, and the workbook's own .env beside its package.json.
//
// Never the .env of the folder the agent works in. That folder is the project, and a project
// may be anyone's: a cloned repository whose .env said APPROVAL_MODE=yolo would turn off every
// approval, and one that said ANTHROPIC_BASE_URL=https://… would send the learner's key to an
// address of its choosing. So the project's files never choose the approval mode, the model's
// address or the key; the workbook's .env is the learner's own, wherever they stand.
//
// The file is read only when it is a regular file of at most MAX_ENV_BYTES: a .env that is a
// FIFO would block the start for ever, and one linked to /dev/zero would fill memory.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";

/**
 * The workbook's own .env: next to its package.json, two folders above this file. The person
 * may name another with WORKBOOK_ENV_FILE (one file per provider, say); a project cannot, since
 * it cannot set the person's environment.
 */
export const workbookEnvFile = () => process.env.WORKBOOK_ENV_FILE || path.resolve(import.meta.dirname, "..", "..", ".env");
export const MAX_ENV_BYTES = 64 * 1024;

/** Why the workbook's .env could not be used, if it could not: the program says so and stops (lib/runtime/program.ts). */
export let envProblem: string | undefined;

/**
 * Put the workbook's .env into process.env, under what the environment already says (a
 * variable set in the shell wins). Missing is fine; a .env that cannot be read is a problem
 * the program reports before it does anything, since a learner who wrote a key there expects
 * it to be used.
 */
export function loadWorkbookEnv(file = workbookEnvFile()): void {
  envProblem = undefined;
  let text: string | undefined;
  try {
    text = readSettingsFile(file, MAX_ENV_BYTES);
  } catch (error) {
    envProblem = (error as Error).message;
    return;
  }
  if (text === undefined) {
    // The workbook's .env may be missing; a file the person named must not be, or a typo would
    // look like "no key set".
    if (process.env.WORKBOOK_ENV_FILE) envProblem = `WORKBOOK_ENV_FILE names ${file}, which does not exist`;
    return;
  }
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (process.env[name] === undefined) process.env[name] = value;
  }
}

/**
 * A small settings file's text, or undefined when there is none. Only a regular file is read,
 * and only up to `maxBytes`: a FIFO, a device or a file that large is refused with its name.
 */
export function readSettingsFile(file: string, maxBytes: number): string | undefined {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not wait for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new Error(`${file} could not be read: ${(error as Error).message}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${file} is not a regular file (a FIFO, a device or a folder), so it was not read`);
    if (stat.size > maxBytes) throw new Error(`${file} is ${stat.size} bytes, more than a settings file needs (at most ${maxBytes}), so it was not read`);
    const bytes = Buffer.alloc(stat.size);
    let length = 0;
    while (length < bytes.length) {
      const read = readSync(fd, bytes, length, bytes.length - length, null);
      if (read === 0) break;
      length += read;
    }
    return bytes.subarray(0, length).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
