// ai-backend from the built package, configured by the JSON in argv[2].
import { createServer } from 'ai-backend';

const config = JSON.parse(process.argv[2] ?? '{}');
// A load generator is one caller: the default rate limits (docs/security.md#rate-limits-mcpratelimiting)
// would answer it with 429s. The benchmarks measure the call path, so limits are off unless a bench sets them.
const server = createServer({ port: 0, monitoring: { logging: { level: 'error' } }, ...config, mcp: { ...config.mcp, rateLimiting: { enabled: false, ...config.mcp?.rateLimiting } } });
const addr = await server.start();
process.stdout.write(JSON.stringify({ url: addr.url }) + '\n');
process.on('SIGTERM', () => server.stop().then(() => process.exit(0)));
