import type { HttpBindings } from '@hono/node-server';
import type { Context, MiddlewareHandler } from 'hono';
import { edgeError, type EdgeFamily } from './edgeError.js';
import { exceedsDepth, holdsLoneSurrogate, LONE_SURROGATE } from './readJsonBody.js';
import { superjsonMetaProblem } from './superjsonMeta.js';

export interface BodyLimitOptions {
  family: EdgeFamily;
  /** Largest body in bytes. */
  limit: number;
  /** Longest pause between two body chunks while we read a chunked body, in ms. */
  idleMs: number;
  /**
   * tRPC routes: tRPC's adapter parses the body itself, so the JSON depth limit and the superjson
   * `meta` bounds are checked here, on POST bodies and on the GET `input` parameter.
   */
  trpcDepth?: number;
}

/** A Content-Encoding that leaves the body as it is (empty, or `identity`). */
const IDENTITY = /^\s*(identity\s*)?$/i;

/** Most bytes of a refused chunked body read and dropped before the connection is closed. */
const DRAIN_LIMIT = 4 * 1024 * 1024;

const tooLarge = (o: BodyLimitOptions) => edgeError(o.family, 413, `request body exceeds ${o.limit} bytes`);

/**
 * The rest of a refused chunked body. Over a socket it is read and dropped (as node does for a
 * refused declared body): closing instead would make the client's next write reset the
 * connection, and the client would lose the 413 before reading it. node's requestTimeout bounds
 * how long this lasts. Elsewhere (in-process) the stream is simply cancelled.
 */
function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, node: HttpBindings | undefined): void {
  if (!node) {
    void reader.cancel().catch(() => undefined);
    return;
  }
  void (async () => {
    // Bounded: past DRAIN_LIMIT we stop reading and the connection is closed (gracefully, see
    // lingeringClose.ts), so a client that keeps sending cannot make us move gigabytes through
    // memory.
    let drained = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      drained += value?.byteLength ?? 0;
      if (drained > DRAIN_LIMIT) return closeAfterAnswer(node);
    }
  })().catch(() => undefined);
}

/**
 * Close the connection once the answer is out. Not by cancelling the body stream: that destroys
 * the socket at once, and on a fast client the drain ends before the 413 is written, so the
 * client saw the connection close with no answer at all. `destroySoon` closes after the answer
 * is flushed, lingering (lingeringClose.ts) so the client can read it.
 */
function closeAfterAnswer({ incoming, outgoing }: HttpBindings): void {
  // A response emits 'close' once, after 'finish' (or alone when the client went away).
  const close = () => incoming.socket?.destroySoon();
  if (outgoing.closed) close();
  else outgoing.once('close', close);
}

/**
 * Body limits at the HTTP edge, for every route that reads a body: a declared Content-Length over
 * the limit is answered 413 before a byte is read; a chunked body is read here, chunk by chunk,
 * up to the limit (413 past it, 408 when the client pauses longer than idleMs), and handed on
 * with its length, so no handler ever buffers more than the limit.
 */
