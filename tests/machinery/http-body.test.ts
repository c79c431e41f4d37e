// lib/machinery/http-body.ts: a web response's body read safely. readBody decompresses what
// the server says it compressed, refuses by name what it cannot decode, and counts the 10 MB
// cap after decompression, so neither a gzip bomb nor an endless page is ever buffered whole;
// decode reads the bytes in the charset the server names; describeBinary puts what is not
// text in one line. The responses are real ones, from a server on 127.0.0.1, except where a
// test counts how much of a body was read: there a stream stands in for the response.
import type http from "node:http";
import { get } from "node:http";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { decode, describeBinary, MAX_BODY_BYTES, readBody } from "../../lib/machinery/http-body.ts";
import { eventually, pumpUntilClosed, useLocalServer } from "../helpers.ts";

const MB = 1024 * 1024;
// 256 KB that compress poorly (a hash chain), so a body cut in half still holds half its data.
const PAYLOAD = Buffer.concat(
  Array.from({ length: 8192 }, (_, i) => createHash("sha256").update(String(i)).digest()),
);
// One gzip member of 1 MB of zeros (about 1 KB); members one after another are one valid gzip stream.
const ZEROS_GZIPPED = zlib.gzipSync(Buffer.alloc(MB));
const compress: Record<string, (data: Buffer) => Buffer> = {
  identity: (data) => data,
  gzip: (data) => zlib.gzipSync(data),
  deflate: (data) => zlib.deflateSync(data),
  br: (data) => zlib.brotliCompressSync(data),
};

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
// What the server does for the current test's request.
let serve: Handler = (_req, res) => void res.end();
const local = useLocalServer((req, res) => serve(req, res));

/** Whether the server has seen the reader hang up (or the response end); set per response, so no other test's connection can set it. */
let closed = () => false;

/** The response to one GET of the local server, as web_fetch receives it: headers read, body not yet. */
async function respond(handler: Handler): Promise<http.IncomingMessage> {
  let ended = false;
  closed = () => ended;
  serve = (req, res) => {
    res.on("close", () => (ended = true));
    handler(req, res);
  };
  return new Promise((resolve, reject) => get(`${local.url}/`, resolve).on("error", reject));
}

/** A body of `data` sent with these headers, whole, then the response ends. */
const sent = (headers: http.OutgoingHttpHeaders, data: Buffer | string = ""): Handler => (_req, res) => void res.writeHead(200, headers).end(data);

