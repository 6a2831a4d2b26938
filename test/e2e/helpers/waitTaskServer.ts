import { z } from 'zod';
import { protectedProcedure, publicProcedure, router } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';
import { envelope2026, modernPost, modernReply } from './mcpWire.js';
import { startIn } from './testServer.js';

/** The MCP Tasks extension's identifier (2026-07-28). */
export const TASKS = 'io.modelcontextprotocol/tasks';

export interface WaitTaskServer {
  url: string;
  stop(): Promise<void>;
  /** Runs of `wait` whose signal was aborted, by their `tag`. */
  aborted: ReadonlySet<string>;
  /** One 2026-07-28 request with the Tasks extension, as `token` (none: anonymous), with `headers`: the reply's JSON-RPC body. */
  mcp(
    token: string | undefined,
    method: string,
    params: Record<string, unknown>,
    headers?: Record<string, string>,
  ): ReturnType<typeof modernReply>;
  /** `tools/call wait` as `token` (none: anonymous), answered as a task: its id. */
  startTask(token: string | undefined, args?: { tag?: string; ms?: number }, headers?: Record<string, string>): Promise<string>;
}

/**
 * Who may call `wait`: signed-in callers only, or anyone, each client known by the address the
 * proxy in front names (`trustProxy`: a test is several clients by sending X-Forwarded-For).
 */
export type WaitCallers = 'signed-in' | 'anyone-behind-proxy';

/**
 * A listening server (memory store, JWT auth, no rate limit) with one long-running tool, `wait`,
 * which resolves after `ms` (default 60 s) unless its signal is aborted first; for the suites of
 * MCP tasks and the credentials that start them.
 */
export async function startWaitTaskServer(secret: string, client: string, callers: WaitCallers = 'signed-in'): Promise<WaitTaskServer> {
  const aborted = new Set<string>();
  const procedure = callers === 'signed-in' ? protectedProcedure : publicProcedure;
  const waitRouter = router({
    wait: procedure
      .meta({ description: 'Waits', longRunning: true, mcp: callers === 'signed-in' ? {} : { public: true } })
      .input(z.object({ tag: z.string().default(''), ms: z.number().int().max(60_000).default(60_000) }))
      .mutation(
        ({ ctx, input }) =>
          new Promise((resolve) => {
            const timer = setTimeout(() => resolve('done'), input.ms);
            ctx.req.signal.addEventListener('abort', () => {
              clearTimeout(timer);
              aborted.add(input.tag);
              resolve('cancelled');
            });
          }),
      ),
  });
  const server = await startIn(
    'listening',
    createServer({
      port: 0,
      host: '127.0.0.1',
      storage: { type: 'memory' },
      ...(callers === 'anyone-behind-proxy' ? { trustProxy: true } : {}),
      jwt: { secret },
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
      customRouters: { t: waitRouter },
    }),
  );
  const meta = envelope2026(client, { extensions: { [TASKS]: {} } });
  let ids = 0;
  const mcp: WaitTaskServer['mcp'] = async (token, method, params, headers = {}) =>
    modernReply(
      await fetch(
        `${server.url}/mcp`,
        modernPost(++ids, method, params, meta, { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) }),
      ),
    );
  const startTask: WaitTaskServer['startTask'] = async (token, args = {}, headers = {}) => {
    const r = await mcp(token, 'tools/call', { name: 'wait', arguments: args }, headers);
    if (r.result?.resultType !== 'task') throw new Error(`tools/call wait was not answered as a task: ${JSON.stringify(r)}`);
    return (r.result.task?.taskId ?? r.result.taskId) as string;
  };
  return { url: server.url, stop: () => server.stop(), aborted, mcp, startTask };
}
