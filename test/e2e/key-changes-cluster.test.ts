import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '@ai-backend/core';
import { dropTestKeys, dropTestSchema, testPostgres, testPostgresOptions, testRedis } from '@ai-backend/test-utils/services';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { RawMcp } from './helpers/rawMcp.js';

/**
 * An owner's change to a key takes effect on the key's next call on every instance
 * (docs/api-keys.md "Security"): two real servers on one store × how they share it (PostgreSQL
 * alone, PostgreSQL with Redis beside it, Redis as the store) × change (revoke, rotate, tools,
 * models and providers narrowed, a key scope removed) × entry point of the other instance
 * (/rpc, /trpc, an MCP session opened before the change, /v1). Each cell uses a key of its own,
 * used on the other instance before the change (so that instance has read it), and the first
 * call there after the change must be refused exactly as the new rules say. Before, on
 * PostgreSQL without Redis, the change signal stayed on the instance that made it and the other
 * kept the old record for up to a second: a revoked key went on being accepted there.
 */
const pgAt = await testPostgres();
const redisAt = await testRedis();

type Entry = 'rpc' | 'trpc' | 'mcp' | 'v1';
const ENTRIES: Entry[] = ['rpc', 'trpc', 'mcp', 'v1'];
const GENERATE = { content: 'hi', systemPrompt: 'Be brief.', provider: 'openai', options: { model: 'gpt-4.1-mini', maxTokens: 16 } };

interface Change {
  name: string;
  /** The key's rules when made. */
  rules: Record<string, unknown>;
  /** The owner's change, through the instance that did not serve the key's first call. */
  apply: (gw: AiServer, owner: string, id: string) => Promise<unknown>;
  /** The call that was allowed before and is refused after. */
  probe: { path: string; tool: string; input: Record<string, unknown>; mutation: boolean; allowed: RegExp };
  /** What the refusal says (the reason, or the message an MCP tool error carries). */
  refusal: RegExp;
  /** HTTP status of the refusal on /trpc and /v1. */
  status: number;
  entries: Entry[];
}

const generate = { path: 'ai.generateText', tool: 'generateText', input: GENERATE, mutation: true, allowed: /Test reply from openai/ };
const update = (patch: Record<string, unknown>) => (gw: AiServer, owner: string, id: string) =>
  rpcCall(gw.url, owner, 'keys.update', { id, ...patch });

const CHANGES: Change[] = [
  {
    name: 'revoked',
    rules: {},
    apply: (gw, owner, id) => rpcCall(gw.url, owner, 'keys.revoke', { id }),
    probe: generate,
    refusal: /API key revoked/,
    status: 401,
    entries: ENTRIES,
  },
  {
    name: 'rotated',
    rules: {},
    apply: (gw, owner, id) => rpcCall(gw.url, owner, 'keys.rotate', { id }),
    probe: generate,
    refusal: /API key revoked/,
    status: 401,
    entries: ENTRIES,
  },
  {
    name: 'tools narrowed',
    rules: { tools: ['ai.*', 'billing.*'] },
    apply: update({ tools: ['billing.*'] }),
    probe: generate,
    refusal: /key_tool_not_allowed|its tools rule/,
    status: 403,
    entries: ENTRIES,
  },
  {
    name: 'models narrowed',
    rules: { models: ['gpt-4.1-*'] },
    apply: update({ models: ['gpt-5-*'] }),
    probe: generate,
    refusal: /key_model_not_allowed|may not use model/,
    status: 403,
    entries: ENTRIES,
  },
  {
    name: 'providers narrowed',
    rules: { providers: ['openai', 'anthropic'] },
    apply: update({ providers: ['anthropic'] }),
    probe: generate,
    refusal: /key_provider_not_allowed|may not use provider/,
    status: 403,
    entries: ENTRIES,
  },
  {
    name: 'scope removed',
    rules: { scopes: ['files:write'] },
    apply: update({ scopes: [] }),
    // No workspace of that name: allowed, the call fails on the workspace; refused, on the scope.
    probe: {
      path: 'system.writeFile',
      tool: 'writeFile',
      input: { workspaceId: 'no-such-workspace', path: 'a.txt', content: 'x' },
      mutation: true,
      allowed: /no workspaces available/,
    },
    refusal: /key_scope_required|needs the "files:write" scope/,
    status: 403,
    entries: ['rpc', 'trpc', 'mcp'],
  },
];

