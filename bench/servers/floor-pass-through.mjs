// The floor under every gateway figure of bench/gatewayOverhead.mjs: the least a Node gateway
// does. A Hono route on @hono/node-server that checks one bearer token, forwards the JSON body to
// the upstream and returns the answer after reading its usage (the final JSON's `usage`, or the
// stream's usage event, passed on chunk by chunk). Options as JSON in argv[2]:
//   { upstream: "http://127.0.0.1:<port>/v1", token, upstreamKey, client: "fetch" | "undici", undici?: <path to undici's entry> }
// `fetch` is Node's global fetch; `undici` is the undici package's `request` on a keep-alive
// Pool (the fastest Node HTTP client; the bench installs it into its tools folder). Prints {"url"}.
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const opts = JSON.parse(process.argv[2]);
const target = new URL(`${opts.upstream}/chat/completions`);
const expected = `Bearer ${opts.token}`;
let tokensSeen = 0; // what a gateway would meter; kept so the usage read is not dead code

/** send(json string) → { status, json(): Promise<object>, stream(): ReadableStream<Uint8Array> } */
async function makeClient() {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${opts.upstreamKey}` };
  if (opts.client === 'fetch')
    return async (body) => {
      const res = await fetch(target, { method: 'POST', headers, body });
      return { status: res.status, json: () => res.json(), stream: () => res.body };
    };
  const { Pool } = await import(pathToFileURL(opts.undici).href);
  const pool = new Pool(target.origin, { connections: 16, keepAliveTimeout: 60_000 });
  return async (body) => {
    const res = await pool.request({ path: target.pathname, method: 'POST', headers, body });
    return { status: res.statusCode, json: () => res.body.json(), stream: () => Readable.toWeb(res.body) };
  };
}
const send = await makeClient();

/** Passes the SSE bytes on as they come; reads the usage event's token count on the way. */
function readingUsage() {
  const decoder = new TextDecoder();
  let tail = '';
  return new TransformStream({
    transform(bytes, controller) {
      controller.enqueue(bytes);
      tail = (tail + decoder.decode(bytes, { stream: true })).slice(-4096);
      const at = tail.lastIndexOf('"usage":{');
      if (at >= 0) {
        const m = /"total_tokens":(\d+)/.exec(tail.slice(at));
        if (m) {
          tokensSeen += Number(m[1]);
          tail = '';
        }
      }
    },
  });
}

const app = new Hono();
app.post('/v1/chat/completions', async (c) => {
  if (c.req.header('authorization') !== expected) return c.json({ error: { message: 'invalid token' } }, 401);
  const request = await c.req.json();
  const res = await send(JSON.stringify(request));
  if (request.stream && res.status === 200)
    return new Response(res.stream().pipeThrough(readingUsage()), {
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
    });
  const answer = await res.json();
  tokensSeen += answer.usage?.total_tokens ?? 0;
  return c.json(answer, res.status);
});
app.get('/tokens', (c) => c.json({ tokensSeen }));

serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${info.port}` }) + '\n');
});
