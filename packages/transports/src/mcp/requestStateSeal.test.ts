import { afterAll, describe, expect, it } from 'vitest';
import type { ServerContext } from '@modelcontextprotocol/server';
import { dropTestKeys, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';
import { createRuntime, MemoryStorage, resolveConfig, type ConfigInput, type Runtime, type Storage } from '@ai-backend/core/internal';
import { createRequestStateSeal, type StateUse } from './requestStateSeal.js';

const redis = await testRedis();
const REDIS = redis.ok ? testRedisOptions(redis, 'rs-seal') : undefined;
const runtimes: Runtime[] = [];
async function runtimeWith(secret?: string, opts: { storage?: Storage; config?: ConfigInput } = {}): Promise<Runtime> {
  const rt = await createRuntime(
    resolveConfig({ monitoring: { logging: { level: 'silent' } }, ...(secret ? { jwt: { secret } } : {}), ...opts.config }),
    { storage: opts.storage ?? new MemoryStorage() },
  );
  runtimes.push(rt);
  return rt;
}
afterAll(async () => {
  for (const rt of runtimes) await rt.close();
  if (REDIS) await dropTestKeys(redis, REDIS.keyPrefix);
});

/** The handler context the seal binds to: the caller's identity, else its address. */
const ctxOf = (who: { sub?: string; ip?: string; apiKey?: string }) =>
  ({
    http: {
      authInfo: {
        extra: {
          facts: {
            scope: {
              identity: who.sub ? { sub: who.sub, ...(who.apiKey ? { apiKey: { id: who.apiKey } } : {}) } : undefined,
              facts: { ip: who.ip ?? '' },
            },
          },
        },
      },
    },
  }) as unknown as ServerContext;

const TOOL: StateUse = { kind: 'tool', name: 'approveJob', args: { job: 'deploy', env: 'prod' } };
const REFUSED = { code: -32602, message: 'Invalid or expired requestState' };

describe('requestStateSeal', () => {
  const SECRET = 'k'.repeat(40);

  it('round-trips a state for the same caller and the same use', async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    const alice = ctxOf({ sub: 'alice' });
    const token = await seal.mint({ step: 2 }, alice, TOOL);
    expect(token).not.toContain('step');
    expect(await seal.open(token, alice, TOOL)).toEqual({ step: 2 });
  });

  it('refuses another caller replaying it (identity, or address when anonymous)', async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    await expect(seal.open(await seal.mint(1, ctxOf({ sub: 'alice' }), TOOL), ctxOf({ sub: 'bob' }), TOOL)).rejects.toMatchObject(REFUSED);
    await expect(seal.open(await seal.mint(1, ctxOf({ ip: '10.0.0.1' }), TOOL), ctxOf({ ip: '10.0.0.2' }), TOOL)).rejects.toMatchObject(
      REFUSED,
    );
  });

  it("an owner's API keys are callers of their own: a state minted for one key is refused for another key and for the owner's sign-in", async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    const keyA = ctxOf({ sub: 'alice', apiKey: 'key-a' });
    await expect(seal.open(await seal.mint(1, keyA, TOOL), ctxOf({ sub: 'alice', apiKey: 'key-b' }), TOOL)).rejects.toMatchObject(REFUSED);
    await expect(seal.open(await seal.mint(1, keyA, TOOL), ctxOf({ sub: 'alice' }), TOOL)).rejects.toMatchObject(REFUSED);
    await expect(seal.open(await seal.mint(1, ctxOf({ sub: 'alice' }), TOOL), keyA, TOOL)).rejects.toMatchObject(REFUSED);
    expect(await seal.open(await seal.mint(2, keyA, TOOL), ctxOf({ sub: 'alice', apiKey: 'key-a' }), TOOL)).toBe(2);
  });

  it('is bound to its use: another tool, other arguments or another kind are refused; the same arguments in another key order are not', async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    const a = ctxOf({ sub: 'a' });
    const token = await seal.mint('x', a, TOOL);
    await expect(seal.open(token, a, { ...TOOL, name: 'deleteEverything' })).rejects.toMatchObject(REFUSED);
    await expect(seal.open(token, a, { ...TOOL, args: { job: 'deploy', env: 'staging' } })).rejects.toMatchObject(REFUSED);
    await expect(seal.open(token, a, { ...TOOL, args: { job: 'deploy', env: 'prod', extra: 1 } })).rejects.toMatchObject(REFUSED);
    await expect(seal.open(token, a, { ...TOOL, kind: 'prompt' })).rejects.toMatchObject(REFUSED);
    // The refusals above did not use it up: the right use still gets it, whatever the key order.
    expect(await seal.open(token, a, { ...TOOL, args: { env: 'prod', job: 'deploy' } })).toBe('x');
    const noArgs = await seal.mint('y', a, { kind: 'tool', name: 't' });
    expect(await seal.open(noArgs, a, { kind: 'tool', name: 't', args: {} })).toBe('y');
  });

  it('is single use', async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    const a = ctxOf({ sub: 'a' });
    const token = await seal.mint({ n: 1 }, a, TOOL);
    expect(await seal.open(token, a, TOOL)).toEqual({ n: 1 });
    await expect(seal.open(token, a, TOOL)).rejects.toMatchObject(REFUSED);
    // Each mint is its own state.
    expect(await seal.open(await seal.mint({ n: 1 }, a, TOOL), a, TOOL)).toEqual({ n: 1 });
  });

  it('refuses a state altered by the client', async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    const token = await seal.mint({ n: 1 }, ctxOf({ sub: 'a' }), TOOL);
    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    await expect(seal.open(flipped, ctxOf({ sub: 'a' }), TOOL)).rejects.toMatchObject(REFUSED);
  });

  it('instances sharing jwt.secret accept each other’s state; without a secret each keeps its own key', async () => {
    const shared = new MemoryStorage();
    const [a, b] = [
      createRequestStateSeal(await runtimeWith(SECRET, { storage: shared })),
      createRequestStateSeal(await runtimeWith(SECRET, { storage: shared })),
    ];
    const ctx = ctxOf({ sub: 'a' });
    expect(await b.open(await a.mint('x', ctx, TOOL), ctx, TOOL)).toBe('x');
    const [c, d] = [createRequestStateSeal(await runtimeWith()), createRequestStateSeal(await runtimeWith())];
    await expect(d.open(await c.mint('x', ctx, TOOL), ctx, TOOL)).rejects.toMatchObject(REFUSED);
    const other = createRequestStateSeal(await runtimeWith('z'.repeat(40)));
    await expect(other.open(await a.mint('x', ctx, TOOL), ctx, TOOL)).rejects.toMatchObject(REFUSED);
  });

  it('a state used on one instance is refused on another sharing the store (memory store shared in process)', async () => {
    const shared = new MemoryStorage();
    const [a, b] = [
      createRequestStateSeal(await runtimeWith(SECRET, { storage: shared })),
      createRequestStateSeal(await runtimeWith(SECRET, { storage: shared })),
    ];
    const ctx = ctxOf({ sub: 'a' });
    const token = await a.mint('x', ctx, TOOL);
    expect(await a.open(token, ctx, TOOL)).toBe('x');
    await expect(b.open(token, ctx, TOOL)).rejects.toMatchObject(REFUSED);
  });

  it.skipIf(!redis.ok)('a state used on one instance is refused on another sharing Redis (two runtimes, their own stores)', async () => {
    const config: ConfigInput = { storage: { type: 'memory', shared: 'redis', redis: REDIS! } };
    const [a, b] = [
      createRequestStateSeal(await runtimeWith(SECRET, { config })),
      createRequestStateSeal(await runtimeWith(SECRET, { config })),
    ];
    const ctx = ctxOf({ ip: '10.1.2.3' });
    const token = await a.mint({ k: 1 }, ctx, TOOL);
    // Both runs race for it: exactly one gets it.
    const outcomes = await Promise.allSettled([a.open(token, ctx, TOOL), b.open(token, ctx, TOOL)]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    await expect(b.open(token, ctx, TOOL)).rejects.toMatchObject(REFUSED);
  });
});
