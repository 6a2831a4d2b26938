// The test upstream (the four provider wire formats) from the built @ai-backend/test-utils
// export, in its own process so it does not share an event loop with the server under test.
// A small control server gives the last request it received, so the benchmark can replay the
// exact wire request the gateway sent. Options as JSON in argv[2] (createTestUpstream options).
import http from 'node:http';
import { createTestUpstream } from '@ai-backend/test-utils';

const upstream = await createTestUpstream(JSON.parse(process.argv[2] ?? '{}'));
let last;
// Requests are recorded forever by design (tests read them); a benchmark sends millions.
setInterval(() => {
  if (upstream.requests.length) last = upstream.requests.at(-1);
  upstream.reset();
}, 200).unref();

const control = http.createServer((_req, res) => {
  const rec = upstream.requests.at(-1) ?? last;
  res.writeHead(rec ? 200 : 404, { 'content-type': 'application/json' });
  res.end(JSON.stringify(rec ? { method: rec.method, path: rec.path, headers: rec.headers, body: rec.body } : { error: 'no request yet' }));
});
control.listen(0, '127.0.0.1', () => {
  process.stdout.write(
    JSON.stringify({ url: upstream.url, baseUrls: upstream.baseUrls, control: `http://127.0.0.1:${control.address().port}` }) + '\n',
  );
});
process.on('SIGTERM', () => upstream.close().then(() => process.exit(0)));
