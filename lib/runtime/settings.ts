// The agent's settings files, and the person's trust in a project. Two stages read them (s08's
// tools from outside, s17's rules and hooks), and neither lesson is in how a file is read:
// - `.agent/settings.json` in the workspace is the project's: anyone who can commit to the
//   project writes it. `~/.agent/settings.json` in the home folder is the person's own: a
//   project cannot write there.
// - A file is read only when it is a regular file of at most MAX_SETTINGS_BYTES
//   (readSettingsFile, lib/runtime/env.ts): a FIFO would block the start for ever, a link to
//   /dev/zero would fill memory. A file that is not JSON is named with its line and column.
// - What the person allowed of a project is kept in their own file, under `trustedProjects`
//   and the project's folder, as the entries were when they allowed them: an entry the project
//   changes later (a pull, a branch) is new again, and asked about again.
import { realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { writeAtomically } from "../machinery/atomic-write.ts";
import { readSettingsFile } from "./env.ts";

export const SETTINGS_FILE = ".agent/settings.json";
export const MAX_SETTINGS_BYTES = 256 * 1024; // a settings file is small: a FIFO, a device or a huge file is refused unread

/** The person's own settings, in their home, where a project cannot write. */
export const PERSONAL = { file: () => path.join(os.homedir(), SETTINGS_FILE), name: `~/${SETTINGS_FILE}` };

type Entries = Record<string, unknown>;
type Personal = { trustedProjects?: Record<string, unknown> };
const isObject = (value: unknown): value is Entries => typeof value === "object" && value !== null && !Array.isArray(value);

/** A settings file's JSON, undefined when there is none; only a regular file, of at most MAX_SETTINGS_BYTES, is read. */
export function readJson(file: string, name: string): { data?: unknown; problem?: string } {
  let text: string | undefined;
  try {
    text = readSettingsFile(file, MAX_SETTINGS_BYTES);
    return { data: text === undefined ? undefined : JSON.parse(text) };
  } catch (error) {
    const { message } = error as Error;
    return { problem: text === undefined ? message.replace(file, name) : `${name} is not valid JSON: ${jsonError(text, error as Error)}` };
  }
}

/** Where JSON.parse stopped, as a line and a column a person can find. */
function jsonError(text: string, error: Error): string {
  const position = Number(/at position (\d+)/.exec(error.message)?.[1]);
  const reason = error.message.replace(/ in JSON at position \d+.*$/, "");
  if (!Number.isInteger(position)) return reason;
  const before = text.slice(0, position).split("\n");
  return `line ${before.length}, column ${before.at(-1)!.length + 1}: ${reason}`;
}

/** What the person allowed of the project in folder `root`, as its entries were then ({} when nothing), and a problem reading their file. */
export function trustedProject(root: string): { entries: Entries; problem?: string } {
  const { data, problem } = readJson(PERSONAL.file(), PERSONAL.name);
  const entries = isObject(data) ? (data as Personal).trustedProjects?.[root] : undefined;
  return { entries: isObject(entries) ? entries : {}, problem };
}

/**
 * Keep the person's yes in their own file: `entries` take the place of the same keys in the
 * project's record (a key set to undefined goes), and everything else in the file stays.
 * Throws with the reason when the file cannot be read or written, or would grow past
 * MAX_SETTINGS_BYTES; it is then left as it was.
 */
export function rememberTrusted(root: string, entries: Entries): void {
  const { data = {}, problem } = readJson(PERSONAL.file(), PERSONAL.name);
  if (problem || !isObject(data)) throw new Error(problem ?? `${PERSONAL.name} is not an object`);
  const projects = isObject(data.trustedProjects) ? data.trustedProjects : {};
  const before = isObject(projects[root]) ? projects[root] : {};
  const personal = { ...data, trustedProjects: { ...projects, [root]: { ...before, ...entries } } };
  const text = `${JSON.stringify(personal, null, 2)}\n`;
  // A file over the limit would be refused at the next start, and the person's own rules with it.
  const size = Buffer.byteLength(text);
  if (size > MAX_SETTINGS_BYTES) throw new Error(`${PERSONAL.name} would be ${size} bytes, more than a settings file may be (${MAX_SETTINGS_BYTES})`);
  const home = realpathSync(os.homedir());
  writeAtomically(PERSONAL.file(), text, PERSONAL.name, { root: home, isInside: inHome }, { createFolders: true });
}

/** Inside `root` by its path: a `..` part leads out (`..notes` is a name). */
function inHome(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}