/** One call on `entry` of `gw`: the HTTP status and the answer's text (a tool error's text included). */
async function call(
  gw: AiServer,
  entry: Entry,
  key: string,
  probe: Change['probe'],
  mcp?: RawMcp,
): Promise<{ status: number; text: string }> {
  const auth = { authorization: `Bearer ${key}` };
  if (entry === 'rpc') {
    const r = await rpcCall(gw.url, key, probe.path, probe.input);
    return { status: r.status, text: r.text };
  }
  if (entry === 'trpc') {
    const res = probe.mutation
      ? await fetch(`${gw.url}/trpc/${probe.path}`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ json: probe.input }),
        })
      : await fetch(`${gw.url}/trpc/${probe.path}?input=${encodeURIComponent(JSON.stringify({ json: probe.input }))}`, { headers: auth });
    return { status: res.status, text: await res.text() };
  }
  if (entry === 'mcp') {
    const r = await mcp!.callTool(probe.tool, probe.input);
    return { status: r.status, text: JSON.stringify(r.message ?? null) + (r.status >= 400 ? ` ${r.headers.get('www-authenticate')}` : '') };
  }
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4.1-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, text: await res.text() };
}

const SHARINGS = [
  { name: 'PostgreSQL alone', redis: false, type: 'postgres' },
  { name: 'PostgreSQL with Redis beside it', redis: true, type: 'postgres' },
  { name: 'Redis as the store', redis: true, type: 'redis' },
] as const;

describe.skipIf(!pgAt.ok || !redisAt.ok).each(SHARINGS)("an owner's change to a key, two servers on $name", (sharing) => {
  const label = `keychange${sharing.type}${sharing.redis ? 'r' : ''}`;
  const pg = testPostgresOptions(pgAt, label);
  const keyPrefix = `e2e-${label}-${randomUUID()}:`;
  const redis = { host: redisAt.host, port: redisAt.port, keyPrefix };
  const storage: NonNullable<ConfigInput>['storage'] =
    sharing.type === 'redis'
      ? { type: 'redis', redis }
      : { type: 'postgres', postgres: pg, ...(sharing.redis ? { shared: 'redis' as const, redis } : {}) };
  const sub = `${label}-${randomUUID().slice(0, 8)}`;
  let upstream: TestUpstream;
  let a: AiServer;
  let b: AiServer;
  let owner: string;

  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    a = await startAiServer(upstream, { storage });
    b = await startAiServer(upstream, { storage });
    owner = await tokenFor(sub);
    await creditTokens(a.url, await tokenFor(`${label}-admin`, { admin: true }), sub, 1_000_000, `seed-${sub}`);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await upstream?.close();
    if (sharing.type === 'postgres') await dropTestSchema(pgAt, pg.schema);
    await dropTestKeys(redisAt, keyPrefix);
  });

  for (const change of CHANGES) {
    it(`${change.name}: the other instance's next call is refused on ${change.entries.join(', ')}`, async () => {
      for (const entry of change.entries) {
        const made = await rpcCall(a.url, owner, 'keys.create', { name: `${change.name} ${entry}`, ...change.rules });
        expect(made.result, made.text).toBeDefined();
        const { key } = made.result;
        const mcp = entry === 'mcp' ? new RawMcp(b.url, key) : undefined;
        if (mcp) expect((await mcp.initialize()).status).toBe(200);
        // Used on b first: b has read the key under its old rules.
        const before = await call(b, entry, key, change.probe, mcp);
        expect(before.text, `${entry} before`).toMatch(change.probe.allowed);
        const changed = (await change.apply(a, owner, made.result.apiKey.id)) as { result?: unknown; text: string };
        expect(changed.result, changed.text).toBeDefined();
        const after = await call(b, entry, key, change.probe, mcp);
        expect(after.text, `${entry} after ${change.name}`).toMatch(change.refusal);
        if (entry === 'trpc' || entry === 'v1' || (entry === 'mcp' && change.status === 401))
          expect(after.status, `${entry} after ${change.name}`).toBe(change.status);
        expect(after.text).not.toContain(key);
      }
    });
  }
});
