import { dropTestSchema, holdStoreKeyLock, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { createTestUpstream, creditTokens, sleep, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';
import { settlementOf } from './helpers/settlementOf.js';

/**
 * A /v1 stream whose client leaves while the server settles it: the upstream has answered in full,
 * the settle waits for the store (here: another session holds the user's account row lock), and the
 * client goes away meanwhile. The call is charged once for what it used, and the stream's end, which
 * comes after the client left, is not an internal error ("procedure failed", "Controller is already
 * closed" with a stack in the log): the server wrote to a stream its client had cancelled.
 */
const pgAt = await testPostgres();
const OUTPUT = 12;
const FORMATS = [
  {
    name: 'chat',
    path: '/v1/chat/completions',
    body: (c: string) => ({ model: 'openai/gpt-4.1-mini', stream: true, max_tokens: 40, messages: [{ role: 'user', content: c }] }),
  },
  {
    name: 'responses',
    path: '/v1/responses',
    body: (c: string) => ({ model: 'openai/gpt-4.1-mini', stream: true, max_output_tokens: 40, input: c }),
  },
  {
    name: 'messages',
    path: '/v1/messages',
    body: (c: string) => ({ model: 'anthropic/claude-sonnet-4-5', stream: true, max_tokens: 40, messages: [{ role: 'user', content: c }] }),
  },
] as const;

describe.skipIf(!pgAt.ok)('/v1 stream left by its client while its settle waits', () => {
  describeV1Paths('v1-stream-left-at-settle', (path) => {
    const schema = testPostgresOptions(pgAt, `leftsettle_${path.replace('-', '')}`);
    let upstream: TestUpstream;
    let gw: AiServer;
    let admin: string;
    beforeAll(async () => {
      upstream = await createTestUpstream({ outputTokens: OUTPUT, chunkDelayMs: 5 });
      gw = await startAiServer(upstream, { storage: { type: 'postgres', postgres: schema } }, { path });
      admin = await tokenFor('ls-admin', { admin: true });
    });
    afterAll(async () => {
      await gw.stop();
      await upstream.close();
      await dropTestSchema(pgAt, schema.schema);
    });

    for (const f of FORMATS) {
      it(`${f.name}: charged once for its usage, and no internal error logged`, async () => {
        const sub = `ls-${path}-${f.name}-${process.pid}`;
        await creditTokens(gw.url, admin, sub, 100_000, `ls-${sub}`);
        const logsBefore = gw.logs.length;
        const content = `leave at the settle ${f.name}`;
        // The user's usage row of the day is written by the settle only (not by the hold): with its
        // store lock held by another session, the stream runs and its settle waits.
        const day = new Date().toISOString().slice(0, 10);
        const lock = await holdStoreKeyLock(pgAt, `usageday:${encodeURIComponent(sub)}:${day}`);
        const ac = new AbortController();
        try {
          const res = await fetch(gw.url + f.path, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${await tokenFor(sub)}`,
              'anthropic-version': '2023-06-01',
            },
            body: JSON.stringify(f.body(content)),
            signal: ac.signal,
          });
          expect(res.status).toBe(200);
          await res.body!.getReader().read(); // the first output is here
          // The settle waits for the lock: the server has read the upstream's answer to its end.
          await waitFor(async () => (await lock.waiting()) > 0, { what: 'the settle waiting for the store' });
          ac.abort();
          // A deliberate pause: the server sees the client leave (nothing to await from outside).
          await sleep(150);
        } finally {
          await lock.release();
        }
        const s = await settlementOf(gw, sub);
        // The upstream answered in full before the client left: its reported usage, not a partial charge.
        expect(s).toMatchObject({ kind: 'settle', closes: 1, usage: { tokensUsed: Math.ceil(content.length / 4) + OUTPUT } });
        expect(s.charged).toBe(s.usage!.tokensUsed + Math.ceil(s.usage!.tokensUsed * 0.1));
        await sleep(150); // deliberate: time for the stream's end to log an error (asserting none does)
        expect(gw.logs.slice(logsBefore).filter((l) => l.includes('"level":"error"'))).toEqual([]);
      });
    }
  });
});
