// The ceiling: a bare Hono JSON route on the same Node adapter.
import { Hono } from 'hono';
import { serve } from '@hono/node-server';

const app = new Hono();
app.post('/json', async (c) => c.json({ jsonrpc: '2.0', id: 1, result: await c.req.json() }));
app.get('/json', (c) => c.json({ message: 'hi' }));
serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${info.port}` }) + '\n');
});
