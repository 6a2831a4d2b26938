import { MemoryStorage, type ConfigInput } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { routeInProcess } from './inProcessOrigin.js';

export interface TestServer {
  server: AiBackendServer;
  url: string;
  /** fetch against the real listening server. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

/** A real server on 127.0.0.1:<free port> with memory storage (unless the config says otherwise). */
export async function startTestServer(config: ConfigInput = {}): Promise<TestServer> {
  const server = createServer(
    { port: 0, host: '127.0.0.1', monitoring: { logging: { level: 'silent' } }, ...config },
    config.storage ? {} : { storage: new MemoryStorage() },
  );
  const addr = await server.start();
  return {
    server,
    url: addr.url,
    fetch: (path, init) => fetch(addr.url + path, init),
    stop: () => server.stop(),
  };
}

/**
 * The same tests against in-process `app.fetch` and a real Node server (STYLE.md practice 10).
 * Each mode gives a `call(path, init)` returning a Response, and a `url` that any client (the
 * official SDKs, `fetch(url + path)`) can be pointed at: in process it is an origin that
 * `globalThis.fetch` routes to `server.fetch` (helpers/inProcessOrigin.ts).
 */
export const MODES = ['in-process', 'listening'] as const;
export type Mode = (typeof MODES)[number];

/** A server for `mode`: `server.start()` when listening, else `server.ready()` behind a routed origin. */
export async function startIn(mode: Mode, server: AiBackendServer): Promise<{ url: string; stop(): Promise<void> }> {
  if (mode === 'listening') {
    const { url } = await server.start();
    return { url, stop: () => server.stop() };
  }
  await server.ready();
  const route = routeInProcess((req) => server.fetch(req));
  return {
    url: route.url,
    stop: async () => {
      route.release();
      await server.stop();
    },
  };
}

export async function serverFor(mode: Mode, config: ConfigInput = {}) {
  const server = createServer(
    { port: 0, host: '127.0.0.1', monitoring: { logging: { level: 'silent' } }, ...config },
    config.storage ? {} : { storage: new MemoryStorage() },
  );
  const { url, stop } = await startIn(mode, server);
  return {
    server,
    url,
    stop,
    call: mode === 'listening'
      ? (path: string, init?: RequestInit) => fetch(url + path, init)
      : (path: string, init?: RequestInit) => server.fetch(new Request(url + path, init)),
  };
}

export const rpc = (method: string, params?: unknown, id: number | string | null = 1) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }),
});
