import { MemoryStorage, type ConfigInput } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';

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
 * Each mode gives a `call(path, init)` returning a Response.
 */
export const MODES = ['in-process', 'listening'] as const;
export type Mode = (typeof MODES)[number];

export async function serverFor(mode: Mode, config: ConfigInput = {}) {
  if (mode === 'listening') {
    const s = await startTestServer(config);
    return { call: s.fetch, stop: s.stop, url: s.url };
  }
  const server = createServer({ monitoring: { logging: { level: 'silent' } }, ...config }, { storage: new MemoryStorage() });
  await server.ready();
  return {
    call: (path: string, init?: RequestInit) => server.fetch(new Request('http://127.0.0.1:8000' + path, init)),
    stop: () => server.stop(),
    url: 'http://127.0.0.1:8000',
  };
}

export const rpc = (method: string, params?: unknown, id: number | string | null = 1) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }),
});
