import { describe, expect, it } from 'vitest';
import { boundedFetch } from './boundedFetch.js';

const MAX = 1024;
const LIMIT = MAX + 65_536;

/** A fetch answering `chunks` with content type `type`; `pulled` counts the chunks the reader took. */
function serving(type: string, chunks: string[]) {
  const state = { pulled: 0, cancelled: false };
  const base = (async () => {
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (i >= chunks.length) return c.close();
        state.pulled++;
        c.enqueue(new TextEncoder().encode(chunks[i++]));
      },
      cancel() {
        state.cancelled = true;
      },
    });
    return new Response(body, { headers: { 'content-type': type } });
  }) as typeof fetch;
  return { fetch: boundedFetch(base, MAX), state };
}

describe('boundedFetch', () => {
  it('passes answers within the limit unchanged', async () => {
    const json = serving('application/json', ['{"a":', '1}']);
    expect(await (await json.fetch('https://x/')).json()).toEqual({ a: 1 });
    const sse = 'data: {"a":1}\r\n\r\nevent: message\ndata: {"b":2}\n\n';
    expect(await (await serving('text/event-stream', [sse.slice(0, 7), sse.slice(7)]).fetch('https://x/')).text()).toBe(sse);
  });

  it('a JSON body past the limit fails while it is read, and the rest is not read', async () => {
    const chunk = 'x'.repeat(32_768);
    const json = serving(
      'application/json',
      Array.from({ length: 100 }, () => chunk),
    );
    await expect((await json.fetch('https://x/')).text()).rejects.toMatchObject({ appCode: 'PAYLOAD_TOO_LARGE' });
    expect(json.state.pulled).toBeLessThan(5);
    expect(json.state.cancelled).toBe(true);
  });

  it('on a GET stream, an event past the limit is cut into an ignored event and the next events pass', async () => {
    const huge = `data: ${'x'.repeat(LIMIT + 10)}`;
    // The cut event spans chunks wholly inside it (nothing of them passes), and ends with a CRLF blank line split across chunks.
    const rest = huge.slice(40_000);
    const sse = serving('text/event-stream', [
      'data: {"n":1}\n\n',
      huge.slice(0, 40_000),
      rest.slice(0, 30_000),
      rest.slice(30_000),
      'x'.repeat(1000),
      '\r\n\r',
      '\ndata: {"n":2}\n\n',
    ]);
    const text = await (await sse.fetch('https://x/', { method: 'GET' })).text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events[0]).toBe('data: {"n":1}');
    expect(events[1]).toMatch(/\nevent: gateway-discarded$/);
    expect(events[2]).toBe('data: {"n":2}');
    expect(text.length).toBeLessThan(LIMIT + 200);
  });

  it("on a POST's stream, a cut event answers the request with an error saying why and ends the stream", async () => {
    const sse = serving('text/event-stream', [`data: ${'x'.repeat(LIMIT + 10)}`, 'never read']);
    const res = await sse.fetch('https://x/', { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'prompts/get' }) });
    const events = (await res.text()).split('\n\n').filter(Boolean);
    expect(events.at(-2)).toMatch(/\nevent: gateway-discarded$/);
    expect(JSON.parse(events.at(-1)!.replace(/^data: /, ''))).toMatchObject({
      id: 7,
      error: { message: `more than gateway.maxResultBytes (${MAX})`, data: { reason: 'upstream_result_too_large' } },
    });
    expect(sse.state.cancelled).toBe(true);
  });
});
