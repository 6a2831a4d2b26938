import { describe, expect, it, vi } from 'vitest';
import { PARSE_ONCE } from './parseOnce.js';
import { lazySectionBuilders } from './lazySection.js';
import { SECTION_DEFAULTS } from './sectionDefaults.js';
import { resolveConfig } from './resolveConfig.js';

/** A config that names every lazy section with `{}`: each is then parsed by its real schema. */
function namingEverySection(base: Record<string, unknown> = {}): Record<string, unknown> {
  const config: Record<string, unknown> = structuredClone(base);
  for (const path of lazySectionBuilders().keys()) {
    const parts = path.split('.');
    let at = config;
    for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Record<string, unknown>;
    at[parts.at(-1)!] ??= {};
  }
  return config;
}

describe('lazy config sections', () => {
  it('sectionDefaults.ts is what each section resolves {} to (else run node scripts/genConfigDefaults.mjs)', () => {
    const builders = lazySectionBuilders();
    expect([...builders.keys()].sort()).toEqual(Object.keys(SECTION_DEFAULTS).sort());
    for (const [path, build] of builders) expect(build().parse({}, PARSE_ONCE), path).toStrictEqual(SECTION_DEFAULTS[path]);
  });

  it.each([
    [{}],
    [{ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } }],
    [{ port: 0, host: '127.0.0.1', jwt: { secret: 'x'.repeat(32) }, mcp: { auth: { authType: 'jwt' } } }],
  ])('a config that leaves sections out resolves as one that names them: %j', (base) => {
    expect(resolveConfig(base as never)).toStrictEqual(resolveConfig(namingEverySection(base) as never));
  });

  it('each resolved config gets its own copy of a section default', () => {
    const a = resolveConfig({ storage: { type: 'memory' } });
    const b = resolveConfig({ storage: { type: 'memory' } });
    expect(a.ai).toEqual(b.ai);
    expect(a.ai).not.toBe(b.ai);
    a.ai.byokProviders.push('changed');
    a.mcp.budgets.eventStore.ttlMs = 1;
    expect(resolveConfig({ storage: { type: 'memory' } }).ai.byokProviders).not.toContain('changed');
    expect(resolveConfig({}).mcp.budgets.eventStore.ttlMs).toBe(600_000);
  });

  it('a section the config leaves out is never built; one it names is, with its own errors', async () => {
    // Fresh modules: other tests in this file have built every section already.
    vi.resetModules();
    const { resolveConfig: resolve } = await import('./resolveConfig.js');
    const { ConfigSchema } = await import('./schema.js');
    resolve({ storage: { type: 'memory' } });
    expect(lazyInner(ConfigSchema, 'ai')).toBeUndefined();
    expect(lazyInner(ConfigSchema, 'oauth')).toBeUndefined();
    expect(() => resolve({ ai: { maxRetries: 99 } })).toThrow(/ai\.maxRetries/);
    expect(lazyInner(ConfigSchema, 'ai')).toBeDefined();
    expect(lazyInner(ConfigSchema, 'oauth')).toBeUndefined();
  });
});

/** The built inner schema of the lazy section at `key` of the config's shape, or undefined while unbuilt. */
function lazyInner(schema: unknown, key: string): unknown {
  // ConfigSchema is a chain of checks and transforms around the strict object; find the object.
  let at = schema as { _zod: { def: Record<string, unknown> } };
  for (let i = 0; i < 20 && !('shape' in at._zod.def); i++)
    at = (at._zod.def.in ?? at._zod.def.innerType ?? at._zod.def.schema) as typeof at;
  const section = (at._zod.def.shape as Record<string, { _zod: { def: { innerType: { _zod: { def: { _cachedInner?: unknown } } } } } }>)[
    key
  ]!;
  return section._zod.def.innerType._zod.def._cachedInner;
}
