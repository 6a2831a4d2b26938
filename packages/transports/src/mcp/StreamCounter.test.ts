import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { StreamCounter, type ClosableResponse } from './StreamCounter.js';

const sse = () => {
  let close!: () => void;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (close = () => c.close()) });
  return { res: new Response(body, { headers: { 'content-type': 'text/event-stream' } }), close };
};
const json = () => new Response('{}', { headers: { 'content-type': 'application/json' } });
class Outgoing extends EventEmitter implements ClosableResponse {
  closed = false;
  end() {
    this.closed = true;
    this.emit('close');
  }
}

describe('StreamCounter', () => {
  it('counts an SSE answer until its Node response closes, and passes the answer on untouched', () => {
    const counter = new StreamCounter();
    const { res } = sse();
    const out = new Outgoing();
    counter.postStarted();
    expect(counter.track(res, 'post', out)).toBe(res);
    expect([counter.count, counter.inFlight]).toEqual([1, 1]);
    out.end();
    expect([counter.count, counter.inFlight]).toEqual([0, 0]);
  });

  it('a JSON answer ends at once; a GET stream does not count as a POST', () => {
    const counter = new StreamCounter();
    counter.postStarted();
    counter.track(json(), 'post', new Outgoing());
    expect([counter.count, counter.inFlight]).toEqual([0, 0]);
    const out = new Outgoing();
    counter.track(sse().res, 'other', out);
    expect([counter.count, counter.inFlight]).toEqual([1, 0]);
    out.end();
    expect(counter.count).toBe(0);
  });

  it('a response already closed is not counted as open', () => {
    const counter = new StreamCounter();
    const out = new Outgoing();
    out.closed = true;
    counter.track(sse().res, 'other', out);
    expect(counter.count).toBe(0);
  });

  it('without a Node response, the body is wrapped and counts until it ends', async () => {
    const counter = new StreamCounter();
    const { res, close } = sse();
    counter.postStarted();
    const tracked = counter.track(res, 'post');
    expect(tracked).not.toBe(res);
    expect(counter.count).toBe(1);
    const text = tracked.text();
    close();
    await text;
    expect([counter.count, counter.inFlight]).toEqual([0, 0]);
  });

  it('settled() waits for the POSTs in flight', async () => {
    const counter = new StreamCounter();
    counter.postStarted();
    counter.postStarted();
    let done = false;
    const settled = counter.settled().then(() => (done = true));
    counter.postEnded();
    await Promise.resolve();
    expect(done).toBe(false);
    counter.track(json(), 'post');
    await settled;
    expect(done).toBe(true);
  });
});
