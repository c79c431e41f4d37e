// Long text, kept short: the first and the last part, with a marker saying what was cut.
//
// What `output += chunk` gets wrong, and what this does instead (docs: Under the hood, "Head
// and tail"):
// - `yes`, or a build that loops, prints until memory runs out: a string that grows with every
//   chunk has no end. HeadAndTail keeps a fixed amount from each end as the stream arrives.
// - keeping only the head loses the end, which is where a command's error usually is.
// - `chunk.toString()` on each piece splits a character whose bytes arrive in two chunks into
//   two replacement characters. A StringDecoder keeps the bytes of a split character until
//   the rest arrives.
import { StringDecoder } from "node:string_decoder";

/** What stands where the middle was cut: how much, out of how much. */
export const cutMarker = (cut: number, total: number) => `\n... [${cut} characters cut from the middle, ${total} in all] ...\n`;

// #region clip
/**
 * Text cut to at most about `max` characters, with a note of what was cut: the head and the
 * tail when the end matters (a command's output often ends with its error), or the head.
 * Never longer than it was given.
 */
export function clip(text: string, max: number, keep: "head and tail" | "head" = "head and tail"): string {
  if (text.length <= max) return text;
  let clipped: string;
  if (keep === "head") clipped = `${text.slice(0, max)} … [${text.length - max} more characters]`;
  else {
    const half = Math.max(0, Math.floor((max - 100) / 2)); // the rest is room for the marker
    clipped = text.slice(0, half) + cutMarker(text.length - 2 * half, text.length) + text.slice(text.length - half);
  }
  // Just over `max`, or a `max` smaller than the note itself: the note would be longer than
  // what it replaces, so the text stays whole.
  return clipped.length < text.length ? clipped : text;
}
// #endregion clip

// #region head-and-tail
/**
 * Keeps the head and the tail of a stream as it arrives, so endless output cannot fill
 * memory: at most about `max` characters in all, as clip would keep of the whole.
 */
export class HeadAndTail {
  private head = "";
  private tail = "";
  private total = 0;
  private readonly keep: number;
  private readonly decoder = new StringDecoder("utf8");

  constructor(max: number) {
    this.keep = Math.max(1, Math.floor((max - 100) / 2)); // the rest is room for the marker
  }

  add(chunk: Buffer | string): void {
    let text = typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    this.total += text.length;
    const roomInHead = this.keep - this.head.length;
    if (roomInHead > 0) {
      this.head += text.slice(0, roomInHead);
      text = text.slice(roomInHead);
    }
    this.tail = (this.tail + text).slice(-this.keep);
  }

  text(): string {
    const rest = this.decoder.end(); // a character cut short at the very end
    if (rest) this.add(rest);
    const cut = this.total - this.head.length - this.tail.length;
    return cut > 0 ? this.head + cutMarker(cut, this.total) + this.tail : this.head + this.tail;
  }
}
// #endregion head-and-tail
