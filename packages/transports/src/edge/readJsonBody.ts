import { isUnicodeText } from '@ai-backend/core/internal';

/** Result of reading a JSON body under the configured limits. */
export type JsonBody = { ok: true; value: unknown } | { ok: false; status: 400 | 413 | 415; message: string };

/**
 * Read at most `limit` bytes and parse JSON. Streams the body so a lying or absent
 * Content-Length cannot make us buffer more than the limit. Rejects nesting deeper than
 * `maxDepth` before parsing, so hostile input cannot exhaust the stack later (validation, logging).
 */
export async function readJsonBody(req: Request, limit: number, maxDepth: number): Promise<JsonBody> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (declared > limit) return { ok: false, status: 413, message: `request body exceeds ${limit} bytes` };
  let text: string;
  if (Number.isFinite(declared)) {
    // HTTP framing bounds the body by Content-Length, so reading it whole is safe; on the Node
    // adapter this skips the web-stream conversion, which dominated the cost of small requests.
    text = await req.text();
  } else {
    const streamed = await readStreamed(req, limit);
    if (streamed === null) return { ok: false, status: 413, message: `request body exceeds ${limit} bytes` };
    text = streamed;
  }
  if (text.length === 0) return { ok: false, status: 400, message: 'empty request body' };
  if (exceedsDepth(text, maxDepth)) return { ok: false, status: 400, message: `JSON nesting deeper than ${maxDepth}` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, status: 400, message: 'malformed JSON' };
  }
  if (holdsLoneSurrogate(text, value)) return { ok: false, status: 400, message: LONE_SURROGATE };
  return { ok: true, value };
}

/** The refusal of a body whose strings are not Unicode text. */
export const LONE_SURROGATE = 'a JSON string holds an unpaired surrogate (\\ud800-\\udfff escape): strings must be Unicode text';

/** A `\uD800`–`\uDFFF` escape: the only way a JSON text (decoded as UTF-8) can carry a lone surrogate. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * Whether a string (or object key) of `value`, parsed from `text`, holds an unpaired UTF-16
 * surrogate (`"\ud800"`). Such a string is not Unicode text: it cannot be written as UTF-8 (a
 * store gets U+FFFD, so two different ids become one), and `encodeURIComponent`, which builds
 * storage keys, throws on it (a 500 on every procedure that took an id). Strings are only walked
 * when the text has such an escape: a surrogate pair (`\ud83d\ude00`, as Python sends emoji) is one.
 */
export function holdsLoneSurrogate(text: string, value: unknown): boolean {
  if (!SURROGATE_ESCAPE.test(text)) return false;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (!isUnicodeText(v)) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, item] of Object.entries(v)) {
        if (!isUnicodeText(k)) return true;
        stack.push(item);
      }
    }
  }
  return false;
}

/** Chunked bodies: stream and stop at the limit (null when exceeded). */
async function readStreamed(req: Request, limit: number): Promise<string | null> {
  if (!req.body) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Linear scan of bracket depth outside strings. A string is skipped to its closing quote with
 * `indexOf`, which runs in native code: a long prompt is one string, and walking it a character at
 * a time in JS cost about 3 M instructions per 100 kB (bench/v1Instructions.mjs, V1_PROMPT_BYTES).
 */
export function exceedsDepth(text: string, maxDepth: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 34 /* " */) {
      i = stringEnd(text, i);
      // Unterminated: nothing after it can nest deeper, and JSON.parse refuses it.
      if (i === -1) return false;
    } else if (ch === 123 || ch === 91) {
      if (++depth > maxDepth) return true;
    } else if (ch === 125 || ch === 93) depth--;
  }
  return false;
}

/** The index of the quote that closes the string opened at `open`, or -1: one not after an odd run of backslashes. */
function stringEnd(text: string, open: number): number {
  for (let q = text.indexOf('"', open + 1); q !== -1; q = text.indexOf('"', q + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 92 /* \ */) backslashes++;
    if (backslashes % 2 === 0) return q;
  }
  return -1;
}
