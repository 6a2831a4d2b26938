import { type IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

const uncork = (socket: Socket) => socket.uncork();

/**
 * The response class of our Node HTTP server (its `ServerResponse` option): a streamed answer's
 * head leaves in the same write as its first chunk.
 *
 * @hono/node-server flushes the head of every streamed answer (an SSE stream, a `/v1` stream, an
 * MCP stream) before it reads the body, so the head went out in a write of its own, a system call
 * and a TCP segment, just before the first chunk, which is usually ready already (the `/v1` and
 * MCP handlers enqueue it before they answer). The flush here corks the socket until the next
 * tick: a chunk written in the same turn joins the head, as Node's own `write` batches what one
 * turn writes. An answer whose first chunk is not ready still sends its head in that tick, so a
 * client waiting for an event stream's headers (a GET listen stream) is not kept waiting.
 */
export class StreamHeadResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override flushHeaders(): void {
    const socket = this.socket;
    if (socket && !socket.destroyed && socket.writableCorked === 0) {
      socket.cork();
      process.nextTick(uncork, socket);
    }
    super.flushHeaders();
  }
}
