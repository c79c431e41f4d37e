// Long text, kept short: the first and the last part, with a marker saying what was cut.
//
// What `output += chunk` gets wrong, and what this does instead (docs: Under the hood, "Head
// and tail"):
// - `yes`, or a build that loops, prints until memory runs out: a string that grows with every
//   chunk has no end. HeadAndTail keeps a fixed amount from each end as the stream arrives.
// - keeping only the head loses the end, which is where a command's error usually is.
// - `chunk.toString()` on each piece splits a character whose bytes arrive in two chunks into
//   two replacement characters. HeadAndTail keeps the bytes of a split character until the
//   rest arrives.

/** What stands where the middle was cut: how much, out of how much. */
export const cutMarker = (cut: number, total: number) => `\n... [${cut} characters cut from the middle, ${total} in all] ...\n`;

// A character outside the Basic Multilingual Plane (an emoji) is two UTF-16 units in JavaScript.
// A cut between them leaves half a character, which the API refuses ("no low surrogate in
// string"): a cut point is moved off such a pair.
const isHigh = (text: string, at: number) => at > 0 && at <= text.length && /[\ud800-\udbff]/.test(text[at - 1]);
/** Where to end a head of about `end` units without halving a character. */
const headEnd = (text: string, end: number) => (isHigh(text, end) ? end - 1 : end);
/** Where to start a tail of about `start` without halving a character. */
const tailStart = (text: string, start: number) => (isHigh(text, start) ? start + 1 : start);

// #region clip
/**
 * Text cut to at most about `max` characters, with a note of what was cut: the head and the
 * tail when the end matters (a command's output often ends with its error), or the head.
 * Never longer than it was given.
 */
export function clip(text: string, max: number, keep: "head and tail" | "head" = "head and tail"): string {
  if (text.length <= max) return text;
  let clipped: string;
  if (keep === "head") {
    const end = headEnd(text, max);
    clipped = `${text.slice(0, end)} … [${text.length - end} more characters]`;
  } else {
    const half = Math.max(0, Math.floor((max - 100) / 2)); // the rest is room for the marker
    const [end, start] = [headEnd(text, half), tailStart(text, text.length - half)];
    clipped = text.slice(0, end) + cutMarker(start - end, text.length) + text.slice(start);
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
  /** The bytes of a character whose other bytes have not arrived yet. */
  private pending = Buffer.alloc(0);

  constructor(max: number) {
    this.keep = Math.max(1, Math.floor((max - 100) / 2)); // the rest is room for the marker
  }

  add(chunk: Buffer | string): void {
    let text: string;
    if (typeof chunk === "string") text = chunk;
    else {
      const bytes = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
      const complete = completeLength(bytes);
      text = bytes.toString("utf8", 0, complete);
      this.pending = Buffer.from(bytes.subarray(complete));
    }
    this.total += text.length;
    const roomInHead = this.keep - this.head.length;
    if (roomInHead > 0) {
      const end = headEnd(text, roomInHead);
      this.head += text.slice(0, end);
      text = text.slice(end);
    }
    const tail = this.tail + text;
    this.tail = tail.slice(tailStart(tail, Math.max(0, tail.length - this.keep)));
  }

  /**
   * What was kept so far. It may be asked at any time: the bytes of a character not complete
   * yet stay for the next chunk, and show as one replacement character meanwhile (at the end
   * of a stream: a character cut short).
   */
  text(): string {
    const unfinished = this.pending.length > 0 ? "\ufffd" : "";
    const cut = this.total - this.head.length - this.tail.length;
    return (cut > 0 ? this.head + cutMarker(cut, this.total) + this.tail : this.head + this.tail) + unfinished;
  }
}
// #endregion head-and-tail

/** How many bytes of `bytes` end on a whole character: a character whose bytes run past the end is left out. */
function completeLength(bytes: Buffer): number {
  // The start of the last character is at most 3 bytes back; continuation bytes are 10xxxxxx.
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back];
    if ((byte & 0xc0) === 0x80) continue;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? bytes.length - back : bytes.length;
  }
  return bytes.length; // only continuation bytes: not UTF-8, decoded as they are
}
