/**
 * Every long-lived stream kind under the same caps (limits.maxSseStreamsPerClient,
 * maxSseStreamsPerIdentity, maxSseStreams), against a real server process started under
 * `ulimit -n 256`: an attacker opening many streams of one kind is refused (429, or 503 at the
 * server's cap, with Retry-After and the entry point's own error shape) before the process runs
 * out of descriptors, while /health and other clients keep being answered. Each kind is then
 * closed and its places come free again.
 *
 * The server trusts X-Forwarded-For (trustProxy) so one test process can be many client addresses.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { mintDevToken } from '@ai-backend/auth';
import { createTestUpstream, waitFor, type TestUpstream } from '@ai-backend/test-utils';

const BIN = fileURLToPath(new URL('../../packages/cli/bin/ai-backend.js', import.meta.url));
const CLI = pathToFileURL(fileURLToPath(new URL('../../packages/cli/dist/index.js', import.meta.url))).href;
const ZOD = import.meta.resolve('zod');
const SECRET = 'stream-caps-jwt-secret-0123456789abcdef0123';
const PER_ADDRESS = 16;
const PER_IDENTITY = 24;
/** A third of the 256 descriptors the process gets (the default of limits.maxSseStreams: an AI stream holds two). */
const TOTAL = 85;
const ATTEMPTS = 40;
const MCP_2025 = '2025-06-18';
const LEAK = new RegExp(`${SECRET}|sk-server|at .*\\.js:\\d+`);

let dir: string;
let child: ChildProcess;
let base: string;
let upstream: TestUpstream;
let stderr = '';

/** A config with one tool that holds its call open until cancelled (a long MCP POST or tRPC stream). */
function configModule(ai: unknown): string {
  return `import { router, publicProcedure } from ${JSON.stringify(CLI)};
import { z } from ${JSON.stringify(ZOD)};
const hold = publicProcedure
  .meta({ description: 'Holds the call open until cancelled', mcp: { name: 'hold', public: true } })
  .input(z.object({ ms: z.number().int().max(120000).default(60000) }))
  .query(({ ctx, input }) => new Promise((resolve) => {
    const timer = setTimeout(() => resolve('done'), input.ms);
    ctx.req?.signal?.addEventListener('abort', () => { clearTimeout(timer); resolve('cancelled'); });
  }));
// Reports progress first, so a 2026-07-28 answer (responseMode 'auto') turns into an event stream.
const progressHold = publicProcedure
  .meta({ description: 'Reports progress, then holds the call open', mcp: { name: 'progressHold', public: true } })
  .input(z.object({ ms: z.number().int().max(120000).default(60000) }))
  .mutation(async ({ ctx, input }) => {
    await ctx.mcp?.progress(1, 2, 'started');
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve('done'), input.ms);
      ctx.req?.signal?.addEventListener('abort', () => { clearTimeout(timer); resolve('cancelled'); });
    });
  });
export default {
  port: 0,
  host: '127.0.0.1',
  trustProxy: true,
  storage: { type: 'memory' },
  jwt: { secret: ${JSON.stringify(SECRET)} },
  mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false }, budgets: { sessionsPerAddress: 200 } },
  serverProviders: ['openai', 'anthropic'],
  ai: ${JSON.stringify(ai)},
  limits: { maxSseStreamsPerClient: ${PER_ADDRESS}, maxSseStreamsPerIdentity: ${PER_IDENTITY} },
  customRouters: { slow: router({ hold, progressHold }) },
};
`;
}

