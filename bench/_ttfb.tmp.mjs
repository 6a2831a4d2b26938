import { spawn } from 'node:child_process';
import { startServer } from './lib.mjs';
import { mintDevToken } from '@ai-backend/auth';
import { request, Agent } from '/work/main/node_modules/.pnpm/undici@7.30.2/node_modules/undici/index.js';
const SECRET = 'bench-gateway-overhead-jwt-secret-0123456789';
const upstream = await startServer(new URL('./servers/canned-openai.mjs', import.meta.url).pathname);
const config = JSON.stringify({ storage: { type: 'memory' }, mcp: { auth: { authType: 'jwt' } }, jwt: { secret: SECRET }, serverProviders: ['openai'], ai: { providers: { openai: { baseUrl: upstream.url, apiKey: 'sk-x', api: 'chat' } }, passThrough: true } });
const child = spawn(process.execPath, [new URL('./servers/ai-backend.mjs', import.meta.url).pathname, config], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((r) => child.stdout.once('data', (d) => r(JSON.parse(String(d)).url)));
console.log('PID', child.pid);
const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '4h' });
const agent = new Agent({ connections: 1 });
const one = async (stream) => {
  const body = JSON.stringify({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'ping' }], max_tokens: 1, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
  const t0 = performance.now();
  const r = await request(url + '/v1/chat/completions', { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${user}`, 'x-provider-api-key': 'sk-b' }, body });
  let first;
  for await (const c of r.body) { first ??= performance.now() - t0; }
  return [first, performance.now() - t0];
};
for (let i = 0; i < 3000; i++) await one(i % 2 === 0);
const res = { s: [], n: [] };
for (let i = 0; i < 400; i++) { res.s.push((await one(true))[0]); res.n.push((await one(false))[1]); }
const med = (a) => a.sort((x, y) => x - y)[a.length >> 1];
console.log('median TTFB streamed', med(res.s).toFixed(3), 'non-streamed total', med(res.n).toFixed(3));
if (process.env.WAIT) { console.log('READY'); await new Promise((r) => setTimeout(r, Number(process.env.WAIT))); for (let i = 0; i < 5; i++) { await one(true); await one(false); } }
child.kill('SIGTERM'); await new Promise((r) => child.once('exit', r)); await upstream.stop(); process.exit(0);
