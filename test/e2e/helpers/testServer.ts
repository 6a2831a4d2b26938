import { MemoryStorage, type ConfigInput } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { routeInProcess } from './inProcessOrigin.js';

export interface TestServer {
  server: AiBackendServer;
  url: string;
  /** fetch a path of this server (over the socket when listening, through server.fetch in process). */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

/**
 * A server on 127.0.0.1 with memory storage (unless the config says otherwise): a real listening
 * one by default, or (mode 'in-process') served through `server.fetch` behind a routed origin.
 */
export async function startTestServer(
  config: ConfigInput = {},
  mode: Mode = 'listening',
  opts: { clock?: () => number } = {},
): Promise<TestServer> {
  const server = createServer(
    { port: 0, host: '127.0.0.1', monitoring: { logging: { level: 'silent' } }, ...config },
    { ...(config.storage ? {} : { storage: new MemoryStorage() }), ...opts },
  );
  const { url, stop } = await startIn(mode, server);
  return {
    server,
    url,
    fetch: mode === 'listening' ? (path, init) => fetch(url + path, init) : (path, init) => server.fetch(new Request(url + path, init)),
    stop,
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
  const s = await startTestServer(config, mode);
  return { server: s.server, url: s.url, stop: s.stop, call: s.fetch };
}

export const rpc = (method: string, params?: unknown, id: number | string | null = 1) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }),
});
