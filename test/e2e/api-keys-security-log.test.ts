import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callVia,
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type Entry,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { callV1, v1Clients, type V1Format } from './helpers/v1Call.js';

/**
 * Every refusal of an API key (its rules: tools, models; its limits: requests and tokens per
 * minute, concurrent calls, budget) is one `key_refused` line of the security log, with the same
 * fields on every entry point (/trpc, /rpc, /mcp and the three /v1 formats): the refusal's code
 * and rule, the entry point, the caller's address and subject, the procedure and the key's id.
 * Never the key itself, never the prompt. Read from the log file the server writes.
 */
const OWNER = 'seclog-owner';
const PROMPT = 'PRIVATE-PROMPT-TEXT-must-not-be-logged';
/** A call's worst case far above the tokens-per-minute rule below. */
const MAX_TOKENS = 64;

/** `stream`: OpenAI chat completions streamed (ai.streamText), where a refusal may come after the call started. */
type Via = Entry | V1Format | 'stream';
const VIAS: readonly Via[] = ['trpc', 'rpc', 'mcp', 'chat', 'responses', 'messages', 'stream'];
const TRANSPORT: Record<Via, string> = {
  trpc: 'trpc',
  rpc: 'rpc',
  mcp: 'mcp',
  chat: 'openai',
  responses: 'openai',
  messages: 'anthropic',
  stream: 'openai',
};

/** The rules of each key and the refusal it leads to. */
const CASES = {
  tools: { rules: { tools: ['billing.*'] }, reason: 'FORBIDDEN', rule: 'key_tool_not_allowed' },
  models: { rules: { models: ['no-such-model-*'] }, reason: 'FORBIDDEN', rule: 'key_model_not_allowed' },
  requests: { rules: { limits: { requestsPerMinute: 4 } }, reason: 'RATE_LIMITED', rule: 'key_requests_limit' },
  tokens: { rules: { limits: { tokensPerMinute: 10 } }, reason: 'INVALID_PARAMS', rule: 'key_tokens_limit' },
  concurrent: { rules: { limits: { concurrent: 1 } }, reason: 'RATE_LIMITED', rule: 'key_concurrent_limit' },
  budget: { rules: { budget: { total: { tokens: 1 } } }, reason: 'PAYMENT_REQUIRED', rule: 'key_budget_exceeded' },
} as const;
type Case = keyof typeof CASES;

let upstream: TestUpstream;
let gw: AiServer;
let dir: string;
let logFile: string;
let owner: string;
const keys: Array<{ via: Via; kind: Case; key: string; id: string }> = [];