describe("readBody", () => {
  it.each([
    ["no Content-Encoding", undefined, "identity"],
    ["identity", "identity", "identity"],
    ["gzip", "gzip", "gzip"],
    ["x-gzip", "x-gzip", "gzip"],
    ["deflate", "deflate", "deflate"],
    ["br", "br", "br"],
    ["the name in capitals, with spaces", " GZIP ", "gzip"],
  ])("gives the body as it was before compression: %s", async (_name, header, compression) => {
    const headers = header === undefined ? {} : { "content-encoding": header };
    const response = await respond(sent(headers, compress[compression](PAYLOAD)));
    const { bytes, complete } = await readBody(response);
    expect(complete).toBe(true);
    expect(bytes.equals(PAYLOAD)).toBe(true);
  });

  it.each(["zstd", "compress"])("refuses a body encoded as %s, by name, and hangs up without reading it", async (encoding) => {
    const response = await respond((_req, res) => {
      res.writeHead(200, { "content-encoding": encoding });
      res.write("\x28\xb5\x2f\xfd"); // and never ends
    });
    await expect(readBody(response)).rejects.toThrow(
      new Error(`the server sent the body encoded as "${encoding}", which web_fetch cannot decode (it asks for gzip, deflate or br)`),
    );
    expect(await eventually(closed, 1000)).toBe(true);
  });

  it.each([
    ["gzip", "incorrect header check"],
    ["deflate", "incorrect header check"],
    ["br", "Decompression failed"],
  ])("refuses a body that is not %s as it claims, naming the encoding", async (encoding, why) => {
    const response = await respond(sent({ "content-encoding": encoding }, "this is not compressed at all"));
    await expect(readBody(response)).rejects.toThrow(new Error(`the body could not be decoded as ${encoding}: ${why}`));
  });

  it("refuses a gzip body spoiled in the middle, naming the encoding", async () => {
    const spoiled = Buffer.from(zlib.gzipSync(PAYLOAD));
    spoiled.fill(0xff, 1000, 1100);
    const response = await respond(sent({ "content-encoding": "gzip" }, spoiled));
    await expect(readBody(response)).rejects.toThrow(/^the body could not be decoded as gzip: \S/);
  });

  it.each(["identity", "gzip"])("passes on a connection broken mid-body (%s) as the network error it is, not as a decoding error", async (encoding) => {
    const response = await respond((req, res) => {
      res.writeHead(200, { "content-length": "100000", "content-encoding": encoding });
      res.write(compress[encoding](Buffer.alloc(100_000, 7)).subarray(0, 50));
      setTimeout(() => req.socket.destroy(), 50);
    });
    const error = await readBody(response).then(() => undefined, (thrown: Error & { code?: string }) => thrown);
    expect(error?.code).toBe("ECONNRESET");
    expect(error?.message).not.toMatch(/decoded/);
  });

  it.each(["gzip", "deflate", "br"])("gives what arrived of a cut-short %s body, and nothing of an empty one, as a browser does", async (encoding) => {
    const whole = compress[encoding](PAYLOAD);
    const half = await readBody(await respond(sent({ "content-encoding": encoding }, whole.subarray(0, whole.length / 2))));
    expect(half.complete).toBe(true);
    expect(half.bytes.length).toBeGreaterThan(PAYLOAD.length / 4);
    expect(half.bytes.length).toBeLessThan(PAYLOAD.length);
    expect(PAYLOAD.subarray(0, half.bytes.length).equals(half.bytes)).toBe(true);

    const empty = await readBody(await respond(sent({ "content-encoding": encoding })));
    expect(empty).toEqual({ bytes: Buffer.alloc(0), complete: true });
  });

  describe("the 10 MB cap, counted after decompression", () => {
    it("takes a body of exactly 10 MB whole, and cuts one byte more at 10 MB", async () => {
      const exact = await readBody(await respond(sent({}, Buffer.alloc(MAX_BODY_BYTES, "a"))));
      expect(exact.complete).toBe(true);
      expect(exact.bytes.length).toBe(10 * MB);

      const over = await readBody(await respond(sent({}, Buffer.alloc(MAX_BODY_BYTES + 1, "a"))));
      expect(over.complete).toBe(false);
      expect(over.bytes.length).toBe(10 * MB);
    });

    // #region gzip-cap
    it("cuts a gzip body of 10 KB that stands for 10 MB and one byte, at 10 MB", async () => {
      const packed = zlib.gzipSync(Buffer.alloc(MAX_BODY_BYTES + 1));
      expect(packed.length).toBeLessThan(20_000);
      const { bytes, complete } = await readBody(await respond(sent({ "content-encoding": "gzip" }, packed)));
      expect(complete).toBe(false);
      expect(bytes.length).toBe(MAX_BODY_BYTES);
    });
    // #endregion gzip-cap

    it("stops a gzip bomb that never ends at 10 MB of zeros, having read a few dozen of its members, and closes it", async () => {
      // A stream stands in for the response here, so the members it had to give can be counted.
      let members = 0;
      const bomb = Object.assign(
        new Readable({
          read() {
            members++;
            this.push(ZEROS_GZIPPED);
          },
        }),
        { headers: { "content-encoding": "gzip" } },
      );
      const { bytes, complete } = await readBody(bomb as unknown as http.IncomingMessage);
      expect(complete).toBe(false);
      expect(bytes.equals(Buffer.alloc(MAX_BODY_BYTES))).toBe(true);
      // 11 members hold the 10 MB; the rest is what the streams between hold at a time (32 on Node 20).
      expect(members).toBeGreaterThanOrEqual(11);
      expect(members).toBeLessThan(200);
      expect(await eventually(() => bomb.destroyed, 1000)).toBe(true);
    });

    it("stops a gzip bomb from a real server at once, and hangs up", async () => {
      const response = await respond((_req, res) => {
        res.writeHead(200, { "content-encoding": "gzip" });
        pumpUntilClosed(res, ZEROS_GZIPPED, () => {});
      });
      const started = Date.now();
      const { bytes, complete } = await readBody(response);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(complete).toBe(false);
      expect(bytes.length).toBe(MAX_BODY_BYTES);
      expect(await eventually(closed, 1000)).toBe(true);
    });

    // #region endless-body
    it("cuts an endless plain body off at 10 MB, and hangs up", async () => {
      const response = await respond((_req, res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        pumpUntilClosed(res, "0123456789abcdef".repeat(4096), () => {});
      });
      const { bytes, complete } = await readBody(response);
      expect(complete).toBe(false);
      expect(bytes.length).toBe(MAX_BODY_BYTES);
      expect(bytes.subarray(0, 32).toString()).toBe("0123456789abcdef0123456789abcdef");
      expect(await eventually(closed, 1000)).toBe(true);
    });
    // #endregion endless-body
  });
});

