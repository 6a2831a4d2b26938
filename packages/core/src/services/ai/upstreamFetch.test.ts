import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { MAX_ANSWER_BYTES, upstreamAgentOptions, upstreamFetch } from './upstreamFetch.js';

/** Error codes along the cause chain. */
function codes(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err; e instanceof Error; e = e.cause) {
    const code = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string') out.push(code);
  }
  return out;
}

describe('upstreamFetch (real HTTP server on 127.0.0.1)', () => {
  let server: http.Server;
  let base: string;
  const seen: Array<{ method?: string; headers: http.IncomingHttpHeaders; body: string }> = [];
  let hugeSent: number | undefined;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ method: req.method, headers: req.headers, body });
        if (req.url === '/json') {
          res.writeHead(201, { 'content-type': 'application/json', 'x-multi': ['a', 'b'] });
          res.end(JSON.stringify({ echo: body }));
        } else if (req.url === '/gzip') {
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          res.end(gzipSync(JSON.stringify({ ok: true })));
        } else if (req.url === '/sse') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: one\n\n');
          // A second frame a moment later, so the client reads a stream that arrives in parts (a deliberate pause).
          setTimeout(() => res.end('data: two\n\n'), 20);
        } else if (req.url === '/cut') {
          // Headers and part of the body, then the socket dies.
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
          res.write('{"partial":', () => res.socket?.destroy());
        } else if (req.url === '/slow') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('start');
          // A slow upstream: the rest of the body is deliberately late (tests abort before it comes).
          setTimeout(() => res.end('end'), 10_000).unref();
        } else if (req.url === '/huge') {
          // An answer past MAX_ANSWER_BYTES, chunked (no declared length), written as fast as it is read.
          res.writeHead(200, { 'content-type': 'application/json' });
          const chunk = Buffer.alloc(1024 * 1024, 0x20);
          let sent = 0;
          const more = () => {
            while (sent < 2 * MAX_ANSWER_BYTES && !res.destroyed) {
              sent += chunk.byteLength;
              if (!res.write(chunk)) return void res.once('drain', more);
            }
            res.end();
          };
          res.on('close', () => (hugeSent = sent));
          more();
        } else if (req.url === '/hang') {
          // Never answers.
        } else {
          res.writeHead(204);
          res.end();
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('posts a body with its headers (undefined ones dropped) and returns status, headers and body', async () => {
    const res = await upstreamFetch(`${base}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-key': 'k', 'x-none': undefined } as unknown as HeadersInit,
      body: '{"a":1}',
    });
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-multi')).toBe('a, b');
    expect(await res.json()).toEqual({ echo: '{"a":1}' });
    const last = seen.at(-1)!;
    expect(last.method).toBe('POST');
    expect(last.headers['x-key']).toBe('k');
    expect('x-none' in last.headers).toBe(false);
    // Sent with its length, as fetch sends a string body, not chunked.
    expect(last.headers['content-length']).toBe('7');
    expect(last.headers['transfer-encoding']).toBeUndefined();
  });

  it('keeps the connection open between calls (one socket for calls one after another)', async () => {
    let opened = 0;
    const count = () => void opened++;
    server.on('connection', count);
    try {
      for (let i = 0; i < 3; i++)
        expect(await (await upstreamFetch(`${base}/json`, { method: 'POST', body: String(i) })).json()).toEqual({ echo: String(i) });
    } finally {
      server.off('connection', count);
    }
    expect(opened).toBeLessThanOrEqual(1);
  });

  it('decodes a gzip body', async () => {
    expect(await (await upstreamFetch(`${base}/gzip`)).json()).toEqual({ ok: true });
  });

  it('reads a whole body as fetch does: every reader, once; a clone reads it too', async () => {
    const post = () => upstreamFetch(`${base}/json`, { method: 'POST', body: 'é' });
    const bytes = Buffer.from(JSON.stringify({ echo: 'é' }));
    expect(Buffer.from(await (await post()).arrayBuffer()).equals(bytes)).toBe(true);
    expect(Buffer.from(await (await post()).bytes()).equals(bytes)).toBe(true);
    const blob = await (await post()).blob();
    expect(blob.type).toBe('application/json');
    expect(await blob.text()).toBe(bytes.toString());
    const once = await post();
    expect(once.bodyUsed).toBe(false);
    expect(await once.text()).toBe(bytes.toString());
    expect(once.bodyUsed).toBe(true);
    await expect(once.text()).rejects.toThrow(TypeError);
    const original = await post();
    const copy = original.clone();
    expect(await copy.json()).toEqual({ echo: 'é' });
    expect(await original.json()).toEqual({ echo: 'é' });
    // A body read as a stream first is not read again whole.
    const streamed = await post();
    const reader = streamed.body!.getReader();
    let streamedText = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) streamedText += Buffer.from(r.value).toString();
    expect(streamedText).toBe(bytes.toString());
    expect(streamed.bodyUsed).toBe(true);
  });

  it('reads a whole body up to MAX_ANSWER_BYTES: past it the read fails (ERR_ANSWER_TOO_LARGE) and the connection is closed', async () => {
    const res = await upstreamFetch(`${base}/huge`, { method: 'POST', body: '{}' });
    const err = await res.text().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(codes(err)).toContain('ERR_ANSWER_TOO_LARGE');
    await waitFor(() => hugeSent !== undefined, { what: 'the upstream to see its answer closed' });
    expect(hugeSent!).toBeLessThan(2 * MAX_ANSWER_BYTES);
  });

  it('streams the body as it arrives (server-sent events)', async () => {
    const res = await upstreamFetch(`${base}/sse`);
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe('data: one\n\n');
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toBe('data: two\n\n');
  });

  /** Reads a web stream to its end: the text, or the error the read failed with. */
  async function readAll(body: ReadableStream<Uint8Array>): Promise<string | Error> {
    const reader = body.getReader();
    let text = '';
    try {
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += Buffer.from(r.value).toString();
      return text;
    } catch (err) {
      return err as Error;
    }
  }

  it('a body read as a stream that breaks off fails the stream with the socket error, not a clean end', async () => {
    const res = await upstreamFetch(`${base}/cut`);
    const out = await readAll(res.body!);
    expect(out).toBeInstanceOf(Error);
    expect(codes(out).some((c) => ['UND_ERR_SOCKET', 'ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE'].includes(c))).toBe(true);
  });

  it('an abort while the body is read as a stream fails the read with the AbortError, promptly', async () => {
    const ac = new AbortController();
    const res = await upstreamFetch(`${base}/slow`, { signal: ac.signal });
    const reader = res.body!.getReader();
    expect(Buffer.from((await reader.read()).value!).toString()).toBe('start');
    const started = performance.now();
    const next = reader.read().catch((e: unknown) => e);
    ac.abort();
    expect(((await next) as Error).name).toBe('AbortError');
    // Well below the 10 s the rest of the body takes, with room for a loaded machine.
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('cancelling the stream closes the connection under it: the upstream sees its response closed', async () => {
    let closed = false;
    const slow = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      res.on('close', () => (closed = true));
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    try {
      const res = await upstreamFetch(`http://127.0.0.1:${(slow.address() as AddressInfo).port}/`);
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
      await waitFor(() => closed, { what: 'the upstream saw the response closed' });
      expect(closed).toBe(true);
    } finally {
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    }
  });

  it('a large body read slowly as a stream arrives whole and in order (the reader sets the pace)', async () => {
    const chunks = 200;
    const big = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let i = 0; i < chunks; i++) res.write(Buffer.alloc(16_384, i % 251));
      res.end();
    });
    await new Promise<void>((r) => big.listen(0, '127.0.0.1', r));
    try {
      const res = await upstreamFetch(`http://127.0.0.1:${(big.address() as AddressInfo).port}/`);
      const reader = res.body!.getReader();
      const parts: Buffer[] = [];
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        parts.push(Buffer.from(r.value));
        // A slow consumer: the stream waits for it rather than dropping or reordering chunks.
        if (parts.length % 20 === 0) await new Promise((r2) => setImmediate(r2));
      }
      const all = Buffer.concat(parts);
      expect(all.length).toBe(chunks * 16_384);
      for (let i = 0; i < chunks; i++) expect(all[i * 16_384]).toBe(i % 251);
    } finally {
      big.closeAllConnections();
      await new Promise((r) => big.close(r));
    }
  });

  it('a 204 has no body', async () => {
    const res = await upstreamFetch(`${base}/empty`);
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it('a refused connection rejects like fetch: TypeError "fetch failed" with ECONNREFUSED in the cause', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await upstreamFetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toBe('fetch failed');
    expect(codes(err)).toContain('ECONNREFUSED');
  });

  it('a socket that dies mid-body fails the read with a socket error code in the cause chain', async () => {
    const res = await upstreamFetch(`${base}/cut`);
    expect(res.status).toBe(200);
    const err = await res.text().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(codes(err).some((c) => ['UND_ERR_SOCKET', 'ECONNRESET'].includes(c))).toBe(true);
  });

  it('an abort before the answer rejects with the AbortError reason', async () => {
    const ac = new AbortController();
    const before = seen.length;
    const pending = upstreamFetch(`${base}/hang`, { method: 'POST', body: 'x', signal: ac.signal }).catch((e: unknown) => e);
    await waitFor(() => seen.length > before, { what: 'the request reached the upstream' });
    ac.abort();
    const err = await pending;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).name).toBe('AbortError');
  });

  it('an already-aborted signal never sends the request', async () => {
    const ac = new AbortController();
    ac.abort();
    const before = seen.length;
    const err = await upstreamFetch(`${base}/json`, { method: 'POST', body: 'x', signal: ac.signal }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    expect(seen.length).toBe(before);
  });

  it("leaves an upstream's time to the call's signal: undici's own head and body timeouts (300 s) are off", async () => {
    // A reasoning model may answer after more than five minutes; ai.timeoutMs (no upper bound) decides.
    expect(upstreamAgentOptions.headersTimeout).toBe(0);
    expect(upstreamAgentOptions.bodyTimeout).toBe(0);
    // And the client built from them still answers (0 is undici's "no timeout", not an invalid value).
    const res = await upstreamFetch(`${base}/json`, { method: 'POST', body: 'timeouts' });
    expect(await res.json()).toEqual({ echo: 'timeouts' });
  });

  it('an abort while the body streams fails the read with the AbortError, promptly', async () => {
    const ac = new AbortController();
    const res = await upstreamFetch(`${base}/slow`, { signal: ac.signal });
    const started = performance.now();
    const reading = res.text().catch((e: unknown) => e);
    ac.abort(); // the head is in, the body has ten seconds to go
    const err = await reading;
    expect((err as Error).name).toBe('AbortError');
    // Well below the 10 s the rest of the body takes, with room for a loaded machine.
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
