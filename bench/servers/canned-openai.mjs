// A canned OpenAI Chat Completions upstream, as the independent gateway benchmark's mock
// (cuihuan/llm-gateway-bench, probe/overhead.mjs): no inference, the same small answer to every
// POST …/chat/completions, so a call through a gateway and the same call made directly differ
// only by the gateway. `stream: true` answers Server-Sent Events: the first chunk at once, the
// rest 1 ms later (so a gateway that buffers the stream shows it in its time to first byte), and
// the usage chunk only when `stream_options.include_usage` asks for it, as OpenAI does.
// Prints {"url": "http://127.0.0.1:<port>/v1"}.
import http from 'node:http';

const USAGE = { prompt_tokens: 8, completion_tokens: 1, total_tokens: 9 };
const COMPLETION = JSON.stringify({
  id: 'chatcmpl-canned',
  object: 'chat.completion',
  created: 0,
  model: 'gpt-4.1-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: USAGE,
});
const chunk = (delta, finish, usage) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-canned',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'gpt-4.1-mini',
    choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }],
    ...(usage ? { usage } : {}),
  })}\n\n`;
const FIRST = chunk({ role: 'assistant', content: 'ok' }, null);
const LAST = chunk({}, 'stop');
const USAGE_CHUNK = chunk(null, null, USAGE);

const server = http.createServer((req, res) => {
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', () => {
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"not found"}}');
      return;
    }
    let body;
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"invalid JSON"}}');
      return;
    }
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(COMPLETION);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(FIRST);
    setTimeout(() => {
      res.write(LAST);
      if (body.stream_options?.include_usage) res.write(USAGE_CHUNK);
      res.end('data: [DONE]\n\n');
    }, 1);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/v1` }) + '\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
