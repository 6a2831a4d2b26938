import { describe, expect, it } from 'vitest';
import { checkedFetch } from './checkedFetch.js';

/** A fetch answering `chunks` with content type `type`, through checkedFetch. */
function serving(type: string, chunks: string[]): typeof fetch {
  const base = (async () => {
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (i >= chunks.length) return c.close();
        c.enqueue(new TextEncoder().encode(chunks[i++]));
      },
    });
    return new Response(body, { headers: { 'content-type': type } });
  }) as typeof fetch;
  return checkedFetch(base);
}

/** Every way to cut `text` in two. */
const cuts = (text: string) => Array.from({ length: text.length + 1 }, (_, i) => [text.slice(0, i), text.slice(i)]);
const invalid = (id: number, message: string) => ({
  jsonrpc: '2.0',
  id,
  error: { code: -32603, message, data: { reason: 'upstream_invalid_result' } },
});

describe('checkedFetch', () => {
  it('passes SSE streams of readable messages unchanged, cut anywhere', async () => {
    const sse =
      ': ping\r\n\r\nid: 1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n' +
      'event: message\rdata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\r\r' +
      'event: other\ndata: not json\n\n';
    for (const chunks of cuts(sse)) expect(await (await serving('text/event-stream', chunks)('https://x/')).text()).toBe(sse);
  });

  it("turns an SSE event whose message answers with no result object into that request's error, keeping its id, cut anywhere", async () => {
    const sse = 'id: 7\ndata: {"jsonrpc":"2.0","id":3,"result":null}\n\ndata: {"jsonrpc":"2.0","id":4}\n\n';
    for (const chunks of cuts(sse)) {
      const text = await (await serving('text/event-stream', chunks)('https://x/')).text();
      const events = text.split('\n\n').filter(Boolean);
      expect(events[0]!.split('\n')[0]).toBe('id: 7');
      expect(JSON.parse(events[0]!.split('\n')[1]!.slice(6))).toEqual(invalid(3, 'its result is null, not an object'));
      expect(JSON.parse(events[1]!.slice(6))).toEqual(invalid(4, 'it holds neither a result nor an error'));
    }
  });

  it("gives a JSON answer's messages checked through json()", async () => {
    const one = await serving('application/json', ['{"jsonrpc":"2.0","id":1,"result":"a string"}'])('https://x/');
    expect(await one.json()).toEqual(invalid(1, 'its result is a string, not an object'));
    const batch = await serving('application/json', ['[{"jsonrpc":"2.0","id":1,"result":[]},{"jsonrpc":"2.0","id":2,"result":{}}]'])(
      'https://x/',
    );
    expect(await batch.json()).toEqual([invalid(1, 'its result is an array, not an object'), { jsonrpc: '2.0', id: 2, result: {} }]);
  });
});
