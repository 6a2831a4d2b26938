// Instructions per /v1/chat/completions call on the pass-through fast path, counted by valgrind's
// callgrind in the server process (all its threads, GC included): repeatable on a loaded machine,
// where CPU time moves by ±8 % between identical builds (bench/v1BuildsAB.mjs A against A).
// `node bench/v1Instructions.mjs <built checkout> <byok|metered> [plain|stream] [warm-up calls, default 1500] [counted calls, default 500]`
// The canned OpenAI upstream (bench/servers/canned-openai.mjs) runs outside valgrind; memory store, JWT
// auth; counting starts after the warm-up (the JIT has settled); 4 clients send calls one after another.
// Slow: about 3 minutes per case. Needs valgrind. V1_PROMPT_BYTES=100000 sends a prompt that long.
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { creditTokens, startServer, startUnderCallgrind, v1ServerConfig } from './lib.mjs';

const [tree, mode = 'byok', shape = 'plain', warmS = '1500', nS = '500'] = process.argv.slice(2);
if (!tree || !['byok', 'metered'].includes(mode) || !['plain', 'stream'].includes(shape))
  throw new Error('usage: node bench/v1Instructions.mjs <built checkout> <byok|metered> [plain|stream] [warm-up] [counted]');
const warm = Number(warmS);
const n = Number(nS);
const req = createRequire(path.resolve(tree, 'bench/lib.mjs'));
const { mintDevToken } = await import(req.resolve('@ai-backend/auth'));
const SECRET = 'bench-v1-instructions-jwt-secret-0123456789';
const dir = `${tmpdir()}/v1-callgrind-${mode}-${shape}-${path.basename(tree)}`;

const upstream = await startServer(path.resolve(tree, 'bench/servers/canned-openai.mjs'));
const config = v1ServerConfig(upstream.url, SECRET);
const server = await startUnderCallgrind(path.resolve(tree, 'bench/servers/ai-backend.mjs'), [JSON.stringify(config)], dir);
const { url } = server;
const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '2h' });
if (mode === 'metered')
  await creditTokens(url, await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' }));
const headers = {
  'content-type': 'application/json',
  authorization: `Bearer ${user}`,
  ...(mode === 'byok' ? { 'x-provider-api-key': 'sk-bench-byok' } : {}),
};
const body = JSON.stringify({
  model: 'openai/gpt-4.1-mini',
  // V1_PROMPT_BYTES: a long prompt instead (prose, no brackets).
  messages: [{ role: 'user', content: process.env.V1_PROMPT_BYTES ? longPrompt(Number(process.env.V1_PROMPT_BYTES)) : 'Say ok.' }],
  ...(shape === 'stream' ? { stream: true } : {}),
});
function longPrompt(bytes) {
  const line = 'Summarise the report below in three points; keep the numbers (all of them). ';
  return line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
}

async function burst(count) {
  let left = count;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (left-- > 0) {
        // Under valgrind a reply can outlast the keep-alive window: a reset reused socket is the load, not the server.
        const r = await fetch(url + '/v1/chat/completions', { method: 'POST', headers, body }).catch((e) => {
          if (e?.cause?.code !== 'ECONNRESET') throw e;
          return fetch(url + '/v1/chat/completions', { method: 'POST', headers, body });
        });
        const t = await r.text();
        if (
          r.status !== 200 ||
          r.headers.get('x-ai-backend-path') !== 'pass-through' ||
          !t.includes(shape === 'stream' ? '[DONE]' : '"usage"')
        )
          throw new Error(`${r.status} ${t.slice(0, 300)}`);
      }
    }),
  );
}
await burst(warm);
const ir = await server.counted(() => burst(n));
await upstream.stop();
console.log(JSON.stringify({ tree: path.basename(tree), mode, shape, n, irPerCall: Math.round(ir / n) }));
