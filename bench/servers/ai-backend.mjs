// ai-backend from the built package, configured by the JSON in argv[2].
import { createServer } from 'ai-backend';

const config = JSON.parse(process.argv[2] ?? '{}');
const server = createServer({ port: 0, monitoring: { logging: { level: 'error' } }, ...config });
const addr = await server.start();
process.stdout.write(JSON.stringify({ url: addr.url }) + '\n');
process.on('SIGTERM', () => server.stop().then(() => process.exit(0)));