export function bodyLimit(o: BodyLimitOptions): MiddlewareHandler {
  return async (c, next) => {
    const req = c.req.raw;
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') {
      if (o.trpcDepth !== undefined && req.url.length > o.trpcDepth) {
        const input = new URL(req.url).searchParams.get('input');
        const problem = input && trpcProblem(input, o.trpcDepth, req.url);
        if (problem) return edgeError(o.family, 400, problem);
      }
      return next();
    }
    // Every handler reads the body as it arrived: a compressed one would be parsed as its
    // compressed bytes ("malformed JSON"), an unknown coding as if it were none. RFC 9110 §8.4.1:
    // 415 names the codings taken. Not decoded here: a small gzip body can inflate past any limit.
    const coding = req.headers.get('content-encoding');
    if (coding !== null && !IDENTITY.test(coding))
      return edgeError(
        o.family,
        415,
        `content-encoding ${JSON.stringify(coding.slice(0, 40))} is not supported: send the body uncompressed`,
        {
          'accept-encoding': 'identity',
        },
      );
    const declared = req.headers.get('content-length');
    if (declared !== null && Number(declared) > o.limit) return tooLarge(o);
    // Over a socket: @hono/node-server's request and response (undefined in-process).
    const node = (c.env as Partial<HttpBindings> | undefined)?.incoming ? (c.env as HttpBindings) : undefined;
    if (o.trpcDepth !== undefined && declared !== null && node) {
      // Over a socket node holds the body to its declared length and enforces the idle timeout
      // (nodeTimeouts.ts), so the Node adapter's direct read serves: no web stream, no second
      // Request. The text lands in Hono's body cache, where the tRPC handler reads it.
      const problem = trpcProblem(await c.req.text(), o.trpcDepth, req.url);
      if (problem) return edgeError(o.family, 400, problem);
      return next();
    }
    if (declared === null || o.trpcDepth !== undefined) {
      if (!req.body) return next();
      const reader = req.body.getReader();
      const read = await readLimited(reader, o.limit, o.idleMs);
      if (read === 'too-large') {
        discardRest(reader, node);
        return tooLarge(o);
      }
      if (read === 'idle') return edgeError(o.family, 408, `request body stalled for more than ${o.idleMs} ms`, { connection: 'close' });
      if (o.trpcDepth !== undefined) {
        const text = new TextDecoder().decode(read);
        const problem = trpcProblem(text, o.trpcDepth, req.url);
        if (problem) return edgeError(o.family, 400, problem);
        // As above: the tRPC handler reads the text from Hono's body cache.
        (c.req.bodyCache as Record<string, Promise<unknown>>).text = Promise.resolve(text);
        return next();
      }
      c.req.raw = withBody(req, read);
    }
    await next();
  };
}

/**
 * The request for tRPC's own adapter on a route whose body bodyLimit read (into Hono's body
 * cache): the same request with that body again.
 */
export async function withBufferedBody(c: Context): Promise<Request> {
  const req = c.req.raw;
  if (c.req.bodyCache.text === undefined) return req;
  return withBody(req, new TextEncoder().encode(await c.req.text()));
}

/** `req` again with a body already read whole: a declared length, no chunked framing. */
function withBody(req: Request, body: Uint8Array<ArrayBuffer>): Request {
  const headers = new Headers(req.headers);
  headers.delete('transfer-encoding');
  headers.set('content-length', String(body.byteLength));
  return new Request(req.url, { method: req.method, headers, body, signal: req.signal });
}

/** JSON depth and superjson meta bounds of a tRPC input (one call, or a batch when `url` says `batch=1`, as tRPC reads it). */
function trpcProblem(text: string, maxDepth: number, url: string): string | null {
  if (exceedsDepth(text, maxDepth)) return `JSON nesting deeper than ${maxDepth}`;
  // A `meta` key is spelled out, or written with escapes (`"\u006deta"` is `"meta"` to JSON.parse).
  if (!text.includes('"meta"') && !text.includes('\\u')) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null; // tRPC answers malformed JSON itself
  }
  if (holdsLoneSurrogate(text, parsed)) return LONE_SURROGATE;
  return superjsonMetaProblem(parsed, new URL(url).searchParams.get('batch') === '1');
}

/** Read a stream up to `limit` bytes; stops reading as soon as it is exceeded or stalls. */
async function readLimited(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limit: number,
  idleMs: number,
): Promise<Uint8Array<ArrayBuffer> | 'too-large' | 'idle'> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<'idle'>((resolve) => (timer = setTimeout(() => resolve('idle'), idleMs)));
    const next = await Promise.race([reader.read(), idle]).finally(() => clearTimeout(timer));
    if (next === 'idle') return 'idle';
    if (next.done) break;
    size += next.value.byteLength;
    if (size > limit) return 'too-large';
    chunks.push(next.value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
