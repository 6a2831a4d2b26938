import { createTRPCClient, httpLink, TRPCClientError, type TRPCClient } from '@trpc/client';
import superjson from 'superjson';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  createLogger,
  estimateTokens,
  procedureIndex,
  type AppRouter,
  type ConfigInput,
  type Runtime,
  type Storage,
  runtimeOfServices,
} from '@ai-backend/core/internal';
import { createTestUpstream, waitFor, type TestUpstream } from '@ai-backend/test-utils';
import { mintDevToken } from '@ai-backend/auth';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { startIn, type Mode } from './testServer.js';
import type { V1Path } from './describeMatrix.js';

/**
 * A real ai-backend server (JWT identities, all four providers server-paid against a test
 * upstream, BYOK vault on) and the three real clients: tRPC (superjson, httpLink), JSON-RPC
 * over fetch, and the MCP SDK client. Shared by the ai-, billing- and byok- end-to-end tests.
 */
export const JWT_SECRET = 'e2e-ai-jwt-secret-0123456789abcdef012345';
export const SERVER_KEY = 'sk-server-PLATFORM-SECRET-0001';
export const VAULT_KEY = 'e2e-ai-vault-master-key-0123456789abcdef';
export const SYSTEM_PROMPT = 'CONFIDENTIAL-SYSTEM-PROMPT: you are the ACME bot.';
/** A call's request id: a UUID version 7, in time order (docs/ai.md, "Request id"; lib/requestIdV7.ts). */
export const REQUEST_ID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const PROVIDERS = ['anthropic', 'openai', 'google', 'openrouter'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface AiServer {
  server: AiBackendServer;
  runtime: Runtime;
  url: string;
  /** Every log line the server wrote. */
  logs: string[];
  stop(): Promise<void>;
}

/** Config for a gateway in front of `upstream`; `over` is shallow-merged per section. */
export function gatewayConfig(upstream: TestUpstream, over: ConfigInput = {}): ConfigInput {
  const { ai, billing, mcp, ...rest } = over;
  return {
    port: 0,
    host: '127.0.0.1',
    // The AI tools are public so anonymous (BYOK) callers can be tested on every entry point;
    // requireAuthForToolsCall governs them on /trpc and /rpc as on /mcp (docs/security.md).
    // These suites drive one gateway from one or two callers through dozens of cases: explicitly
    // past the default per-caller limits (on by default; rate-limit.test.ts and the tests that
    // pass their own `mcp.rateLimiting` cover them).
    mcp: {
      auth: { authType: 'jwt', publicTools: ['generateText', 'listProviders', 'listAllowedModels'] },
      rateLimiting: { enabled: false },
      ...mcp,
    },
    jwt: { secret: JWT_SECRET },
    serverProviders: [...PROVIDERS],
    ai: { ...upstream.aiConfig({ apiKey: SERVER_KEY }), systemPrompts: { support: SYSTEM_PROMPT }, ...ai },
    billing: { vaultKey: VAULT_KEY, platformFeeRate: 0.1, ...billing },
    // Memory unless a suite names its store: the embedded default is a SQLite file in the working
    // directory, which only one server may hold, and suites run four at a time.
    storage: { type: 'memory' },
    ...rest,
  };
}

/** `mode` 'in-process' serves through `server.fetch` behind a routed origin (helpers/testServer.ts `startIn`). */
export async function startAiServer(
  upstream: TestUpstream,
  over: ConfigInput = {},
  opts: { storage?: Storage; mode?: Mode; clock?: () => number; path?: V1Path } = {},
): Promise<AiServer> {
  const logs: string[] = [];
  // The /v1 path under test (describeV1Matrix); without one, the server's default (pass-through on).
  const config = opts.path ? { ...over, ai: { ...over.ai, passThrough: opts.path === 'pass-through' } } : over;
  const server = createServer(gatewayConfig(upstream, config), {
    logger: createLogger('debug', (l) => logs.push(l)),
    ...(opts.storage ? { storage: opts.storage } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  const { url, stop } = await startIn(opts.mode ?? 'listening', server);
  const runtime = runtimeOfServices(await server.ready());
  return { server, runtime, url, logs, stop };
}

export { createTestUpstream, waitFor, type TestUpstream };

/** A JWT for a user; `admin` adds the administrator scope (config default `mcp:admin`). */
export function tokenFor(sub: string, opts: { email?: string; admin?: boolean } = {}): Promise<string> {
  return mintDevToken({
    secret: JWT_SECRET,
    sub,
    email: opts.email ?? `${sub}@example.com`,
    scopes: opts.admin ? ['mcp', 'mcp:admin'] : ['mcp'],
  });
}

export type Trpc = TRPCClient<AppRouter>;

export function trpcClient(url: string, token?: string, seen?: string[]): Trpc {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: url + '/trpc',
        transformer: superjson,
        headers: () => (token ? { authorization: `Bearer ${token}` } : {}),
        // Record raw bodies so tests can grep everything a client received.
        fetch: seen
          ? async (input, init) => {
              const res = await fetch(input, init);
              seen.push(await res.clone().text());
              return res;
            }
          : undefined,
      }),
    ],
  });
}

