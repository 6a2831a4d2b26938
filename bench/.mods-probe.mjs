import { createRequire } from 'node:module';
const { createServer } = await import('ai-backend');
const s = createServer({ port: 0, storage: { type: process.argv[2] ?? 'memory' }, mcp: { auth: { authType: 'none' } }, monitoring: { logging: { level: 'error' } } });
const a = await s.start();
await (await fetch(a.url + '/health')).text();
for (const k of Object.keys(createRequire(import.meta.url).cache)) console.log('CJS', k);
await s.stop(); process.exit(0);
