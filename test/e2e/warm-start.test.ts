import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUpstream, startAiServer, waitFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';

/**
 * The warm start (docs/operations.md): a server that pays for providers loads, after it listens
 * and before any call, what the first AI calls would (the AI SDK, the providers' packages, the /v1
 * handlers), and says so in its debug log; nothing goes upstream and nothing is charged. A default
 * server loads none of it (test/e2e/startup-modules.test.ts).
 */
let upstream: TestUpstream;
let gw: AiServer;
beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, { storage: { type: 'memory' } });
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

it('loads the AI modules after listen, off any request: no upstream request, no ledger entry', async () => {
  const line = await waitFor(async () => gw.logs.find((l) => l.includes('warm start: AI modules loaded')), { what: 'the warm start' });
  expect(line).toMatch(/"ms":\d+/);
  expect(upstream.requests).toHaveLength(0);
  expect(gw.runtime.billing.openHolds()).toBe(0);
  expect(gw.logs.some((l) => l.includes('warm start failed'))).toBe(false);
});
