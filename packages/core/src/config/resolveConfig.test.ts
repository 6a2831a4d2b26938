import { describe, expect, it } from 'vitest';
import { ConfigSchema } from './schema.js';
import { checkConfig, ConfigError, resolveConfig } from './resolveConfig.js';

// resolveConfig parses without zod's JIT (parseOnce.ts); it must resolve and refuse exactly as
// the schema's default (JIT) parse does.
const configs: unknown[] = [
  undefined,
  { storage: { type: 'memory' } },
  { port: 0, storage: { type: 'sqlite', dir: '/tmp/x' }, mcp: { auth: { authType: 'none' } } },
  {
    storage: { type: 'memory' },
    ai: {
      providers: {
        openai: { apiKey: 'sk-test' },
        local: { type: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', defaultModel: 'm' },
      },
    },
    serverWorkspaces: { docs: { path: '/tmp/docs', readOnly: true } },
  },
];
const invalid: unknown[] = [
  { port: -1 },
  { storage: { type: 'nope' } },
  { unknownKey: true },
  { ai: { providers: { local: { type: 'azure' } } } },
  { serverWorkspaces: { docs: { path: '' } } },
];

describe('resolveConfig (jitless parse)', () => {
  it.each(configs.map((c) => [JSON.stringify(c) ?? 'undefined', c]))('resolves %s as the JIT parse does', (_, input) => {
    expect(resolveConfig(input as never)).toEqual(ConfigSchema.parse(input ?? {}));
  });

  it.each(invalid.map((c) => [JSON.stringify(c), c]))('refuses %s with the JIT parse issues', (_, input) => {
    const jit = ConfigSchema.safeParse(input);
    expect(jit.success).toBe(false);
    expect(() => resolveConfig(input as never)).toThrow(ConfigError);
    const checked = checkConfig(input);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.problems.map((p) => p.path)).toEqual(jit.error!.issues.map((i) => i.path.map(String).join('.')));
  });
});

describe('a named provider’s headers', () => {
  const withHeaders = (headers: Record<string, string>) => ({
    ai: { providers: { local: { type: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', defaultModel: 'm', headers } } },
  });

  it('takes ordinary headers', () => {
    const config = resolveConfig(withHeaders({ 'x-team': 'research', 'OpenAI-Organization': 'org-1' }) as never);
    expect(config.ai.providers.local).toMatchObject({ headers: { 'x-team': 'research', 'OpenAI-Organization': 'org-1' } });
  });

  // undici refuses a request that sets these: configured, they would fail every call at run time.
  it.each(['Connection', 'keep-alive', 'Transfer-Encoding', 'upgrade', 'Content-Length', 'expect'])(
    'refuses %s, which the HTTP client sets itself, naming the header',
    (name) => {
      const checked = checkConfig(withHeaders({ [name]: 'x' }));
      expect(checked.ok).toBe(false);
      if (!checked.ok) {
        expect(checked.problems.map((p) => p.path)).toEqual([`ai.providers.local.headers.${name}`]);
        expect(checked.problems[0]!.message).toMatch(/set by the HTTP client/);
      }
    },
  );

  it.each([
    ['a name that is not a token', { 'x team': 'a' }, /HTTP header name/],
    ['a value with a line break', { 'x-team': 'a\r\nx-admin: 1' }, /line breaks/],
  ])('refuses %s', (_, headers, message) => {
    const checked = checkConfig(withHeaders(headers));
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.problems.map((p) => p.message).join(' ')).toMatch(message);
  });
});
