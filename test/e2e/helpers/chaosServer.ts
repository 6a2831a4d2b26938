// One server instance of the chaos test, in a process of its own (so it can be killed -9),
// run from the TypeScript sources: node --conditions=ai-backend-source --import tsx chaosServer.ts '<config JSON>'.
import { createServer } from '@ai-backend/transports';

const config = JSON.parse(process.argv[2] ?? '{}');
const server = createServer({ port: 0, host: '127.0.0.1', monitoring: { logging: { level: 'error' } }, ...config });
const addr = await server.start();
process.stdout.write(JSON.stringify({ url: addr.url }) + '\n');
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
