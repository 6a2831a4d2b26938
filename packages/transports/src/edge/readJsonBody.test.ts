import { describe, expect, it } from 'vitest';
import { exceedsDepth, holdsLoneSurrogate, readJsonBody } from './readJsonBody.js';

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  new Request('http://127.0.0.1/rpc', {
    method: 'POST',
    body,
    headers,
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);

/** A chunked body (no Content-Length): `chunks` strings, then the end. */
function chunked(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(enc.encode(chunks[i++]!));
      else controller.close();
    },
  });
}

describe('readJsonBody', () => {
  it('parses a body within the limits', async () => {
    expect(await readJsonBody(post('{"a":[1,{"b":2}]}'), 100, 8)).toEqual({ ok: true, value: { a: [1, { b: 2 }] } });
  });

  it('refuses a declared Content-Length over the limit with 413 before reading', async () => {
    let pulled = false;
    // highWaterMark 0: the stream is pulled only when someone reads it.
    const body = new ReadableStream({ pull: (c) => ((pulled = true), c.close()) }, { highWaterMark: 0 });
    const r = await readJsonBody(post(body, { 'content-length': '101' }), 100, 8);
    expect(r).toEqual({ ok: false, status: 413, message: 'request body exceeds 100 bytes' });
    expect(pulled).toBe(false);
  });

  it('reads a chunked body only up to the limit (413), whatever its length', async () => {
    const r = await readJsonBody(post(chunked(['{"a":"', 'x'.repeat(60), 'x'.repeat(60), '"}'])), 100, 8);
    expect(r).toMatchObject({ ok: false, status: 413 });
    // The same body under a larger limit parses.
    expect(await readJsonBody(post(chunked(['{"a":"', 'x'.repeat(60), 'x'.repeat(60), '"}'])), 1000, 8)).toMatchObject({ ok: true });
  });

  it('counts bytes, not characters, on a chunked body', async () => {
    // 40 three-byte characters: 40 characters, 120 bytes.
    const r = await readJsonBody(post(chunked(['"', '€'.repeat(40), '"'])), 100, 8);
    expect(r).toMatchObject({ ok: false, status: 413 });
  });

  it('answers 400 for an empty body, malformed JSON, and nesting past maxDepth', async () => {
    expect(await readJsonBody(post(''), 100, 8)).toEqual({ ok: false, status: 400, message: 'empty request body' });
    expect(await readJsonBody(post(null), 100, 8)).toMatchObject({ ok: false, status: 400 });
    expect(await readJsonBody(post('{"a":'), 100, 8)).toEqual({ ok: false, status: 400, message: 'malformed JSON' });
    expect(await readJsonBody(post('[[[[1]]]]'), 100, 3)).toEqual({ ok: false, status: 400, message: 'JSON nesting deeper than 3' });
    expect(await readJsonBody(post('[[[1]]]'), 100, 3)).toMatchObject({ ok: true });
  });

  it('never lets the library text of a parse error through', async () => {
    const r = await readJsonBody(post('{"a": undefined}'), 100, 8);
    expect(r).toEqual({ ok: false, status: 400, message: 'malformed JSON' });
  });
});

describe('holdsLoneSurrogate: strings must be Unicode text', () => {
  it.each([
    ['a lone high surrogate in a value', '{"userId":"\\ud800"}'],
    ['a lone low surrogate in an array', '["a","x\\uDC00y"]'],
    ['a high surrogate before a non-surrogate escape', '{"a":"\\ud83d\\u0041"}'],
    ['a lone surrogate in a key', '{"\\udbff":1}'],
    ['reversed pair', '{"a":"\\ude00\\ud83d"}'],
  ])('refuses %s (400, our message)', async (_, text) => {
    expect(holdsLoneSurrogate(text, JSON.parse(text))).toBe(true);
    const body = await readJsonBody(post(text), 1024, 8);
    expect(body).toEqual({ ok: false, status: 400, message: expect.stringMatching(/unpaired surrogate/) });
  });

  it.each([
    ['an escaped pair (Python sends emoji so)', '{"a":"\\ud83d\\ude00"}'],
    ['the emoji as UTF-8', '{"a":"😀"}'],
    ['an escaped backslash before ud800', '{"a":"\\\\ud800"}'],
    ['no escape at all', '{"a":"plain"}'],
  ])('accepts %s', async (_, text) => {
    expect(holdsLoneSurrogate(text, JSON.parse(text))).toBe(false);
    expect(await readJsonBody(post(text), 1024, 8)).toMatchObject({ ok: true });
  });
});

describe('exceedsDepth', () => {
  it('counts objects and arrays alike', () => {
    expect(exceedsDepth('{"a":[{"b":[]}]}', 4)).toBe(false);
    expect(exceedsDepth('{"a":[{"b":[]}]}', 3)).toBe(true);
  });

  it('ignores brackets inside strings, including after escaped quotes and backslashes', () => {
    expect(exceedsDepth(JSON.stringify({ s: '[[[[[[[[{{{{' }), 1)).toBe(false);
    expect(exceedsDepth(JSON.stringify({ s: 'say \\"[[[[[' }), 1)).toBe(false);
    expect(exceedsDepth(JSON.stringify({ s: 'end\\', t: [[[]]] }), 3)).toBe(true);
  });

  it('depth is the maximum reached, not the count of brackets', () => {
    expect(exceedsDepth('[[],[],[],[],[],[],[]]', 2)).toBe(false);
  });

  it('at the boundary: as many opening brackets as the limit pass, one level more does not, in any mix', () => {
    const nested = (n: number) => '{"a":'.repeat(n - 1) + '[1]' + '}'.repeat(n - 1);
    expect(exceedsDepth(nested(8), 8)).toBe(false);
    expect(exceedsDepth(nested(9), 8)).toBe(true);
    // More brackets than the limit, but shallow: the scan decides, not the count.
    expect(exceedsDepth(`[${'[],'.repeat(20)}[]]`, 8)).toBe(false);
    // A long prompt with a few brackets, some of them in its text.
    const prompt = JSON.stringify({ messages: [{ role: 'user', content: `${'lorem ipsum [x] '.repeat(6_000)}` }] });
    expect(exceedsDepth(prompt, 64)).toBe(false);
    expect(exceedsDepth(prompt, 3)).toBe(false);
    expect(exceedsDepth(prompt, 2)).toBe(true);
  });

  it('agrees with a character-by-character scan on any text, escapes and unterminated strings included', () => {
    const reference = (text: string, maxDepth: number) => {
      let depth = 0;
      let inString = false;
      for (let i = 0; i < text.length; i++) {
        const ch = text[i];
        if (inString) {
          if (ch === '\\') i++;
          else if (ch === '"') inString = false;
        } else if (ch === '"') inString = true;
        else if (ch === '{' || ch === '[') {
          if (++depth > maxDepth) return true;
        } else if (ch === '}' || ch === ']') depth--;
      }
      return false;
    };
    const alphabet = ['{', '[', '[', ']', '"', '"', '\\', '\\', 'a'];
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let c = 0; c < 20_000; c++) {
      const text = Array.from({ length: random(30) }, () => alphabet[random(alphabet.length)]).join('');
      const maxDepth = random(3);
      expect(exceedsDepth(text, maxDepth), `${JSON.stringify(text)} at ${maxDepth}`).toBe(reference(text, maxDepth));
    }
  });

  it('is linear: 100,000 levels are scanned without recursion', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(exceedsDepth(deep, 64)).toBe(true);
  });
});
