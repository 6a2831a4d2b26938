/**
 * An MCP 2025 session's GET event stream, opened raw with a bearer token, for tests of what ends
 * a stream while it is open (docs/security.md, "Streams and the credential").
 */
import { expect } from 'vitest';
import { LATEST } from './mcpWire.js';

const ACCEPT = 'application/json, text/event-stream';
let ids = 0;

export const mcpHeaders = (token: string, sessionId?: string): Record<string, string> => ({
  'content-type': 'application/json',
  accept: ACCEPT,
  authorization: `Bearer ${token}`,
  'mcp-protocol-version': LATEST,
  ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
});

/** A 2025 session opened with `token`, and its GET stream: `ended` settles when the server ends it. */
export async function openMcpStream(url: string, token: string): Promise<{ sessionId: string; ended: Promise<'ended'>; close(): void }> {
  const init = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: mcpHeaders(token),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ++ids,
      method: 'initialize',
      params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: 'watch', version: '1' } },
    }),
  });
  expect(init.status, await init.clone().text()).toBe(200);
  await init.body?.cancel();
  const sessionId = init.headers.get('mcp-session-id')!;
  const done = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: mcpHeaders(token, sessionId),
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(done.status).toBe(202);
  const abort = new AbortController();
  const get = await fetch(`${url}/mcp`, {
    headers: { ...mcpHeaders(token, sessionId), accept: 'text/event-stream' },
    signal: abort.signal,
  });
  expect(get.status).toBe(200);
  expect(get.headers.get('content-type')).toContain('text/event-stream');
  const reader = get.body!.getReader();
  const ended = (async () => {
    try {
      while (!(await reader.read()).done);
    } catch {
      // The socket closed under the read: ended too.
    }
    return 'ended' as const;
  })();
  return { sessionId, ended, close: () => abort.abort() };
}

/** `p`'s value, or 'open' when it has not settled within `ms`. */
export const within = <T>(p: Promise<T>, ms: number): Promise<T | 'open'> =>
  Promise.race([p, new Promise<'open'>((r) => setTimeout(() => r('open'), ms).unref())]);
