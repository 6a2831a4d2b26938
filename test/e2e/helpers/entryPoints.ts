/**
 * One procedure call through each real entry point (/rpc with fetch, /trpc with @trpc/client +
 * superjson, MCP tools/call with the official SDK client), answered in one shape so a test can
 * demand the same outcome everywhere. `raw` is the text that came over the wire (for leak checks).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createTRPCClient, getUntypedClient, httpLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import type { AppRouter } from '@ai-backend/core';

export const ENTRY_POINTS = ['rpc', 'trpc', 'mcp'] as const;
export type EntryPoint = (typeof ENTRY_POINTS)[number];

/**
 * `code` is the tRPC code on every entry point (FORBIDDEN for access denied, ...); `details` is
 * the error's details where the entry point carries them (/rpc, /trpc; MCP tool errors are text).
 */
export type Outcome = { ok: true; data: any; raw: string } | { ok: false; code: string; message: string; details?: any; raw: string };

export interface EntryPointClient {
  via: EntryPoint;
  call(procedure: string, input?: unknown): Promise<Outcome>;
  close(): Promise<void>;
}

const MUTATIONS = new Set([
  'writeFile',
  'addServerWorkspace',
  'removeServerWorkspace',
  'registerClientWorkspace',
  'unregisterClientWorkspace',
]);
const authHeaders = (token?: string): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});

export function rpcClient(url: string, token?: string): EntryPointClient {
  let id = 0;
  return {
    via: 'rpc',
    async call(procedure, input) {
      const res = await fetch(`${url}/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...authHeaders(token) },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: procedure, ...(input === undefined ? {} : { params: input }) }),
      });
      const raw = await res.text();
      const body = JSON.parse(raw) as {
        result?: unknown;
        error?: { code: number; message: string; data?: { code?: string; details?: unknown } };
      };
      const e = body.error;
      if (e) return { ok: false, code: e.data?.code ?? String(e.code), message: e.message, details: e.data?.details, raw };
      return { ok: true, data: body.result, raw };
    },
    close: async () => undefined,
  };
}

export function trpcClient(url: string, token?: string): EntryPointClient {
  const client = getUntypedClient(
    createTRPCClient<AppRouter>({ links: [httpLink({ url: `${url}/trpc`, transformer: superjson, headers: () => authHeaders(token) })] }),
  );
  return {
    via: 'trpc',
    async call(procedure, input) {
      const name = procedure.split('.').pop()!;
      try {
        const data = MUTATIONS.has(name) ? await client.mutation(procedure, input) : await client.query(procedure, input);
        return { ok: true, data, raw: JSON.stringify(data) ?? '' };
      } catch (err) {
        if (!(err instanceof TRPCClientError)) throw err;
        const data = err.data as { code?: string; details?: unknown } | undefined;
        return {
          ok: false,
          code: data?.code ?? 'CLIENT',
          message: err.message,
          details: data?.details,
          raw: JSON.stringify({ message: err.message, shape: err.shape }),
        };
      }
    },
    close: async () => undefined,
  };
}

/** MCP: tool name = the procedure's last segment (the system tools keep their names). */
export async function mcpClient(url: string, token?: string): Promise<EntryPointClient> {
  const client = new Client({ name: 'e2e-workspaces', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: authHeaders(token) } }));
  return {
    via: 'mcp',
    async call(procedure, input) {
      const name = procedure.split('.').pop()!;
      const r = await client.callTool({ name, arguments: (input ?? {}) as Record<string, unknown> });
      const raw = JSON.stringify(r);
      const text = (r.content as Array<{ type: string; text?: string }>)[0]?.text ?? '';
      if (r.isError) {
        // Tool errors are "<tRPC code>: <message>".
        const m = /^([A-Z_]+): (.*)$/s.exec(text);
        return { ok: false, code: m?.[1] ?? 'UNKNOWN', message: m?.[2] ?? text, raw };
      }
      let data: unknown = text;
      try {
        data = JSON.parse(text);
      } catch {
        // a plain string result
      }
      return { ok: true, data, raw };
    },
    close: () => client.close(),
  };
}

/** The three clients for one caller (one token, or anonymous). */
export async function connectAll(url: string, token?: string): Promise<Record<EntryPoint, EntryPointClient>> {
  return { rpc: rpcClient(url, token), trpc: trpcClient(url, token), mcp: await mcpClient(url, token) };
}