const token = (sub: string, admin = false) => mintDevToken({ secret: SECRET, sub, scopes: admin ? ['mcp', 'mcp:admin'] : ['mcp'] });

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 16 });
  dir = await mkdtemp(path.join(tmpdir(), 'ai-backend-streams-'));
  await writeFile(path.join(dir, 'ai-backend.config.mjs'), configModule(upstream.aiConfig({ apiKey: 'sk-server-STREAMS' })));
  // The descriptor limit is the point: the caps must refuse streams long before it is reached.
  child = spawn('bash', ['-c', `ulimit -n 256; exec "${process.execPath}" "${BIN}" serve --config ai-backend.config.mjs`], {
    cwd: dir,
    env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn' },
  });
  base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) resolve(m[1]!.replace(/\/$/, ''));
    });
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
  // Fund the identities the /v1 streams run as.
  const admin = await token('ops', true);
  for (const sub of ['attacker', 'victim']) {
    const res = await fetch(`${base}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'billing.creditTokens',
        params: { userId: sub, tokens: 10_000_000, type: 'one_time', idempotencyKey: `fund-${sub}` },
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.text();
  }
}, 60_000);

afterAll(async () => {
  child?.kill('SIGKILL');
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** One attempt at a stream: open (status 200 and an event stream / JSON lines), or refused. */
interface Attempt {
  status: number;
  retryAfter: string | null;
  /** The answer's Connection header: a refusal closes its connection (StreamAdmission's closeAfterRefusal). */
  connection?: string | null;
  body: string;
  /** For an open stream: whether its body already ended (the server gave its place back), and what it said. */
  ended?: () => string | undefined;
  close(): void;
}

const from = (addr: string) => ({ 'x-forwarded-for': addr });

/**
 * A fetch whose 200 answer stays open until close(); any other answer is read whole. An open
 * stream is read in the background, so a stream the server ends early (and whose place it may
 * then give to another) is told apart from one it still holds.
 */
async function attempt(url: string, init: RequestInit): Promise<Attempt> {
  const ac = new AbortController();
  const res = await fetch(url, { ...init, signal: ac.signal });
  // An event stream, or a tRPC streamed batch (JSON lines): left open.
  const streaming = res.status === 200 && (res.headers.get('content-type')?.includes('text/event-stream') || url.includes('/trpc/'));
  const body = streaming ? '' : await res.text();
  let said = '';
  let ended: string | undefined;
  if (streaming)
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body!) said += decoder.decode(chunk as Uint8Array, { stream: true });
        ended = `ended: ${said.slice(0, 300)}`;
      } catch (err) {
        if (!ac.signal.aborted) ended = `failed (${(err as Error).message}) after: ${said.slice(0, 300)}`;
      }
    })();
  const a = {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    connection: res.headers.get('connection'),
    body,
    ended: () => ended,
    close: () => ac.abort(),
  };
  if (streaming) opened.push(a);
  return a;
}

/** Every stream a test opened, closed after it even when it failed (so a retry starts with free places). */
const opened: Attempt[] = [];

/** /health answers at once, and another client from another address is served. */
async function othersStillServed(victim: () => Promise<Attempt>): Promise<void> {
  const t0 = performance.now();
  const health = await fetch(`${base}/health`);
  expect(health.status).toBe(200);
  await health.text();
  expect(performance.now() - t0).toBeLessThan(2000);
  const v = await victim();
  expect(v.status, v.body).toBe(200);
  v.close();
}

/** `n` attempts at once: `cap` held at once (exactly, unless one ended), the rest refused with `status`, Retry-After and `message`. */
function expectCapped(attempts: Attempt[], cap: number, status: number, message: RegExp): void {
  const open = attempts.filter((a) => a.status === 200);
  const refused = attempts.filter((a) => a.status !== 200);
  // A stream that ended on its own gave its place back, and another attempt may have had it: the
  // cap is about streams held at once. None of these should end (each holds for a minute), so an
  // early end is printed with its words; the cap must hold either way.
  const ended = open.map((a) => a.ended?.()).filter((e) => e !== undefined);
  if (ended.length > 0) console.warn(`stream-caps: ${ended.length} stream(s) ended early:\n${ended.slice(0, 3).join('\n')}`);
  const refusedWords = refused
    .map((r) => `${r.status} ${r.body}`)
    .slice(0, 3)
    .join('\n');
  expect(open.length - ended.length, refusedWords).toBeLessThanOrEqual(cap);
  expect(open.length, refusedWords).toBeGreaterThanOrEqual(cap);
  for (const r of refused) {
    expect(r.status, r.body).toBe(status);
    expect(r.retryAfter).toBe('5');
    expect(r.connection).toBe('close');
    expect(r.body).toMatch(message);
    expect(r.body).not.toMatch(LEAK);
  }
}

/** Close every stream, then wait until the address may open one again (its places came back). */
async function closeAndRecover(attempts: Attempt[], again: () => Promise<Attempt>): Promise<void> {
  for (const a of attempts) a.close();
  const ok = await waitFor(
    async () => {
      const a = await again();
      if (a.status === 200) return a;
      return undefined;
    },
    { timeoutMs: 10_000, intervalMs: 100, what: 'a place after the streams closed' },
  );
  ok.close();
}

const ADDRESS_REFUSAL = /too many open event streams from this address \(limit 16\)/;

// ---- MCP 2025 (sessions) ---------------------------------------------------------------------

const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MCP_2025 };

async function openSession(addr: string): Promise<string> {
  const init = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...mcpHeaders, ...from(addr) },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: MCP_2025, capabilities: {}, clientInfo: { name: 'caps', version: '1' } },
    }),
  });
  const id = init.headers.get('mcp-session-id');
  const text = await init.text();
  if (!id) throw new Error(`no session: ${init.status} ${text}`);
  await (
    await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { ...mcpHeaders, ...from(addr), 'mcp-session-id': id },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    })
  ).text();
  return id;
}

const getStream = (addr: string, session: string) =>
  attempt(`${base}/mcp`, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': MCP_2025, ...from(addr) },
  });

const holdCall = (addr: string, session: string, id: number) =>
  attempt(`${base}/mcp`, {
    method: 'POST',
    headers: { ...mcpHeaders, ...from(addr), 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { ms: 60_000 } } }),
  });

// ---- MCP 2026-07-28 ---------------------------------------------------------------------------

const META_2026 = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'caps', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

const listen = (addr: string, id: number) =>
  attempt(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
      ...from(addr),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: { notifications: { promptsListChanged: true, resourcesListChanged: true }, _meta: META_2026 },
    }),
  });

const progressCall = (addr: string, id: number) =>
  attempt(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'progressHold',
      ...from(addr),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'progressHold', arguments: { ms: 60_000 }, _meta: { ...META_2026, progressToken: `p${id}` } },
    }),
  });

// ---- tRPC streamed batches --------------------------------------------------------------------

const trpcStream = (addr: string) =>
  attempt(`${base}/trpc/slow.hold?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: { json: { ms: 60_000 } } }))}`, {
    headers: { 'trpc-accept': 'application/jsonl', ...from(addr) },
  });

// ---- /v1 with the vendors' clients ------------------------------------------------------------

/** A slow streamed reply: the first frame at once, then one a second for a minute. */
const SLOW = 'stream slowly [[upstream:chunk-delay=1000]][[upstream:output=60]]';

async function sdkAttempt(open: (signal: AbortSignal) => Promise<unknown>): Promise<Attempt> {
  const ac = new AbortController();
  try {
    await open(ac.signal);
    const a = { status: 200, retryAfter: null, body: '', close: () => ac.abort() };
    opened.push(a);
    return a;
  } catch (err) {
    const e = err as { status?: number; headers?: Headers | Record<string, string>; error?: unknown; message?: string };
    const headers = e.headers instanceof Headers ? Object.fromEntries(e.headers) : (e.headers ?? {});
    return {
      status: e.status ?? 0,
      retryAfter: headers['retry-after'] ?? null,
      connection: headers.connection ?? null,
      body: JSON.stringify(e.error ?? e.message),
      close: () => undefined,
    };
  }
}

/** `byok`: the caller's own provider key (no credits needed, so any number of identities can stream). */
async function openAiStream(sub: string, addr: string, byok = false): Promise<Attempt> {
  const headers = { ...from(addr), ...(byok ? { 'x-provider-api-key': 'sk-byok-STREAMS' } : {}) };
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: await token(sub), maxRetries: 0, defaultHeaders: headers });
  return sdkAttempt((signal) =>
    client.chat.completions.create(
      { model: 'openai/gpt-4.1-mini', max_tokens: 100, stream: true, messages: [{ role: 'user', content: SLOW }] },
      { signal },
    ),
  );
}

async function responsesStream(sub: string, addr: string): Promise<Attempt> {
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: await token(sub), maxRetries: 0, defaultHeaders: from(addr) });
  return sdkAttempt((signal) =>
    client.responses.create({ model: 'openai/gpt-4.1-mini', max_output_tokens: 100, stream: true, input: SLOW }, { signal }),
  );
}

async function anthropicStream(sub: string, addr: string): Promise<Attempt> {
  const client = new Anthropic({ baseURL: base, apiKey: await token(sub), maxRetries: 0, defaultHeaders: from(addr) });
  return sdkAttempt((signal) =>
    client.messages.create(
      { model: 'anthropic/claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: SLOW }] },
      { signal },
    ),
  );
}

const many = <T>(n: number, f: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));

describe('every long-lived stream under the same caps, server under ulimit -n 256', () => {
  afterEach(async () => {
    for (const a of opened.splice(0)) a.close();
    // The server's places come back as it sees each connection close.
    await closeAndRecover([], () => trpcStream('10.9.0.1'));
  });

  it('MCP GET streams (2025 sessions): 16 per address, then 429 with a JSON-RPC error', async () => {
    const sessions: string[] = [];
    for (let i = 0; i < ATTEMPTS; i++) sessions.push(await openSession('10.1.0.1'));
    // Opened now: once the address holds its 16 streams, an initialize (answered as SSE) is refused too.
    const spare = await openSession('10.1.0.1');
    const attempts = await many(ATTEMPTS, (i) => getStream('10.1.0.1', sessions[i]!));
    expectCapped(attempts, PER_ADDRESS, 429, ADDRESS_REFUSAL);
    expect(JSON.parse(attempts.find((a) => a.status === 429)!.body)).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });
    const victimSession = await openSession('10.1.0.2');
    await othersStillServed(() => getStream('10.1.0.2', victimSession));
    expect(
      (
        await attempt(`${base}/mcp`, {
          method: 'POST',
          headers: { ...mcpHeaders, ...from('10.1.0.1'), 'mcp-session-id': spare },
          body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
        })
      ).status,
    ).toBe(429);
    await closeAndRecover(attempts, () => getStream('10.1.0.1', spare));
  }, 60_000);

  it('MCP POST answers streamed as SSE (2025 session): 16 calls in flight per address, then 429', async () => {
    const session = await openSession('10.2.0.1');
    const attempts = await many(ATTEMPTS, (i) => holdCall('10.2.0.1', session, i + 1));
    expectCapped(attempts, PER_ADDRESS, 429, ADDRESS_REFUSAL);
    const victimSession = await openSession('10.2.0.2');
    await othersStillServed(() => holdCall('10.2.0.2', victimSession, 1));
    await closeAndRecover(attempts, () => holdCall('10.2.0.1', session, 999));
  }, 60_000);

  it('MCP 2026-07-28 subscriptions/listen: 16 per address, then 429 (the 216-stream finding)', async () => {
    const attempts = await many(ATTEMPTS, (i) => listen('10.3.0.1', i + 1));
    expectCapped(attempts, PER_ADDRESS, 429, ADDRESS_REFUSAL);
    await othersStillServed(() => listen('10.3.0.2', 1));
    await closeAndRecover(attempts, () => listen('10.3.0.1', 999));
  }, 60_000);

  it('MCP 2026-07-28 tools/call answered as SSE (progress before the result): 16 per address, then 429', async () => {
    const attempts = await many(ATTEMPTS, (i) => progressCall('10.3.1.1', i + 1));
    expectCapped(attempts, PER_ADDRESS, 429, ADDRESS_REFUSAL);
    await othersStillServed(() => progressCall('10.3.1.2', 1));
    await closeAndRecover(attempts, () => progressCall('10.3.1.1', 999));
  }, 60_000);

  it('tRPC streamed batches (httpBatchStreamLink): 16 per address, then 429 in tRPC’s error shape', async () => {
    const attempts = await many(ATTEMPTS, () => trpcStream('10.4.0.1'));
    expectCapped(attempts, PER_ADDRESS, 429, ADDRESS_REFUSAL);
    expect(JSON.parse(attempts.find((a) => a.status === 429)!.body)).toMatchObject({
      error: { json: { data: { code: 'TOO_MANY_REQUESTS', httpStatus: 429 } } },
    });
    await othersStillServed(() => trpcStream('10.4.0.2'));
    await closeAndRecover(attempts, () => trpcStream('10.4.0.1'));
  }, 60_000);

  it('/v1/chat/completions stream: true (openai client): 16 per address, then 429 rate_limit_error', async () => {
    const attempts = await many(ATTEMPTS, () => openAiStream('attacker', '10.5.0.1'));
    expectCapped(attempts, PER_ADDRESS, 429, ADDRESS_REFUSAL);
    await othersStillServed(() => openAiStream('victim', '10.5.0.2'));
    await closeAndRecover(attempts, () => openAiStream('attacker', '10.5.0.1'));
  }, 60_000);

  it('/v1/responses stream: true (openai client): 16 per address, then 429', async () => {
    const attempts = await many(ATTEMPTS, () => responsesStream('attacker', '10.5.1.1'));
    expectCapped(attempts, PER_ADDRESS, 429, ADDRESS_REFUSAL);
    await othersStillServed(() => responsesStream('victim', '10.5.1.2'));
    await closeAndRecover(attempts, () => responsesStream('attacker', '10.5.1.1'));
  }, 60_000);

  it('/v1/messages stream: true (Anthropic client): 16 per address, then 429', async () => {
    const attempts = await many(ATTEMPTS, () => anthropicStream('attacker', '10.6.0.1'));
    expectCapped(attempts, PER_ADDRESS, 429, ADDRESS_REFUSAL);
    await othersStillServed(() => anthropicStream('victim', '10.6.0.2'));
    await closeAndRecover(attempts, () => anthropicStream('attacker', '10.6.0.1'));
  }, 60_000);

  it('one identity from many addresses: 24 streams in all, then 429 for that identity only', async () => {
    const attempts = await many(ATTEMPTS, (i) => openAiStream('attacker', `10.7.${i}.1`));
    expectCapped(attempts, PER_IDENTITY, 429, /too many open event streams for this identity \(limit 24\)/);
    await othersStillServed(() => openAiStream('victim', '10.7.200.1'));
    await closeAndRecover(attempts, () => openAiStream('attacker', '10.7.201.1'));
  }, 60_000);

  it('/v1 streams from many addresses (two descriptors each): 503 past the server cap, /health answering', async () => {
    const attempts = await many(TOTAL + 30, (i) => openAiStream(`flood-${i}`, `10.9.${i}.2`, true));
    expectCapped(attempts, TOTAL, 503, /this server holds as many event streams as it may \(limit 85\)/);
    const health = await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) });
    expect(health.status).toBe(200);
    await health.text();
    await closeAndRecover(attempts, () => openAiStream('flood-x', '10.9.252.2', true));
    expect(stderr).not.toMatch(/EMFILE/);
  }, 90_000);

  it('many addresses at once: the server cap (a third of the descriptors) answers 503, /health keeps answering', async () => {
    const attempts = await many(TOTAL + 30, (i) => trpcStream(`10.8.${i}.1`));
    expectCapped(attempts, TOTAL, 503, /this server holds as many event streams as it may \(limit 85\)/);
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
    await health.text();
    // A plain call still works (it is not a stream), from anyone.
    const rpc = await fetch(`${base}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...from('10.8.250.1') },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slow.hold', params: { ms: 1 } }),
    });
    expect(rpc.status).toBe(200);
    expect(((await rpc.json()) as { result: unknown }).result).toBe('done');
    await closeAndRecover(attempts, () => trpcStream('10.8.251.1'));
    expect(stderr).not.toMatch(/EMFILE/);
  }, 90_000);
});