beforeAll(async () => {
  upstream = await createTestUpstream();
  dir = await mkdtemp(path.join(tmpdir(), 'key-seclog-'));
  logFile = path.join(dir, 'security.log');
  gw = await startAiServer(upstream, {
    mcp: { securityLogging: { enabled: true, logLevel: 'warn', logToFile: true, logFilePath: logFile } },
  });
  owner = await tokenFor(OWNER);
  await creditTokens(gw.url, await tokenFor('seclog-admin', { admin: true }), OWNER, 1_000_000, 'seclog-credit');
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Key → its id, for every key made here. */
const idOf: Record<string, string> = {};

async function newKeyFor(rules: Record<string, unknown>): Promise<string> {
  const made = await rpcCall(gw.url, owner, 'keys.create', { name: 'seclog', ...rules });
  if (!made.result) throw new Error(made.text);
  idOf[made.result.key] = made.result.apiKey.id;
  return made.result.key as string;
}

async function newKey(via: Via, kind: Case): Promise<string> {
  const key = await newKeyFor(CASES[kind].rules);
  keys.push({ via, kind, key, id: idOf[key]! });
  return key;
}

/** One generateText-like call through `via` with `key`; `slow` holds the upstream answer a while. True when it was answered. */
async function call(via: Via, key: string, slow = false): Promise<boolean> {
  const content = `${slow ? '[[upstream:latency=1500]] ' : ''}${PROMPT}`;
  if (via === 'mcp') {
    // One session per key (its requests count too), left open: a DELETE would be one more request.
    const client = (mcpSessions[key] ??= await mcpSession(key));
    if (!client) return false;
    const r = await client
      .callTool({
        name: 'generateText',
        arguments: { content, systemPrompt: 'Answer briefly.', provider: 'openai', options: { maxTokens: MAX_TOKENS } },
      })
      .catch(() => ({ isError: true }));
    return r.isError !== true;
  }
  if (via === 'trpc' || via === 'rpc') {
    const out = await callVia(gw, via, key, 'ai.generateText', {
      content,
      systemPrompt: 'Answer briefly.',
      provider: 'openai',
      options: { maxTokens: MAX_TOKENS },
    });
    return out.ok;
  }
  const out = await callV1(v1Clients(gw.url, key), via === 'stream' ? 'chat' : via, {
    content,
    stream: via === 'stream',
    maxTokens: MAX_TOKENS,
  });
  return !out.failed;
}

const mcpSessions: Record<string, Client | null> = {};
async function mcpSession(key: string): Promise<Client | null> {
  const client = new Client({ name: 'key-seclog', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  return client.connect(transport).then(
    () => client,
    () => null,
  );
}

async function refuse(via: Via, kind: Case): Promise<void> {
  const key = await newKey(via, kind);
  if (kind === 'requests') {
    // Calls until the minute's requests are used up (an MCP session's own requests count too): then one refusal.
    let answered = 0;
    while (await call(via, key)) answered++;
    expect(answered, `${via} calls before the limit`).toBeGreaterThan(0);
    return;
  }
  if (kind === 'concurrent') {
    const held = call(via, key, true);
    await new Promise((r) => setTimeout(r, 400));
    expect(await call(via, key), `${via} ${kind}`).toBe(false);
    expect(await held).toBe(true);
    return;
  }
  expect(await call(via, key), `${via} ${kind}`).toBe(false);
}

describe('refusals of an API key in the security log', () => {
  it('one key_refused line per refusal, alike on every entry point, without key or prompt', async () => {
    for (const via of VIAS) for (const kind of Object.keys(CASES) as Case[]) await refuse(via, kind);
    // Routes outside the entry points that count a key's requests: the refused request is a line too.
    const routeKeys: Record<string, string> = {};
    for (const route of ['/metrics', '/health/ready']) {
      const key = (routeKeys[route] = await newKeyFor({ limits: { requestsPerMinute: 1 } }));
      const get = () => fetch(gw.url + route, { headers: { authorization: `Bearer ${key}` } });
      await (await get()).text();
      const refused = await get();
      await refused.text();
      expect(refused.status, route).toBe(429);
    }
    await gw.stop(); // flushes the file
    const text = await readFile(logFile, 'utf8');
    expect(text).not.toContain(PROMPT);
    for (const key of Object.keys(idOf)) expect(text).not.toContain(key);
    const events = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const problems: string[] = [];
    for (const { via, kind, id } of keys) {
      const mine = events.filter((e) => e.keyId === id);
      const want = { type: 'key_refused', reason: CASES[kind].reason, rule: CASES[kind].rule, transport: TRANSPORT[via] };
      if (mine.length !== 1)
        problems.push(`${via} ${kind}: ${mine.length} lines ${JSON.stringify(mine.map((e) => [e.type, e.rule, e.path]))}`);
      else {
        const e = mine[0]!;
        if (Object.entries(want).some(([k, v]) => e[k] !== v) || e.sub !== OWNER || e.ip !== '127.0.0.1' || typeof e.path !== 'string')
          problems.push(`${via} ${kind}: ${JSON.stringify(e)}`);
      }
    }
    expect(problems).toEqual([]);
    for (const [route, transport] of [
      ['/metrics', 'metrics'],
      ['/health/ready', 'health'],
    ] as const) {
      const line = events.filter((e) => e.keyId === idOf[routeKeys[route]!]);
      expect(line, route).toEqual([
        expect.objectContaining({ type: 'key_refused', rule: 'key_requests_limit', transport, path: route, sub: OWNER }),
      ]);
    }
  });
});
