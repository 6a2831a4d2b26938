// The v2 MCP SDK used directly (the baseline of bench/mcp.mjs): @modelcontextprotocol/server with
// the @modelcontextprotocol/hono app, one `greeting` tool with the same schema and answer as
// ours. 2026-07-28 requests go to the SDK's per-request handler (createMcpHandler); 2025 clients
// get sessions over WebStandardStreamableHTTPServerTransport, routed with isLegacyRequest as the
// SDK documents. argv[2]: 'sse' (default) or 'json' answers for 2025 sessions.
import { randomUUID } from 'node:crypto';
import { serve } from '@hono/node-server';
import { createMcpHonoApp } from '@modelcontextprotocol/hono';
import { createMcpHandler, isLegacyRequest, McpServer, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { z } from 'zod';

const GREETINGS = { en: 'Hello', es: 'Hola', fr: 'Bonjour', de: 'Hallo' };
const json = process.argv[2] === 'json';

function createServer() {
  const server = new McpServer({ name: 'sdk-bench', version: '1.0.0' });
  server.registerTool(
    'greeting',
    {
      description: 'Greet someone in English, Spanish, French or German',
      inputSchema: z.object({ name: z.string().min(1).max(200), language: z.enum(['en', 'es', 'fr', 'de']).default('en') }),
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async ({ name, language }) => ({
      content: [{ type: 'text', text: JSON.stringify({ greeting: `${GREETINGS[language]}, ${name}!`, language }) }],
    }),
  );
  return server;
}

const modern = createMcpHandler(createServer, { legacy: 'reject' });
const sessions = new Map();

const app = createMcpHonoApp();
app.all('/mcp', async (c) => {
  const parsedBody = c.get('parsedBody');
  if (!(await isLegacyRequest(c.req.raw, parsedBody))) return modern.fetch(c.req.raw, { parsedBody });
  const id = c.req.header('mcp-session-id');
  if (id) {
    const transport = sessions.get(id);
    if (!transport) return c.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, 404);
    return transport.handleRequest(c.req.raw, { parsedBody });
  }
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: json,
    onsessioninitialized: (sid) => sessions.set(sid, transport),
  });
  transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
  await createServer().connect(transport);
  return transport.handleRequest(c.req.raw, { parsedBody });
});

serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${info.port}` }) + '\n');
});
process.on('SIGTERM', () => process.exit(0));
