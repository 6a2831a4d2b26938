import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** Longest a closing connection keeps reading (and dropping) what its client still sends. */
export const LINGER_MS = 5000;

/**
 * Graceful close (RFC 9112 §9.6). When a connection is closed after an answer to a request whose
 * body was not read (a 413 for an oversized upload, typically), node and @hono/node-server call
 * `socket.destroySoon()`, which closes the descriptor with the client's bytes still arriving: the
 * kernel answers them with a reset, and a client that had not yet read our answer loses it (its
 * next write fails and its socket is torn down with the answer unread). On a loaded machine that
 * happens whenever the client is not scheduled in time.
 *
 * Here every connection closes like nginx's lingering close: the write side is shut (the client
 * sees the answer and then end of stream), reading goes on and what arrives is dropped, and the
 * socket is destroyed when the client closes its side or after `lingerMs`.
 */
export function lingerOnClose(server: Server, lingerMs = LINGER_MS): { closeLingering(): void } {
  const lingering = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    socket.destroySoon = () => linger(socket, lingerMs, lingering);
  });
  // At shutdown the answers have gone out; what is left is only the client's unread upload.
  return { closeLingering: () => lingering.forEach((s) => s.destroy()) };
}

function linger(socket: Socket, lingerMs: number, lingering: Set<Socket>): void {
  if (socket.destroyed) return;
  const done = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(done, lingerMs);
  lingering.add(socket);
  socket.once('end', done);
  socket.once('close', () => {
    clearTimeout(timer);
    lingering.delete(socket);
  });
  // Whatever still arrives is dropped, in flowing mode, so nothing is buffered.
  socket.on('data', () => undefined);
  if (socket.writable) socket.end();
  socket.resume();
}
