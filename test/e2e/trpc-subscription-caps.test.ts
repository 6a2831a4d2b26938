import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicProcedure, router } from 'ai-backend';
import { createTestUpstream, startAiServer, tokenFor, waitFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';

/**
 * A custom router's subscription on /trpc (tRPC answers it as server-sent events, for as long as
 * the client stays) is a long-lived stream like every other kind (docs/security.md "Stream
 * caps"): it takes a place in the stream admission before it runs, is refused past the caps with
 * 429 and Retry-After, and gives its place back when the client leaves. Before, such streams
 * were never counted: one address could hold as many as it liked.
 */
const PER_ADDRESS = 3;
let started = 0;
let running = 0;
const ticker = router({
  tick: publicProcedure.subscription(async function* ({ signal }) {
    started++;
    running++;
    try {
      for (let i = 0; !signal?.aborted; i++) {
        yield i;
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      running--;
    }
  }),
});

describe.each(['listening', 'in-process'] as const)('tRPC subscriptions under the stream caps (%s)', (mode) => {
  let upstream: TestUpstream;
  let gw: AiServer;
  let token: string;
  beforeAll(async () => {
    upstream = await createTestUpstream();
    gw = await startAiServer(upstream, { customRouters: { ticker }, limits: { maxSseStreamsPerClient: PER_ADDRESS } }, { mode });
    token = await tokenFor('subscriber');
  });
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  const open = async () => {
    const ac = new AbortController();
    const res = await fetch(`${gw.url}/trpc/ticker.tick`, { headers: { authorization: `Bearer ${token}` }, signal: ac.signal });
    return { res, close: () => ac.abort() };
  };

  it(`holds ${PER_ADDRESS} from one address, refuses the rest before they run, and frees a place when one closes`, async () => {
    started = 0;
    const held = [];
    for (let i = 0; i < PER_ADDRESS; i++) {
      const s = await open();
      expect(s.res.status).toBe(200);
      expect(s.res.headers.get('content-type')).toMatch(/text\/event-stream/);
      held.push(s);
    }
    await waitFor(() => started === PER_ADDRESS);
    for (let i = 0; i < 3; i++) {
      const { res } = await open();
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.text()).toMatch(/too many open event streams from this address/);
    }
    expect(started).toBe(PER_ADDRESS);
    held.pop()!.close();
    // The place comes back once the closed stream has ended.
    let again: Awaited<ReturnType<typeof open>> | undefined;
    await waitFor(async () => {
      const s = await open();
      if (s.res.status === 200) again = s;
      else await s.res.text();
      return again !== undefined;
    });
    expect(again!.res.headers.get('content-type')).toMatch(/text\/event-stream/);
    again!.close();
    for (const s of held) s.close();
    await waitFor(() => running === 0);
  });
});
