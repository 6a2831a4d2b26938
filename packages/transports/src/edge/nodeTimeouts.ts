import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ResolvedConfig } from '@ai-backend/core';

/** Node server options for the request timeouts (`limits.headersTimeoutMs`, `limits.requestTimeoutMs`). */
export function timeoutServerOptions(limits: ResolvedConfig['limits']): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Checked this often; the default (30 s) would make the timeouts above coarse.
    connectionsCheckingInterval: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs, 5000),
  };
}

/**
 * `limits.bodyIdleTimeoutMs`: while a request body is arriving, a pause longer than this closes
 * the connection. Once the body is in, the socket has no timeout again, so long-lived answers
 * (SSE) are not cut.
 *
 * Only the client's pause counts. The body is "in" when the last byte has arrived, not when the
 * app has read it: a first request whose route loads its modules, or any request on a busy
 * server, may leave a complete body unread for longer than the limit, and closing that socket
 * answered a well-behaved client with nothing. Likewise while received bytes wait unread, the
 * client cannot send more (the socket is paused for them): the wait is the server's, so the
 * timer starts again instead.
 */
export function enforceBodyIdleTimeout(server: Server, idleMs: number): void {
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.complete) return;
    const hasBody =
      req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) return;
    const socket = req.socket as Socket;
    socket.setTimeout(idleMs);
    const clear = () => socket.setTimeout(0);
    // Node emits a socket's timeout on its response; with a listener there, node no longer
    // destroys the socket itself, and this decides.
    res.on('timeout', () => {
      if (req.complete) return clear();
      if (req.readableLength > 0) return void socket.setTimeout(idleMs);
      socket.destroy();
    });
    req.once('end', clear);
    req.once('close', clear);
    // Once the answer is out (an early 413, say) the server waits for nothing: what is left of the
    // body is drained and the connection closed gracefully (lingeringClose.ts), so a client
    // that is slow to send the rest is not reset before it has read the answer.
    res.once('finish', clear);
  });
}
