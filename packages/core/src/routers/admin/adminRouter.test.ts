import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../createRuntime.js';
import { resolveConfig } from '../../config/resolveConfig.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { createCallerFactory } from '../../pipeline/init.js';
import { createAppRouter } from '../appRouter.js';
import type { Identity } from '../../kernel/identity.js';
import { callContext } from '../../pipeline/callContext.js';

const admin: Identity = { sub: 'root', scopes: ['mcp:admin'], isAdmin: true, via: 'jwt' };
const user: Identity = { sub: 'u1', scopes: [], isAdmin: false, via: 'jwt' };

async function callerAs(identity: Identity | null) {
  const runtime = await createRuntime(
    resolveConfig({
      jwt: { secret: 's'.repeat(32) },
      oauth: { encryptionKey: 'e'.repeat(32), provider: { issuer: 'https://client:ISSUER-SECRET@idp.example' } },
      ai: { providers: { google: { baseUrl: 'https://proxy.example/v1beta?key=URLKEY-SECRET' } } },
      admin: { users: ['boss@example.com'] },
    }),
    { storage: new MemoryStorage() },
  );
  const caller = createCallerFactory(createAppRouter())(
    callContext(runtime, {
      identity,
      credentialError: null,
      req: { transport: 'internal', ip: '127.0.0.1', signal: new AbortController().signal, headers: new Headers() },
    }),
  );
  return { runtime, caller };
}

describe('admin namespace', () => {
  it('refuses anonymous callers and non-admins', async () => {
    const anon = await callerAs(null);
    await expect(anon.caller.admin.status({ detailed: false })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    const plain = await callerAs(user);
    await expect(plain.caller.admin.getConfig({ section: 'all' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('status has the spec record; detailed adds system', async () => {
    const { caller } = await callerAs(admin);
    const s = await caller.admin.status({ detailed: false });
    expect(s).toMatchObject({
      status: 'running',
      memory: { used: expect.any(Number), total: expect.any(Number), percentage: expect.any(Number) },
    });
    expect(typeof s.uptime).toBe('number');
    expect(Date.parse(s.timestamp)).not.toBeNaN();
    const d = await caller.admin.status({ detailed: true });
    expect(d).toHaveProperty('system.nodeVersion', process.version);
  });

  it('runRetention: refused while retention is off; on, it archives what is old and reports it', async () => {
    const off = await callerAs(admin);
    await expect(off.caller.admin.runRetention()).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      message: expect.stringMatching(/retention is off/),
    });
    await off.runtime.close();
    const dir = await mkdtemp(join(tmpdir(), 'admin-retention-'));
    const runtime = await createRuntime(
      resolveConfig({ storage: { type: 'memory', retention: { ledgerDays: 1, exportDir: dir, everyMinutes: 0 } } }),
      { storage: new MemoryStorage() },
    );
    const caller = createCallerFactory(createAppRouter())(
      callContext(runtime, {
        identity: admin,
        credentialError: null,
        req: { transport: 'internal', ip: '127.0.0.1', signal: new AbortController().signal, headers: new Headers() },
      }),
    );
    await runtime.billing.credit({ userId: 'u1', tokens: 50, type: 'one_time', idempotencyKey: 'k', source: 'test' });
    // Nothing is a day old yet: examined, nothing archived, no file.
    expect(await caller.admin.runRetention()).toMatchObject({ kinds: { ledger: { archived: 0, logs: 1 } } });
    expect(await readdir(dir)).toEqual([]);
    await runtime.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('getConfig never shows secrets', async () => {
    const { caller } = await callerAs(admin);
    const text = JSON.stringify(await caller.admin.getConfig({ section: 'all' }));
    expect(text).not.toContain('s'.repeat(32));
    expect(text).not.toContain('e'.repeat(32));
    // Secrets inside URL-valued keys: userinfo and query values.
    expect(text).not.toContain('ISSUER-SECRET');
    expect(text).not.toContain('URLKEY-SECRET');
    expect(text).toContain('https://proxy.example/v1beta?key=[redacted]');
    expect(Object.keys((await caller.admin.getConfig({ section: 'auth' })) as object)).toEqual(['auth']);
  });

  it('statistics count calls per procedure and entry point; clearCache resets them', async () => {
    const { caller } = await callerAs(admin);
    await caller.admin.healthCheck();
    await caller.admin.healthCheck();
    const stats = await caller.admin.statistics({ days: 1 });
    const hc = stats.procedures.find((p) => p.path === 'admin.healthCheck');
    expect(hc).toMatchObject({ transport: 'internal', count: 2, errors: 0 });
    await caller.admin.clearCache({ target: 'all' });
    const after = await caller.admin.statistics({ days: 1 });
    expect(after.procedures.find((p) => p.path === 'admin.healthCheck')).toBeUndefined();
  });

  it('getUserInfo reports admin status, balances and key providers (never keys)', async () => {
    const { runtime, caller } = await callerAs(admin);
    await runtime.billing.credit({ userId: 'u1', tokens: 500, type: 'one_time', idempotencyKey: 'k1', source: 'admin' });
    await runtime.vault.store('u1', 'openai', 'sk-test-secret-value-123456');
    const info = await caller.admin.getUserInfo({ userId: 'u1', includePermissions: true, includeUsage: true });
    expect(info).toMatchObject({ userId: 'u1', isAdmin: false, permissions: ['user'] });
    expect(JSON.stringify(info)).toContain('500');
    expect(JSON.stringify(info)).toContain('openai');
    expect(JSON.stringify(info)).not.toContain('sk-test-secret');
    expect(info).toMatchObject({
      usage: {
        budget: [
          { period: 'daily', source: null },
          { period: 'monthly', source: null },
        ],
      },
    });
    expect((await caller.admin.getUserInfo({ userId: 'boss@example.com', includePermissions: true, includeUsage: false })).isAdmin).toBe(
      true,
    );
  });
});
