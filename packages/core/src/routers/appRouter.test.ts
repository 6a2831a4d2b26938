import { beforeAll, describe, expect, it } from 'vitest';
import { lazy, type AnyProcedure } from '@trpc/server';
import { router } from '../pipeline/init.js';
import { builtinRouter, createAppRouter } from './appRouter.js';
import { invoke, isRouterLoaded, loadRouter, loadedProcedureIndex, procedureIndex } from '../pipeline/invoke.js';
import { BUILT_IN_NAMESPACES } from '../kernel/namespaces.js';
import { createRuntime } from '../createRuntime.js';
import { resolveConfig } from '../config/resolveConfig.js';
import { createLogger } from '../kernel/Logger.js';
import { MemoryStorage } from '../storage/MemoryStorage.js';
import { callContext } from '../pipeline/callContext.js';

/** A zod schema's kind (`lazy`, `object`, ...), or why it is not a zod schema. */
const kind = (schema: unknown): string => (schema as { _zod?: { def?: { type?: string } } })?._zod?.def?.type ?? typeof schema;

describe('built-in procedures', () => {
  // A router of its own: loading builtinRouter itself would hand its loaded namespaces to every
  // router merged from it later in this file.
  const loaded = createAppRouter();
  beforeAll(() => loadRouter(loaded));
  // A start-up builds no procedure schema (docs/architecture.md, Conventions: "Heavy dependencies
  // load on first use"): each is z.lazy and built on the procedure's first call or JSON Schema.
  it('take their input and output schemas as z.lazy', () => {
    const eager: string[] = [];
    const procedures = Object.entries(loaded._def.procedures as unknown as Record<string, AnyProcedure>);
    expect(procedures.length).toBeGreaterThan(50);
    for (const [path, procedure] of procedures) {
      const def = procedure._def as { inputs?: unknown[]; output?: unknown };
      for (const input of def.inputs ?? []) if (kind(input) !== 'lazy') eager.push(`${path} input (${kind(input)})`);
      if (def.output !== undefined && kind(def.output) !== 'lazy') eager.push(`${path} output (${kind(def.output)})`);
    }
    expect(eager).toEqual([]);
  });
});

describe('lazy namespaces', () => {
  const namespacesOf = (paths: Iterable<string>) => [...new Set([...paths].map((p) => p.split('.')[0]))].sort();

  it('are not built until loadRouter, which builds every one of them once', async () => {
    const router = createAppRouter();
    expect(isRouterLoaded(router)).toBe(false);
    // Only the eager namespace (mcp) is built; readers of the whole router refuse a partial one.
    expect(namespacesOf(loadedProcedureIndex(router).keys())).toEqual(['mcp']);
    expect(() => procedureIndex(router)).toThrow(/not loaded yet.*loadRouter/);
    const first = loadRouter(router);
    expect(loadRouter(router)).toBe(first);
    await first;
    expect(isRouterLoaded(router)).toBe(true);
    expect(namespacesOf(procedureIndex(router).keys())).toEqual([...BUILT_IN_NAMESPACES].sort());
    expect(loadedProcedureIndex(router)).toBe(procedureIndex(router));
  });

  it('keep a custom router next to them, built at once', async () => {
    const router = createAppRouter({ weather: builtinRouter._def.record.mcp as never });
    expect(namespacesOf(loadedProcedureIndex(router).keys())).toEqual(['mcp', 'weather']);
    await loadRouter(router);
    expect(procedureIndex(router).has('weather.echo')).toBe(true);
    expect(procedureIndex(router).has('ai.generateText')).toBe(true);
  });

  // The prompt and resource registries are filled at start-up from the procedures built so far
  // (promptsFromRouter, resourcesFromRouter): a prompt or resource in a lazy namespace would be missing.
  it('publish no MCP prompt or resource (only eager namespaces may)', async () => {
    const router = createAppRouter();
    const eager = new Set(loadedProcedureIndex(router).keys());
    await loadRouter(router);
    const published = [...procedureIndex(router).values()].filter(
      (info) => !eager.has(info.path) && (info.meta?.mcp?.prompt || info.meta?.mcp?.resource),
    );
    expect(published.map((info) => info.path)).toEqual([]);
  });

  it('that cannot load fail loadRouter, and invoke answers with an error instead of throwing', async () => {
    const broken = router({ gone: lazy(() => Promise.reject(new Error('chunk missing'))) });
    await expect(loadRouter(broken)).rejects.toThrow('chunk missing');
    expect(isRouterLoaded(broken)).toBe(false);
    const ctx = {
      identity: null,
      credentialError: null,
      req: { transport: 'rpc' as const, ip: '127.0.0.1', signal: new AbortController().signal, headers: new Headers() },
    };
    const result = await invoke(broken, 'gone.anything', undefined, ctx as never);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe('INTERNAL_SERVER_ERROR');
  });

  it('load on the first invoke of a runtime created with lazyRouter (createServer), and only then', async () => {
    const config = resolveConfig({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false } } });
    const runtime = await createRuntime(config, { storage: new MemoryStorage(), logger: createLogger('silent'), lazyRouter: true });
    try {
      expect(isRouterLoaded(runtime.router)).toBe(false);
      // The prompt registry was filled at start-up without loading anything.
      expect(runtime.prompts.list().map((p) => p.name)).toContain('codeReviewPrompt');
      const ctx = callContext(runtime, {
        identity: null,
        credentialError: null,
        req: { transport: 'rpc' as const, ip: '127.0.0.1', signal: new AbortController().signal, headers: new Headers() },
      });
      const result = await invoke(runtime.router, 'mcp.ping', undefined, ctx);
      expect(result.ok).toBe(true);
      expect(isRouterLoaded(runtime.router)).toBe(true);
    } finally {
      await runtime.close();
    }
    // Without lazyRouter the runtime hands out a loaded router.
    const eager = await createRuntime(config, { storage: new MemoryStorage(), logger: createLogger('silent') });
    try {
      expect(isRouterLoaded(eager.router)).toBe(true);
    } finally {
      await eager.close();
    }
  });
});
