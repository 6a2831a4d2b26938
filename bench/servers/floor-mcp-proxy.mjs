// The floor under bench/mcpGateway.mjs: the least a Node MCP gateway does for a forwarded
// tools/call. A Hono route on @hono/node-server (our own HTTP stack) that reads the JSON-RPC body,
// strips the `<server>__` prefix from a tools/call's name, posts it to the upstream with node:http
// on a keep-alive agent (the client our gateway uses) and streams the upstream's answer back as it
// comes (status, content type and Mcp-Session-Id passed on). No session of its own, no checks, no
// limits, no metering: the client's session is the upstream's. Options as JSON in argv[2]:
//   { upstream: "http://127.0.0.1:<port>/mcp", prefix: "web__" }. Prints {"url"}.
import http from 'node:http';
import { Readable } from 'node:stream';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const opts = JSON.parse(process.argv[2]);
const target = new URL(opts.upstream);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const PASSED = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];

function forward(method, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(target, { method, headers, agent }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

const app = new Hono();
app.all('/mcp', async (c) => {
  const headers = {};
  for (const name of PASSED) {
    const v = c.req.header(name);
    if (v !== undefined) headers[name] = v;
  }
  let body;
  if (c.req.method === 'POST') {
    const message = await c.req.json();
    if (message.method === 'tools/call' && message.params?.name?.startsWith(opts.prefix)) {
      message.params.name = message.params.name.slice(opts.prefix.length);
    }
    body = JSON.stringify(message);
  }
  const res = await forward(c.req.method, headers, body);
  const out = new Headers();
  for (const name of ['content-type', 'mcp-session-id', 'cache-control']) {
    const v = res.headers[name];
    if (v !== undefined) out.set(name, v);
  }
  return new Response(Readable.toWeb(res), { status: res.statusCode, headers: out });
});

const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${info.port}` }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
