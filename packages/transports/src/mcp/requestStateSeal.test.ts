import { afterAll, describe, expect, it } from 'vitest';
import type { ServerContext } from '@modelcontextprotocol/server';
import { createRuntime, MemoryStorage, resolveConfig, type Runtime } from '@ai-backend/core/internal';
import { createRequestStateSeal } from './requestStateSeal.js';

const runtimes: Runtime[] = [];
async function runtimeWith(secret?: string): Promise<Runtime> {
  const rt = await createRuntime(resolveConfig({ monitoring: { logging: { level: 'silent' } }, ...(secret ? { jwt: { secret } } : {}) }), { storage: new MemoryStorage() });
  runtimes.push(rt);
  return rt;
}
afterAll(async () => {
  for (const rt of runtimes) await rt.close();
});

/** The handler context the seal binds to: the caller's identity, else its address. */
const ctxOf = (who: { sub?: string; ip?: string }) =>
  ({ http: { authInfo: { extra: { facts: { scope: { identity: who.sub ? { sub: who.sub } : undefined, facts: { ip: who.ip ?? '' } } } } } } }) as unknown as ServerContext;

describe('requestStateSeal', () => {
  const SECRET = 'k'.repeat(40);

  it('round-trips a state for the same caller', async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    const alice = ctxOf({ sub: 'alice' });
    const token = await seal.mint({ step: 2 }, alice);
    expect(token).not.toContain('step');
    expect(await seal.verify(token, alice)).toEqual({ step: 2 });
  });

  it('refuses another caller replaying it (identity, or address when anonymous)', async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    await expect(seal.verify(await seal.mint(1, ctxOf({ sub: 'alice' })), ctxOf({ sub: 'bob' }))).rejects.toThrow();
    await expect(seal.verify(await seal.mint(1, ctxOf({ ip: '10.0.0.1' })), ctxOf({ ip: '10.0.0.2' }))).rejects.toThrow();
  });

  it('refuses a state altered by the client', async () => {
    const seal = createRequestStateSeal(await runtimeWith(SECRET));
    const token = await seal.mint({ n: 1 }, ctxOf({ sub: 'a' }));
    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    await expect(seal.verify(flipped, ctxOf({ sub: 'a' }))).rejects.toThrow();
  });

  it('instances sharing jwt.secret accept each other’s state; without a secret each keeps its own key', async () => {
    const [a, b] = [createRequestStateSeal(await runtimeWith(SECRET)), createRequestStateSeal(await runtimeWith(SECRET))];
    const ctx = ctxOf({ sub: 'a' });
    expect(await b.verify(await a.mint('x', ctx), ctx)).toBe('x');
    const [c, d] = [createRequestStateSeal(await runtimeWith()), createRequestStateSeal(await runtimeWith())];
    await expect(d.verify(await c.mint('x', ctx), ctx)).rejects.toThrow();
    const other = createRequestStateSeal(await runtimeWith('z'.repeat(40)));
    await expect(other.verify(await a.mint('x', ctx), ctx)).rejects.toThrow();
  });
});
