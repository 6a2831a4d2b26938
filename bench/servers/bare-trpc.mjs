// The tRPC baseline: a hand-written tRPC v11 server on Hono and the same Node adapter, with
// superjson and the shapes of our `mcp.echo` (query) and of the bench server's custom `bench.echo`
// (mutation). What a user
// would write without ai-backend; bench/trpcPath.mjs measures our tRPC path against it.
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import { initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import superjson from 'superjson';
import { z } from 'zod';

const t = initTRPC.context().create({ transformer: superjson });
const router = t.router({
  mcp: t.router({
    echo: t.procedure.input(z.object({ message: z.string().max(100_000) })).query(({ input }) => ({ message: input.message })),
  }),
  bench: t.router({
    echo: t.procedure.input(z.object({ message: z.string().max(100_000) })).mutation(({ input }) => ({ message: input.message })),
  }),
});

const app = new Hono();
app.get('/health', (c) => c.json({ status: 'ok' }));
app.all('/trpc/*', (c) => fetchRequestHandler({ endpoint: '/trpc', req: c.req.raw, router, createContext: () => ({}) }));
serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${info.port}` }) + '\n');
});
process.on('SIGTERM', () => process.exit(0));
