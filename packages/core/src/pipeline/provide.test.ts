import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../createRuntime.js';
import { resolveConfig } from '../config/resolveConfig.js';
import { createLogger } from '../kernel/Logger.js';
import { MemoryStorage } from '../storage/MemoryStorage.js';
import type { Runtime } from '../runtime/Runtime.js';
import { router } from './init.js';
import { invoke } from './invoke.js';
import { publicProcedure, withServices } from './procedures.js';
import { provide } from './provide.js';
import { callContext } from './callContext.js';

describe('provide: a namespace base procedure adds its services to ctx', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    const config = resolveConfig({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false } } });
    runtime = await createRuntime(config, { storage: new MemoryStorage(), logger: createLogger('silent') });
  });
  afterAll(() => runtime.close());

  const ctxOf = (rt: Runtime) =>
    callContext(rt, {
      identity: null,
      credentialError: null,
      req: { transport: 'rpc' as const, ip: '127.0.0.1', signal: new AbortController().signal, headers: new Headers() },
    });

  it('gives the procedure the picked services, picked once per runtime', async () => {
    let picks = 0;
    const billingOnly = publicProcedure.use(
      provide((r) => {
        picks += 1;
        return { billing: r.billing };
      }),
    );
    const app = router({ seen: billingOnly.query(({ ctx }) => ({ same: ctx.billing === runtime.billing, keys: Object.keys(ctx) })) });
    const first = await invoke(app, 'seen', undefined, ctxOf(runtime));
    const second = await invoke(app, 'seen', undefined, ctxOf(runtime));
    expect(first.ok && first.data).toMatchObject({ same: true });
    expect(first.ok && (first.data as { keys: string[] }).keys).toContain('billing');
    expect(second.ok).toBe(true);
    expect(picks).toBe(1);
  });

  it('shows procedures no runtime: ctx has no runtime key, withServices adds the public services only', async () => {
    const app = router({
      keys: publicProcedure.query(({ ctx }) => Object.keys(ctx)),
      services: publicProcedure.use(withServices).query(({ ctx }) => ({
        storage: ctx.storage === runtime.storage,
        prompts: ctx.prompts === runtime.prompts,
        resources: ctx.resources === runtime.resources,
        billing: 'billing' in ctx,
      })),
    });
    const keys = await invoke(app, 'keys', undefined, ctxOf(runtime));
    expect(keys.ok && keys.data).toEqual(expect.arrayContaining(['identity', 'req']));
    expect(keys.ok && (keys.data as string[]).includes('runtime')).toBe(false);
    const services = await invoke(app, 'services', undefined, ctxOf(runtime));
    expect(services.ok && services.data).toEqual({ storage: true, prompts: true, resources: true, billing: false });
  });

  it('is what every built-in namespace uses: no procedure file reads the whole runtime', () => {
    const routers = new URL('../routers/', import.meta.url).pathname;
    const offenders: string[] = [];
    for (const ns of readdirSync(routers, { withFileTypes: true })) {
      if (!ns.isDirectory() || ns.name === 'adapters') continue;
      for (const file of readdirSync(join(routers, ns.name))) {
        if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue;
        const text = readFileSync(join(routers, ns.name, file), 'utf8');
        if (/ctx\.runtime\b|runtime\/Runtime\.js|runtimeOf\(|callContext/.test(text)) offenders.push(`${ns.name}/${file}`);
      }
    }
    // Also proves the check reads real files: the ai namespace's router is among them.
    expect(readFileSync(join(routers, 'ai', 'aiRouter.ts'), 'utf8')).toContain('aiServices');
    expect(offenders).toEqual([]);
  });
});
