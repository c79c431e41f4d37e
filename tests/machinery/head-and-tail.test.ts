// lib/machinery/head-and-tail.ts: long text kept short. clip cuts a text to about `max`
// characters, keeping its head and tail (a command's error is at its end) or its head, and
// says what it cut; it never returns more than it was given, however small `max` is (a budget
// shared by many blocks can fall under the marker's own length). HeadAndTail does the same to
// a stream as it arrives, so endless output holds a bounded amount of memory, and a character
// whose bytes arrive in two chunks stays one character.
import { describe, expect, it } from "vitest";
import { clip, cutMarker, HeadAndTail } from "../../lib/machinery/head-and-tail.ts";

/** A text of `length` characters (up to a million) that does not repeat for 20,480 of them: where a piece came from shows. */
const ALL = Array.from({ length: 1_000_000 }, (_, i) => String.fromCharCode(0x4e00 + (i % 0x5000))).join("");
const numbered = (length: number) => ALL.slice(0, length);

describe("clip", () => {
  it("returns a text of at most max characters as it is", () => {
    expect(clip("", 0)).toBe("");
    expect(clip("abc", 3)).toBe("abc");
    expect(clip("abc", 3, "head")).toBe("abc");
  });

  it("keeps the head and the tail, with a marker saying how much was cut out of how much", () => {
    const text = `START${"a".repeat(100_000)}END`;
    const clipped = clip(text, 30_000);
    expect(clipped.length).toBeLessThanOrEqual(30_000);
    const [head, tail] = clipped.split(/\n\.\.\. \[\d+ characters cut from the middle, 100008 in all\] \.\.\.\n/);
    expect(head.startsWith("START")).toBe(true);
    expect(tail.endsWith("END")).toBe(true);
    // The two ends as they were, and the marker counts exactly what is missing.
    expect(text.startsWith(head) && text.endsWith(tail)).toBe(true);
    expect(clipped).toBe(head + cutMarker(text.length - head.length - tail.length, text.length) + tail);
    expect(head.length + tail.length).toBeGreaterThan(29_000);
  });

  it("keeps only the head when asked, saying how many characters follow", () => {
    expect(clip("abcdefghij".repeat(10), 40, "head")).toBe(`${"abcdefghij".repeat(4)} … [60 more characters]`);
  });

  it("never returns more than it was given, for any max, near and below the marker's length", () => {
    const longer: string[] = [];
    for (const max of [0, 1, 2, 10, 30, 50, 60, 80, 98, 99, 100, 101, 102, 110, 120, 150, 160, 200, 2000]) {
      for (const length of [max + 1, max + 2, max + 10, max + 25, max + 60, 2 * max + 1, 60, 100, 150, 1000, 100_000]) {
        if (length <= max) continue;
        const text = numbered(length);
        for (const keep of ["head and tail", "head"] as const) {
          const clipped = clip(text, max, keep);
          if (clipped.length > text.length) longer.push(`max ${max}, ${length} characters, ${keep}: ${clipped.length}`);
        }
      }
    }
    expect(longer).toEqual([]);
  });

  it("with max of 100 or more, head and tail stay within max", () => {
    for (const max of [100, 101, 150, 1000, 30_000]) {
      for (const length of [max + 1, max + 100, 10 * max, 1_000_000]) {
        expect(clip(numbered(length), max).length, `max ${max}, ${length} characters`).toBeLessThanOrEqual(max);
      }
    }
  });
});

