// ai-backend from the built package, configured by the JSON in argv[2].
import { createServer, publicProcedure, router } from 'ai-backend';
import { z } from 'zod';

const config = JSON.parse(process.argv[2] ?? '{}');
// A custom router with one mutation, as a user adds one (bench/trpcPath.mjs measures the mutation
// path on it: no built-in procedure is a public mutation without side effects).
const customRouters = {
  bench: router({
    echo: publicProcedure.input(z.object({ message: z.string().max(100_000) })).mutation(({ input }) => ({ message: input.message })),
  }),
};
// A load generator is one caller: the default rate limits (docs/security.md#rate-limits-mcpratelimiting)
// would answer it with 429s. The benchmarks measure the call path, so limits are off unless a bench sets them.
const server = createServer({
  port: 0,
  monitoring: { logging: { level: 'error' } },
  customRouters,
  ...config,
  mcp: { ...config.mcp, rateLimiting: { enabled: false, ...config.mcp?.rateLimiting } },
});
const addr = await server.start();
process.stdout.write(JSON.stringify({ url: addr.url }) + '\n');
process.on('SIGTERM', () => server.stop().then(() => process.exit(0)));
