// One start-up of a default server, timed by phase, as one JSON line (bench/startupPhases.mjs runs it).
// It first imports what the hand-written tRPC server (bare-trpc.mjs) also loads, so the phases
// after that are what ai-backend adds: core, auth, transports, the `ai-backend` entry,
// createServer, the runtime (storage, services, registries) and listening.
const marks = [['boot', performance.now()]];
const mark = (name) => marks.push([name, performance.now()]);
await import('zod');
await import('@trpc/server');
await import('@trpc/server/adapters/fetch');
await import('superjson');
await import('hono');
mark('deps');
await import('@hono/node-server');
mark('node-server');
await import('@ai-backend/core/internal');
mark('core');
await import('@ai-backend/auth');
await import('@ai-backend/transports');
mark('auth+transports');
const { createServer } = await import('ai-backend');
mark('cli');
const server = createServer({
  port: 0,
  storage: { type: 'memory' },
  monitoring: { logging: { level: 'error' } },
  mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false } },
});
mark('createServer');
await server.ready();
mark('runtime');
await server.start();
mark('listen');
process.stdout.write(JSON.stringify(Object.fromEntries(marks.map(([name, t], i) => [name, i === 0 ? t : t - marks[i - 1][1]]))) + '\n');
await server.stop();