export interface RpcError {
  code: number;
  message: string;
  data?: { code?: string; appCode?: string; details?: Record<string, unknown>; issues?: unknown[] };
}
export interface RpcReply<T = any> {
  status: number;
  headers: Headers;
  text: string;
  result?: T;
  error?: RpcError;
}

/** One JSON-RPC call on POST /rpc. */
export async function rpcCall<T = any>(
  url: string,
  token: string | null,
  method: string,
  params?: unknown,
  init: { signal?: AbortSignal; seen?: string[] } = {},
): Promise<RpcReply<T>> {
  const res = await fetch(url + '/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params === undefined ? {} : { params }) }),
    ...(init.signal ? { signal: init.signal } : {}),
  });
  const text = await res.text();
  init.seen?.push(text);
  const body = JSON.parse(text) as { result?: T; error?: RpcError };
  return { status: res.status, headers: res.headers, text, ...body };
}

/** A connected MCP SDK client with a bearer token. */
export async function mcpClient(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'ai-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url + '/mcp'), {
    requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
  });
  await client.connect(transport);
  // End the session on the server too (DELETE), as a well-behaved client does: the server budgets
  // open sessions per identity (mcp.budgets), and a suite opens many.
  const close = client.close.bind(client);
  client.close = async () => {
    await transport.terminateSession().catch(() => undefined);
    await close();
  };
  return client;
}

/** Credit platform tokens through the admin-only procedure, over /rpc. */
export async function creditTokens(
  url: string,
  adminToken: string,
  userId: string,
  tokens: number,
  idempotencyKey: string,
  type: 'subscription' | 'one_time' = 'subscription',
): Promise<number> {
  const r = await rpcCall<{ applied: boolean; balance: number }>(url, adminToken, 'billing.creditTokens', {
    userId,
    tokens,
    type,
    idempotencyKey,
  });
  if (!r.result) throw new Error(`creditTokens failed: ${r.text}`);
  return r.result.balance;
}

/** Worst case a platform call reserves (and, when the upstream uses it all, is charged). */
export function reservedFor(content: string, system: string, maxTokens: number, feeRate = 0.1): number {
  const estimate = estimateTokens(content, system, maxTokens);
  return estimate + Math.ceil(Number((estimate * feeRate).toFixed(6)));
}

/** A deliberate pause (asserting that nothing happens meanwhile); to wait for a condition use `waitFor`. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type Entry = 'trpc' | 'rpc' | 'mcp';
export type Outcome<T = any> =
  | { ok: true; data: T }
  | { ok: false; code: string; appCode?: string; message: string; details?: Record<string, unknown> };

/**
 * Call any procedure over one real entry point and normalise the outcome: the tRPC client
 * (query or mutation, as the router says), JSON-RPC on /rpc, or an MCP tools/call (tool name =
 * last path segment). `seen` collects the raw bodies received.
 */
export async function callVia<T = any>(
  gw: AiServer,
  entry: Entry,
  token: string | null,
  path: string,
  input?: unknown,
  seen?: string[],
): Promise<Outcome<T>> {
  if (entry === 'rpc') {
    const r = await rpcCall<T>(gw.url, token, path, input, seen ? { seen } : {});
    if (r.error) {
      // Input errors carry zod issues in data.issues: their messages are what a client reads.
      const issues = (r.error.data?.issues ?? []) as Array<{ message?: string }>;
      const message = [r.error.message, ...issues.map((i) => i.message)].join('; ');
      return {
        ok: false,
        code: r.error.data?.code ?? String(r.error.code),
        appCode: r.error.data?.appCode,
        message,
        details: r.error.data?.details,
      };
    }
    return { ok: true, data: r.result as T };
  }
  if (entry === 'trpc') {
    const info = procedureIndex(gw.runtime.router).get(path);
    if (!info) throw new Error(`no procedure ${path}`);
    const [ns, proc] = path.split('.') as [string, string];
    const client = trpcClient(gw.url, token ?? undefined, seen) as unknown as Record<
      string,
      Record<string, { query(i: unknown): Promise<T>; mutate(i: unknown): Promise<T> }>
    >;
    try {
      const p = client[ns]![proc]!;
      return { ok: true, data: await (info.type === 'query' ? p.query(input) : p.mutate(input)) };
    } catch (e) {
      if (!(e instanceof TRPCClientError)) throw e;
      return { ok: false, code: (e.data as { code: string }).code, message: e.message };
    }
  }
  const client = await mcpClient(gw.url, token ?? undefined);
  try {
    const r = (await client.callTool({ name: path.split('.').pop()!, arguments: (input ?? {}) as Record<string, unknown> })) as {
      isError?: boolean;
      content: Array<{ text: string }>;
    };
    const text = r.content[0]!.text;
    seen?.push(text);
    if (r.isError) return { ok: false, code: text.split(':')[0]!, message: text };
    return { ok: true, data: JSON.parse(text) as T };
  } finally {
    await client.close();
  }
}
