import type { Context, MiddlewareHandler } from 'hono';
import type { HttpBindings } from '@hono/node-server';
import { edgeError } from './edgeError.js';

/**
 * A cap on the MCP GET event streams one client address holds open (`limits.maxSseStreamsPerClient`):
 * such a stream lives as long as the client wants, so without a cap one address could hold
 * every socket. Counted on the Node adapter, where the end of a stream is the response's
 * 'close'; other runtimes bound streams themselves. POST answers streamed as SSE end with their
 * call and are not counted.
 */
export function sseStreamCap(max: number, clientIp: (c: Context) => string): MiddlewareHandler {
  const open = new Map<string, number>();
  const release = (ip: string) => {
    const n = (open.get(ip) ?? 1) - 1;
    if (n > 0) open.set(ip, n);
    else open.delete(ip);
  };
  return async (c, next) => {
    const outgoing = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
    if (c.req.method !== 'GET' || !outgoing) return next();
    const ip = clientIp(c);
    const held = open.get(ip) ?? 0;
    if (held >= max) {
      return edgeError('jsonrpc', 429, `too many open event streams from this address (limit ${max}); close one before opening another`, { 'Retry-After': '5' });
    }
    // Counted before the handler runs, so concurrent opens cannot all slip under the cap.
    open.set(ip, held + 1);
    try {
      await next();
    } catch (err) {
      release(ip);
      throw err;
    }
    if (c.res.headers.get('content-type')?.includes('text/event-stream') && !outgoing.writableEnded) outgoing.once('close', () => release(ip));
    else release(ip);
  };
}
