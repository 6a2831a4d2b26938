import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { HeldHeads } from './HeldHeads.js';

/**
 * A real HTTP server answering each POST as the SDK transport does (head, priming event, then
 * messages as the call sends them, the end with its answer), with HeldHeads holding the start,
 * and a raw socket as the client, so what reaches the wire and when is seen as it is.
 */
let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

interface Call {
  res: ServerResponse;
  /** Writes the server's socket made (each one system call). */
  writes: () => number;
  transport: { send(message: JSONRPCMessage, options?: { relatedRequestId?: unknown }): Promise<void> };
}

async function start(
  heads: HeldHeads,
  keys: string[],
): Promise<{ client: Socket; chunks: string[]; call: Promise<Call>; received: (s: string) => Promise<void> }> {
  let onCall!: (c: Call) => void;
  const call = new Promise<Call>((r) => (onCall = r));
  server = createServer((req, res) => {
    req.resume();
    // Counted where the socket hands data to the system: Writable's _write and _writev.
    const socket = res.socket as unknown as Record<'_write' | '_writev', (...a: unknown[]) => unknown>;
    let writes = 0;
    for (const k of ['_write', '_writev'] as const) {
      const f = socket[k].bind(socket);
      socket[k] = (...a: unknown[]) => {
        writes++;
        return f(...a);
      };
    }
    heads.hold(keys, res);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    res.write('id: p\ndata: \n\n');
    // The session transport: each message written as an event; the last answer ends the stream.
    const transport = {
      send: async (m: JSONRPCMessage) => {
        res.write(`event: message\ndata: ${JSON.stringify(m)}\n\n`);
        if ((m as { id?: unknown }).id === 'last') res.end();
      },
    };
    heads.watch(transport);
    onCall({ res, writes: () => writes, transport });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.setEncoding('utf8');
  const chunks: string[] = [];
  const waiting: Array<() => void> = [];
  client.on('data', (d: string) => {
    chunks.push(d);
    for (const w of waiting.splice(0)) w();
  });
  const received = async (s: string) => {
    while (!chunks.join('').includes(s)) await new Promise<void>((r) => waiting.push(r));
  };
  client.write('POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
  return { client, chunks, call, received };
}

const answer = (id: string): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { content: [] } });

describe('HeldHeads', () => {
  it('an answer sent while the start is held goes out with it: head, priming event, answer and end in one write', async () => {
    const heads = new HeldHeads(60_000);
    const { client, chunks, call, received } = await start(heads, ['s:last']);
    const { transport, writes } = await call;
    await new Promise((r) => setImmediate(r));
    await transport.send(answer('last'));
    await received('0\r\n\r\n');
    expect(writes()).toBe(1);
    expect(chunks.join('')).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*id: p\ndata: \n\n[\s\S]*"id":"last"[\s\S]*0\r\n\r\n$/);
    client.destroy();
    await new Promise((r) => setImmediate(r));
    expect(heads.size).toBe(0);
  });

  it('a message that is not the answer (progress, a request to the client) goes out at once with the start, not after the hold', async () => {
    const heads = new HeldHeads(60_000);
    const { client, call, received } = await start(heads, ['s:last']);
    const { transport } = await call;
    await transport.send(
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
      { relatedRequestId: 'last' },
    );
    // Held for 60 s otherwise: the test would time out.
    await received('notifications/progress');
    await transport.send(answer('last'));
    await received('0\r\n\r\n');
    client.destroy();
  });

  it('a call that sends nothing for longer than the hold gets its head and priming event then', async () => {
    const heads = new HeldHeads(20);
    const { client, call, received } = await start(heads, ['s:last']);
    const { transport } = await call;
    await received('id: p\ndata: \n\n');
    await transport.send(answer('last'));
    await received('0\r\n\r\n');
    client.destroy();
  });

  it("a batch's first answer goes out at once; the stream ends with the last", async () => {
    const heads = new HeldHeads(60_000);
    const { client, call, received } = await start(heads, ['s:first', 's:last']);
    const { transport } = await call;
    await transport.send(answer('first'));
    await received('"id":"first"');
    await transport.send(answer('last'));
    await received('0\r\n\r\n');
    client.destroy();
  });
});