describe("decode", () => {
  const utf8 = Buffer.from("Café ☕ 日本語");

  it.each(["text/html", "text/html; charset=utf-8", "text/html; charset=UTF-8", 'text/html; charset="utf-8"', "application/json;charset=utf8"])(
    "reads UTF-8 when the type says so or names no charset: %s",
    (type) => {
      expect(decode(utf8, type)).toBe("Café ☕ 日本語");
    },
  );

  it.each(["iso-8859-1", "latin1", "windows-1252", "ISO-8859-1", "us-ascii"])(
    "reads %s as browsers do, as windows-1252: é, and the euro sign and curly quotes of 0x80 to 0x9f",
    (charset) => {
      const bytes = Buffer.from([0x43, 0x61, 0x66, 0xe9, 0x20, 0x80, 0x35, 0x20, 0x93, 0x71, 0x94, 0x20, 0x85, 0x9f]);
      expect(decode(bytes, `text/html; charset=${charset}`)).toBe("Café €5 “q” …Ÿ");
    },
  );

  it("reads every byte from 0x80 to 0x9f as windows-1252 has it, the five it leaves undefined as themselves", () => {
    // Node's own TextDecoder gets these wrong since 20.18.3 and 22.13.0 (nodejs/node#60888).
    const bytes = Buffer.from(Array.from({ length: 32 }, (_, i) => 0x80 + i));
    expect(decode(bytes, "text/plain; charset=windows-1252")).toBe("€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8dŽ\x8f\x90‘’“”•–—˜™š›œ\x9džŸ");
  });

  it("reads shift_jis, whatever the parameters around it", () => {
    const bytes = Buffer.from([0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea]); // 日本語
    expect(decode(bytes, "text/html; charset=shift_jis")).toBe("日本語");
    expect(decode(bytes, 'text/html; charset="Shift_JIS"; format=flowed')).toBe("日本語");
  });

  it("falls back to UTF-8 for a charset it does not know", () => {
    expect(decode(utf8, "text/html; charset=x-made-up")).toBe("Café ☕ 日本語");
  });

  it("shows bytes that are not UTF-8 as U+FFFD rather than failing", () => {
    expect(decode(Buffer.from([0x61, 0xff, 0x62]), "text/plain")).toBe("a\uFFFDb");
  });
});

describe("describeBinary", () => {
  it.each([
    ["application/pdf", "1234", "a PDF document (application/pdf, 1,234 bytes)"],
    ["image/png", undefined, "an image (image/png, size not given)"],
    ["image/svg+xml", "512", "an image (image/svg+xml, 512 bytes)"],
    ["audio/mpeg", "0", "audio or video (audio/mpeg, 0 bytes)"],
    ["video/mp4", "12345678", "audio or video (video/mp4, 12,345,678 bytes)"],
    ["application/octet-stream", "21", "a binary file (application/octet-stream, 21 bytes)"],
    ["application/zip", "-1", "a binary file (application/zip, size not given)"],
    ["", "many", "a binary file (no content type, size not given)"],
  ])("describes %s of length %s as %s", (mime, length, description) => {
    expect(describeBinary(mime, length)).toBe(description);
  });
});
