import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import { createServer } from 'ai-backend';

// Mount ai-backend under /api in an existing Hono app: /api/trpc, /api/rpc, /api/mcp, /api/health.
const backend = createServer({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } });
await backend.ready();

const app = new Hono();
app.get('/', (c) => c.text('my app'));
app.route('/api', backend.app);

serve({ fetch: app.fetch, port: 3000, hostname: '127.0.0.1' }, (info) => console.log(`http://127.0.0.1:${info.port}/api/health`));