describe("HeadAndTail", () => {
  it("keeps a short stream whole, with no marker", () => {
    const sink = new HeadAndTail(1000);
    sink.add(Buffer.from("one\n"));
    sink.add("two\n");
    expect(sink.text()).toBe("one\ntwo\n");
  });

  it("keeps both ends of a long stream with the marker, as clip keeps of the whole", () => {
    const text = `START${numbered(100_000)}END`;
    for (const size of [7, 4096, 65_536, text.length]) {
      const sink = new HeadAndTail(30_000);
      for (let at = 0; at < text.length; at += size) sink.add(Buffer.from(text.slice(at, at + size)));
      const kept = sink.text();
      expect(kept, `chunks of ${size}`).toBe(clip(text, 30_000));
      expect(kept.startsWith("START") && kept.endsWith("END")).toBe(true);
    }
  });

  // #region bounded
  it("holds about max characters however much arrives: 50 MB in chunks", () => {
    const max = 30_000;
    const sink = new HeadAndTail(max);
    const chunk = Buffer.from("y\n".repeat(32_768)); // 64 kB
    sink.add(Buffer.from("FIRST\n"));
    let total = 6;
    let held = 0;
    for (let i = 0; i < 800; i++) {
      sink.add(chunk);
      total += chunk.length;
      // What it holds as it goes: every text it keeps, whatever it names them.
      held = Math.max(held, Object.values(sink).reduce((sum: number, value) => sum + (typeof value === "string" ? value.length : 0), 0));
    }
    sink.add(Buffer.from("LAST\n"));
    total += 5;
    expect(total).toBeGreaterThan(50_000_000);
    expect(held).toBeLessThanOrEqual(max);
    const kept = sink.text();
    expect(kept.length).toBeLessThanOrEqual(max);
    expect(kept.startsWith("FIRST\ny\n")).toBe(true);
    expect(kept.endsWith("y\nLAST\n")).toBe(true);
    expect(kept).toContain(` in all] ...\n`);
    expect(kept).toMatch(new RegExp(`\\[\\d+ characters cut from the middle, ${total} in all\\]`));
  });
  // #endregion bounded

  // #region split-character
  it("keeps a character whose bytes arrive in two chunks whole, at every split", () => {
    const text = "é 中 😀 ü€𝄞";
    const bytes = Buffer.from(text);
    for (let split = 1; split < bytes.length; split++) {
      const sink = new HeadAndTail(1000);
      sink.add(bytes.subarray(0, split));
      sink.add(bytes.subarray(split));
      expect(sink.text(), `split at byte ${split}`).toBe(text);
    }
    // And one byte at a time.
    const sink = new HeadAndTail(1000);
    for (const byte of bytes) sink.add(Buffer.from([byte]));
    expect(sink.text()).toBe(text);
    expect(sink.text()).not.toContain("\uFFFD");
  });
  // #endregion split-character

  it("shows a character cut short at the very end of the stream as one replacement character, not nothing", () => {
    const sink = new HeadAndTail(1000);
    sink.add(Buffer.from([0x61, 0xe4, 0xb8])); // "a", then two of 中's three bytes
    expect(sink.text()).toBe("a\uFFFD");
  });

  it("keeps a split character whole in the part it keeps of a long stream", () => {
    const sink = new HeadAndTail(300);
    const bytes = Buffer.from(`${"é".repeat(1000)}😀end`);
    for (let at = 0; at < bytes.length; at += 3) sink.add(bytes.subarray(at, at + 3)); // é is 2 bytes, 😀 4: most chunks end mid-character
    const kept = sink.text();
    expect(kept).not.toContain("\uFFFD");
    expect(kept.startsWith("é".repeat(100))).toBe(true);
    expect(kept.endsWith("é😀end")).toBe(true);
  });
});

describe("never half a character", () => {
  // A lone surrogate is refused by the API ("no low surrogate in string"): the session would end.
  const halved = (text: string) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

  it("clip moves its cuts off an emoji's two halves, in both modes and at every size", () => {
    const text = `x${"😀".repeat(400)}y`;
    for (let max = 100; max < 500; max++) {
      for (const keep of ["head", "head and tail"] as const) expect(halved(clip(text, max, keep)), `${keep} ${max}`).toBe(false);
    }
  });

  it("HeadAndTail keeps whole characters at both ends, and a text() asked mid-stream breaks nothing after it", () => {
    for (const max of [150, 151, 300, 301]) {
      const kept = new HeadAndTail(max);
      kept.add(`x${"😀".repeat(500)}`);
      expect(halved(kept.text()), String(max)).toBe(false);
    }
    const mid = new HeadAndTail(300);
    mid.add(Buffer.from([0x63, 0xc3]));
    expect(mid.text()).toBe("c\ufffd"); // not arrived yet: one replacement character for now
    mid.add(Buffer.from([0xa9]));
    expect(mid.text()).toBe("cé");
  });
});
