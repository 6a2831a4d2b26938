// A server with MCP sessions, streams and a call open when server.stop() runs, in a process of its
// own, run from the TypeScript sources: node --conditions=ai-backend-source --import tsx stopWithOpenMcpServer.ts.
// It never calls process.exit: it prints how long stop took, and the process must then end by
// itself (a timer or handle left behind keeps it alive). Clients run in this process too.
import { publicProcedure, router } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';

/** A tool that runs until its call is cut. */
const waitRouter = router({
  wait: publicProcedure
    .meta({ description: 'Waits until cancelled', mcp: { public: true } })
    .mutation(({ ctx }) => new Promise((resolve) => ctx.req.signal.addEventListener('abort', () => resolve('cut')))),
});

const server = createServer(
  {
    port: 0,
    host: '127.0.0.1',
    storage: { type: 'memory' },
    monitoring: { logging: { level: 'error' } },
    mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false }, sessions: { maxLiveSessions: 2 } },
    customRouters: { t: waitRouter },
  },
  { shutdownTimeoutMs: 1000 },
);
const { url } = await server.start();
const mcp = `${url}/mcp`;
const JSON_SSE = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** Read a response body to its end in the background (a stream the server must end). */
const drain = (res: Response) => void res.text().catch(() => undefined);

async function session(): Promise<Record<string, string>> {
  const init = await fetch(mcp, {
    method: 'POST',
    headers: JSON_SSE,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'stop', version: '1' } },
    }),
  });
  const headers = { ...JSON_SSE, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await init.text();
  await (
    await fetch(mcp, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  ).text();
  return headers;
}

// Six 2025 sessions (beyond two live ones the idle are parked), each with its GET stream open.
const sessions = [];
for (let i = 0; i < 6; i++) sessions.push(await session());
for (const headers of sessions) {
  const get = await fetch(mcp, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } });
  drain(get);
}
// A call in flight on one of them, which stop must cut at its grace period.
const calling = fetch(mcp, {
  method: 'POST',
  headers: sessions[0]!,
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't.wait', arguments: {} } }),
}).then(drain, () => undefined);
// A 2026-07-28 subscriptions/listen stream.
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'stop', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const listen = await fetch(mcp, {
  method: 'POST',
  headers: { ...JSON_SSE, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 7,
    method: 'subscriptions/listen',
    params: { notifications: { promptsListChanged: true }, _meta: meta },
  }),
});
drain(listen);
await new Promise((r) => setTimeout(r, 200));

const started = Date.now();
await server.stop();
process.stdout.write(`${JSON.stringify({ stopMs: Date.now() - started, listen: listen.status })}\n`);
await calling;
