import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamHeadResponse } from './StreamHeadResponse.js';

type Writes = string[];

/** Counts each write the socket makes (one system call each), from the response's first write on. */
function recordWrites(res: ServerResponse): Writes {
  const writes: Writes = [];
  const socket = res.socket as Socket & {
    _write(chunk: Buffer, enc: string, cb: () => void): void;
    _writev(chunks: Array<{ chunk: Buffer | string }>, cb: () => void): void;
  };
  const write = socket._write.bind(socket);
  const writev = socket._writev.bind(socket);
  socket._write = (chunk, enc, cb) => {
    writes.push(String(chunk));
    write(chunk, enc, cb);
  };
  socket._writev = (chunks, cb) => {
    writes.push(chunks.map((c) => String(c.chunk)).join(''));
    writev(chunks, cb);
  };
  return writes;
}

const servers: Array<{ close(cb: () => void): void }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

/**
 * The way our server answers: @hono/node-server's `serve` with a fetch handler, here one that
 * answers an event stream whose first chunk is enqueued before the answer is returned (as the /v1
 * and MCP handlers do), the rest later. Resolves with the URL and the writes of the last request.
 */
async function honoServer(responseClass: typeof ServerResponse | undefined, body: () => ReadableStream<Uint8Array>) {
  const { serve } = await import('@hono/node-server');
  const last: { writes: Writes } = { writes: [] };
  const server = serve({
    fetch: async () => new Response(body(), { headers: { 'content-type': 'text/event-stream' } }),
    port: 0,
    hostname: '127.0.0.1',
    serverOptions: responseClass ? { ServerResponse: responseClass } : {},
  });
  // After the adapter's own listener, which answers later (its handler is async): the socket is seen from the first write.
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    last.writes = recordWrites(res);
  });
  if (!server.listening) await once(server, 'listening');
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, last };
}

const encoder = new TextEncoder();
const firstThenLast = () =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('data: first\n\n'));
      setTimeout(() => {
        controller.enqueue(encoder.encode('data: last\n\n'));
        controller.close();
      }, 5);
    },
  });

describe('StreamHeadResponse', () => {
  it("sends a streamed answer's head in the same write as its first chunk", async () => {
    const { url, last } = await honoServer(StreamHeadResponse, firstThenLast);
    const res = await fetch(url);
    expect(await res.text()).toBe('data: first\n\ndata: last\n\n');
    expect(last.writes[0]).toContain('HTTP/1.1 200 OK');
    expect(last.writes[0]).toContain('data: first');
  });

  it('is what the adapter alone does not do: there the head is a write of its own', async () => {
    const { url, last } = await honoServer(undefined, firstThenLast);
    expect(await (await fetch(url)).text()).toBe('data: first\n\ndata: last\n\n');
    expect(last.writes[0]).toContain('HTTP/1.1 200 OK');
    expect(last.writes[0]).not.toContain('data: first');
  });

  it('still sends the head at once when no chunk is ready (a client waits on the headers of an event stream)', async () => {
    let finish: () => void = () => undefined;
    const { url } = await honoServer(
      StreamHeadResponse,
      () =>
        new ReadableStream<Uint8Array>({
          start(controller) {
            finish = () => {
              controller.enqueue(encoder.encode('data: late\n\n'));
              controller.close();
            };
          },
        }),
    );
    // The body is written only after the client has its headers: without them this would wait until the timeout.
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    finish();
    expect(await res.text()).toBe('data: late\n\n');
  });

  it('leaves answers that are not streamed as they were (head and body in one write)', async () => {
    let seen: Writes = [];
    const server = createServer({ ServerResponse: StreamHeadResponse }, (_req, res) => {
      seen = recordWrites(res);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    servers.push(server);
    expect(await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)).json()).toEqual({ ok: true });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain('{"ok":true}');
  });
});
