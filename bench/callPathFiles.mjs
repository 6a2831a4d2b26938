// Which of our source files one call runs code in (issue 38's "a metered /v1 call and an MCP
// tools/call each cross at most half today's files"). The server runs in this process from the
// TypeScript sources; V8's precise coverage (function call counts) is reset after a warm-up call
// and read after one more call of the same kind, so a file counts when a function of it ran
// during that call (module loading is over by then). Usage:
//   node --conditions=ai-backend-source --import tsx bench/callPathFiles.mjs [--list | --functions]
// Prints, per call, the number of files and of folders under packages/*/src (--list: the files;
// --functions: each file with the functions of it that ran and how often, to see why it is crossed).
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { createServer } from 'ai-backend';
import { resolveConfig } from '@ai-backend/core';
import { mintDevToken } from '@ai-backend/auth';
import { createTestUpstream } from '@ai-backend/test-utils';

const functions = process.argv.includes('--functions');
const list = functions || process.argv.includes('--list');
const root = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const SECRET = 'bench-callpath-jwt-secret-0123456789abcdef';
const upstream = await createTestUpstream({ outputTokens: 16 });
const config = resolveConfig({
  port: 0,
  monitoring: { logging: { level: 'error' } },
  storage: { type: 'memory' },
  mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: true, maxRequests: 1e6, maxToolCalls: 1e6 } },
  jwt: { secret: SECRET },
  serverProviders: ['openai'],
  ai: { providers: { openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-callpath-server-key' } } },
});
const server = createServer(config);
const { url } = await server.start();
const user = await mintDevToken({ secret: SECRET, sub: 'callpath-user', expiresIn: '1h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'callpath-admin', scopes: ['mcp:admin'], expiresIn: '1h' });
const post = async (p, token, body, headers = {}) => {
  const res = await fetch(url + p, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${p}: ${res.status} ${text}`);
  return text;
};
await post('/rpc', admin, {
  jsonrpc: '2.0',
  id: 1,
  method: 'billing.creditTokens',
  params: { userId: 'callpath-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'callpath-credit' },
});

const MCP = { accept: 'application/json, text/event-stream' };
const init = await fetch(url + '/mcp', {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${user}`, ...MCP },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'callpath', version: '1' } },
  }),
});
const sessionId = init.headers.get('mcp-session-id');
await init.text();
await post(
  '/mcp',
  user,
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { ...MCP, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
);
const mcpHeaders = { ...MCP, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };

const calls = {
  'metered POST /v1/chat/completions': () =>
    post('/v1/chat/completions', user, {
      model: 'openai/gpt-4.1-mini',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Summarise.' },
      ],
      max_tokens: 64,
    }),
  'metered POST /v1/messages': () =>
    post(
      '/v1/messages',
      user,
      { model: 'openai/gpt-4.1-mini', system: 'You are terse.', messages: [{ role: 'user', content: 'Summarise.' }], max_tokens: 64 },
      { 'anthropic-version': '2023-06-01' },
    ),
  'MCP tools/call greeting (2025 session)': () =>
    post(
      '/mcp',
      user,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'greeting', arguments: { name: 'Ada' } } },
      mcpHeaders,
    ),
  'metered MCP tools/call generateText (2025 session)': () =>
    post(
      '/mcp',
      user,
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: {
          name: 'generateText',
          arguments: { content: 'Summarise.', systemPrompt: 'You are terse.', provider: 'openai', options: { maxTokens: 64 } },
        },
      },
      mcpHeaders,
    ),
  'metered POST /rpc ai.generateText': () =>
    post('/rpc', user, {
      jsonrpc: '2.0',
      id: 4,
      method: 'ai.generateText',
      params: { content: 'Summarise.', systemPrompt: 'You are terse.', provider: 'openai', options: { maxTokens: 64 } },
    }),
};

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
const ours = (u) => {
  if (!u.startsWith('file://')) return undefined;
  const file = path.relative(root, fileURLToPath(u.split('?')[0]));
  return /^packages\/[^/]+\/src\//.test(file) && !/\.test\.ts$/.test(file) && !file.startsWith('packages/test-utils/') ? file : undefined;
};
const rows = [];
for (const [name, call] of Object.entries(calls)) {
  const text = await call();
  if (/"isError":true|"error"/.test(text) && !name.includes('greeting')) throw new Error(`${name}: ${text.slice(0, 300)}`);
  await call();
  await session.post('Profiler.takePreciseCoverage'); // resets the counters
  await call();
  const { result } = await session.post('Profiler.takePreciseCoverage');
  /** file → the functions of it that ran, `name×count` (an arrow function or callback: `(anonymous)`) */
  const files = new Map();
  for (const script of result) {
    const file = ours(script.url);
    const ran = script.functions.filter((f) => f.ranges[0].count > 0);
    if (file && ran.length > 0) files.set(file, ran.map((f) => `${f.functionName || '(anonymous)'}×${f.ranges[0].count}`).join(' '));
  }
  const sorted = [...files.keys()].sort();
  rows.push({ name, files: sorted.length, folders: new Set(sorted.map((f) => path.dirname(f))).size });
  if (list) console.log(`\n${name}\n  ${sorted.map((f) => (functions ? `${f}: ${files.get(f)}` : f)).join('\n  ')}`);
}
await session.post('Profiler.stopPreciseCoverage');
session.disconnect();
console.log('\n| call | our files it runs code in | folders |\n|---|---|---|');
for (const r of rows) console.log(`| ${r.name} | ${r.files} | ${r.folders} |`);
await server.stop();
await upstream.close();
