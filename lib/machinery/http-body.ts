// The body of a web response, read safely: decompressed as the server says, decoded in its
// charset, and never larger than MAX_BODY_BYTES.
//
// What `await response.text()` gets wrong (docs: Under the hood, "Response bodies"): a page
// that never ends is buffered until memory runs out; a few hundred kilobytes of gzip, or a
// few hundred bytes of brotli, can stand for hundreds of megabytes (a "zip bomb"); a body
// that is not what its Content-Encoding claims throws an error nobody can read. Here the bytes are counted after decompression, as they come out
// of it, and the reading stops at the cap; a decoding error names the encoding.
import type http from "node:http";
import { pipeline, type Transform } from "node:stream";
import zlib from "node:zlib";

// #region read-body
export const MAX_BODY_BYTES = 10 * 1024 * 1024; // counted as the bytes arrive, after decompression, so an endless page is cut off

// The compressions the request asks for. Lenient at the end, as browsers are: an empty or
// cut-short body gives what arrived; a body that is not what it claims to be is an error.
const DECOMPRESSORS: Record<string, () => Transform> = {
  gzip: () => zlib.createGunzip({ finishFlush: zlib.constants.Z_SYNC_FLUSH }),
  "x-gzip": () => zlib.createGunzip({ finishFlush: zlib.constants.Z_SYNC_FLUSH }),
  deflate: () => zlib.createInflate({ finishFlush: zlib.constants.Z_SYNC_FLUSH }),
  br: () => zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }),
};

/**
 * The body, decompressed as the server says it is, at most MAX_BODY_BYTES. The bytes are
 * counted after decompression and as they come out of it: a few hundred kilobytes of gzip can
 * stand for hundreds of megabytes, and a page that never ends is cut off rather than buffered.
 */
export async function readBody(response: http.IncomingMessage): Promise<{ bytes: Buffer; complete: boolean }> {
  const encoding = response.headers["content-encoding"]?.trim().toLowerCase() || "identity";
  if (encoding !== "identity" && !Object.hasOwn(DECOMPRESSORS, encoding)) {
    response.destroy();
    throw new Error(`the server sent the body encoded as "${encoding}", which web_fetch cannot decode (it asks for gzip, deflate or br)`);
  }
  const body = encoding === "identity" ? response : pipeline(response, DECOMPRESSORS[encoding](), () => {});
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      // Leaving the loop destroys the stream and, through the pipeline, the response: the connection closes.
      if (size > MAX_BODY_BYTES) return { bytes: Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES), complete: false };
    }
  } catch (error) {
    // zlib names its own errors (Z_DATA_ERROR; ERR__ERROR_... for brotli); a network error is passed on as it is.
    if (/^(Z_|ERR__ERROR)/.test((error as { code?: string }).code ?? "")) {
      throw new Error(`the body could not be decoded as ${encoding}: ${(error as Error).message}`);
    }
    throw error;
  }
  return { bytes: Buffer.concat(chunks), complete: true };
}
// #endregion read-body

/** The body's bytes as text, in the charset the server names (UTF-8 when it names none, or one TextDecoder does not know). */
export function decode(bytes: Buffer, contentType: string): string {
  const charset = /charset="?([\w.:-]+)/i.exec(contentType)?.[1] ?? "utf-8";
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    return bytes.toString("utf8"); // a charset name TextDecoder does not know
  }
  const text = decoder.decode(bytes);
  // windows-1252 is also what latin1, iso-8859-1 and ascii mean on the web. Node's TextDecoder
  // (from 20.18.3 and 22.13.0: nodejs/node#60888) reads it as ISO-8859-1, so the euro sign,
  // curly quotes and dashes of bytes 0x80 to 0x9f come out as control characters; put them right.
  return decoder.encoding === "windows-1252" ? text.replace(/[\x80-\x9f]/g, (c) => WINDOWS_1252_80_9F[c.charCodeAt(0) - 0x80]) : text;
}

// What windows-1252's bytes 0x80 to 0x9f stand for (WHATWG's index); five are left undefined, as themselves.
const WINDOWS_1252_80_9F =
  "\u20ac\x81\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\x8d\u017d\x8f" +
  "\x90\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\x9d\u017e\u0178";

/** What a body that is not text is, in words: "a PDF document (application/pdf, 1,234 bytes)". */
export function describeBinary(mime: string, length: string | undefined): string {
  const kind =
    mime === "application/pdf" ? "a PDF document"
    : mime.startsWith("image/") ? "an image"
    : /^(audio|video)\//.test(mime) ? "audio or video"
    : "a binary file";
  const size = length && Number(length) >= 0 ? `${Number(length).toLocaleString("en-US")} bytes` : "size not given";
  return `${kind} (${mime || "no content type"}, ${size})`;
}
