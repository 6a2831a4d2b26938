/**
 * A small Streamable HTTP MCP server (2025 revision, the 1.x SDK's low-level Server) for gateway
 * tests that need an upstream doing what server-everything does not: tools with unusual (but
 * legal) names, and a tool that asks the client for things during its call (roots/list, on the
 * call's own stream). Each tool answers what it saw, so a test can tell what reached it.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListRootsResultSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TrickyUpstream {
  url: string;
  /** What the tools received from the client when they asked it (roots/list answers, or errors). */
  asked: Array<{ method: string; outcome: 'answered' | 'refused'; detail: string }>;
  /** tools/list requests answered, all sessions together. */
  toolLists: { count: number };
  stop(): Promise<void>;
}

/**
 * Tool names as this upstream lists them: one ordinary, names a glob library may treat specially,
 * and names that are also properties every JavaScript object has.
 */
export const TRICKY_TOOLS = [
  'echo',
  '.hidden',
  'admin/wipe',
  'ask-roots',
  'toString',
  'constructor',
  'leak-auth-error',
  'leak-auth-http',
  'flood-list-changed',
] as const;

/** What a careless upstream puts in its errors: the credentials the request came with. */
const echoedCredentials = (headers: IncomingMessage['headers'] | Record<string, string | string[] | undefined> | undefined) =>
  `rejected credentials: ${String(headers?.authorization)} / ${String(headers?.['x-api-key'])}`;

function mcpServer(asked: TrickyUpstream['asked'], toolLists: TrickyUpstream['toolLists']): Server {
  const server = new Server({ name: 'tricky-upstream', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, () => {
    toolLists.count++;
    return {
      tools: TRICKY_TOOLS.map((name) => ({ name, description: `the ${name} tool`, inputSchema: { type: 'object' as const } })),
    };
  });
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const name = req.params.name;
    if (name === 'ask-roots') {
      // Asked on the call's own stream (related to this request), the one channel the gateway reads.
      try {
        const roots = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema, { timeout: 5000 });
        const detail = JSON.stringify(roots.roots);
        asked.push({ method: 'roots/list', outcome: 'answered', detail });
        return { content: [{ type: 'text', text: `roots: ${detail}` }] };
      } catch (err) {
        const detail = err instanceof Error ? err.message : String(err);
        asked.push({ method: 'roots/list', outcome: 'refused', detail });
        return { content: [{ type: 'text', text: `no roots: ${detail}` }] };
      }
    }
    // A flood of tools/list_changed notifications (on the session's own stream), then the answer.
    if (name === 'flood-list-changed') {
      for (let i = 0; i < 50; i++) await server.sendToolListChanged();
      return { content: [{ type: 'text', text: 'sent 50 tools/list_changed' }] };
    }
    // A JSON-RPC error whose message quotes the request's credentials.
    if (name === 'leak-auth-error') throw new Error(echoedCredentials(extra.requestInfo?.headers));
    return { content: [{ type: 'text', text: `called ${name}` }] };
  });
  return server;
}

export async function startTrickyUpstream(): Promise<TrickyUpstream> {
  const asked: TrickyUpstream['asked'] = [];
  const toolLists = { count: 0 };
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? sessions.get(id) : undefined;
      if (!transport) {
        if (req.method !== 'POST' || id !== undefined) {
          res.writeHead(404).end();
          return;
        }
        const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          onsessioninitialized: (sid) => void sessions.set(sid, t),
        });
        await mcpServer(asked, toolLists).connect(t);
        transport = t;
      }
      // leak-auth-http: an HTTP 500 whose body quotes the request's credentials (read here, before the transport).
      let body: unknown;
      if (req.method === 'POST') {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        body = JSON.parse(Buffer.concat(chunks).toString() || 'null');
        const call = body as { method?: string; params?: { name?: string } } | null;
        if (call?.method === 'tools/call' && call.params?.name === 'leak-auth-http') {
          res.writeHead(500, { 'content-type': 'text/plain' }).end(echoedCredentials(req.headers));
          return;
        }
      }
      await transport.handleRequest(req, res, body);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    asked,
    toolLists,
    stop: async () => {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
