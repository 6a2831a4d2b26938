import { randomUUID } from 'node:crypto';
import type { ConfigInput } from '@ai-backend/core';
import { dropTestKeys, dropTestSchema, testPostgresOptions, type TestPostgres, type TestRedis } from '@ai-backend/test-utils/services';
import { windowClock, type WindowClock } from '@ai-backend/test-utils';
import { createTestUpstream, creditTokens, rpcCall, startAiServer, tokenFor, type AiServer, type TestUpstream } from './aiGateway.js';

/** Two gateways on one PostgreSQL schema and one Redis prefix, a funded user, and a way to give them keys. */
export interface KeyCluster {
  upstream: TestUpstream;
  a: AiServer;
  b: AiServer;
  sub: string;
  /** The owner's JWT. */
  user: string;
  /** The clock both instances' rate-limit windows read: `startWindow()` before a test that must stay inside one minute. */
  clock: WindowClock;
  /** keys.create as the owner through instance a (rules merged over `{ name }`); throws on refusal. */
  newKey(rules?: Record<string, unknown>): Promise<{ key: string; id: string }>;
  stop(): Promise<void>;
}

export async function startKeyCluster(
  label: string,
  pgAt: TestPostgres,
  redisAt: TestRedis,
  upstreamOptions: Parameters<typeof createTestUpstream>[0],
): Promise<KeyCluster> {
  const pg = testPostgresOptions(pgAt, label);
  const keyPrefix = `e2e-${label}-${randomUUID()}:`;
  const sub = `${label}-owner-${randomUUID().slice(0, 8)}`;
  const upstream = await createTestUpstream(upstreamOptions);
  const config: ConfigInput = {
    storage: { type: 'postgres', postgres: pg, shared: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
  };
  const clock = windowClock(60_000);
  const a = await startAiServer(upstream, config, { clock: clock.now });
  const b = await startAiServer(upstream, config, { clock: clock.now });
  const user = await tokenFor(sub);
  await creditTokens(a.url, await tokenFor(`${label}-admin`, { admin: true }), sub, 10_000_000, `seed-${sub}`);
  return {
    upstream,
    a,
    b,
    sub,
    user,
    clock,
    async newKey(rules = {}) {
      const r = await rpcCall<{ key: string; apiKey: { id: string } }>(a.url, user, 'keys.create', { name: 'app', ...rules });
      if (!r.result) throw new Error(r.text);
      return { key: r.result.key, id: r.result.apiKey.id };
    },
    async stop() {
      await a.stop();
      await b.stop();
      await upstream.close();
      await dropTestSchema(pgAt, pg.schema);
      await dropTestKeys(redisAt, keyPrefix);
    },
  };
}
