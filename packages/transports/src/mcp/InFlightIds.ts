import type { JSONRPCMessage } from '@modelcontextprotocol/server';

type Message = { id?: unknown; method?: unknown; result?: unknown; error?: unknown; params?: { requestId?: unknown } } | null;

/** JSON-RPC ids are strings or numbers; `1` and `"1"` are different ids. */
const idKey = (id: unknown): string | undefined => (typeof id === 'number' ? `n:${id}` : typeof id === 'string' ? `s:${id}` : undefined);

/** The transport's part InFlightIds uses: its send, through which every answer goes. */
interface Sender {
  send(message: JSONRPCMessage, options?: unknown): Promise<void>;
}

/** A request of the session the client cancelled while it was in flight: its id, and the claim it was made under. */
export interface CancelledRequest {
  id: string | number;
  claim: object;
}

/**
 * The answer sent for a request the client cancelled (notifications/cancelled). The SDK never
 * answers a cancelled request, so without one its POST stayed open for good: a JSON answer
 * (`mcp.responseMode: 'json'`, and stateless mode's default) was a promise that never settled,
 * holding the POST's stream place, the transport's maps and, stateless, its whole server. The
 * MCP specification lets a response cross a cancellation; the client ignores it.
 */
export const cancelledAnswer = (id: string | number): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id, error: { code: -32800, message: 'request cancelled by the client (notifications/cancelled)' } }) as JSONRPCMessage;

/**
 * The ids of one 2025 session's requests still unanswered. The MCP specification requires a
 * request id not used before by the requestor in the same session; the SDK's transport keys its
 * answers by id, so a second request with an id in flight would take the first one's answer
 * stream and one answer would be lost without a word. A request reusing an id in flight is
 * refused instead (`claim`), with a JSON-RPC error naming the id; once answered (a request the
 * client cancels is answered by `answerCancelled`) the id is free again.
 */
export class InFlightIds {
  /** Each id in flight, with the claim it was taken under (a cancel answers only the request it was for). */
  private readonly ids = new Map<string, object>();

  /** Ids in flight (tests). */
  get size(): number {
    return this.ids.size;
  }

  /**
   * Claim the ids of `messages`' requests: the first id already in flight (or repeated in the batch) is returned and nothing is claimed.
   * `cancelled`: the requests in flight that the batch's notifications/cancelled name, for `answerCancelled` once the batch was handed
   * over.
   */
  claim(messages: readonly unknown[]): { duplicate: string | number } | { claimed: string[]; cancelled: CancelledRequest[] } {
    const keys: string[] = [];
    const cancelled: CancelledRequest[] = [];
    for (const raw of messages) {
      const m = raw as Message;
      if (typeof m?.method !== 'string') continue;
      if (m.method === 'notifications/cancelled') {
        const id = m.params?.requestId;
        const k = idKey(id);
        const claim = k === undefined ? undefined : this.ids.get(k);
        if (claim && !cancelled.some((c) => c.claim === claim)) cancelled.push({ id: id as string | number, claim });
        continue;
      }
      const k = idKey(m.id);
      if (!k) continue;
      if (this.ids.has(k) || keys.includes(k)) return { duplicate: m.id as string | number };
      keys.push(k);
    }
    for (const k of keys) this.ids.set(k, {});
    return { claimed: keys, cancelled };
  }

  /** The request was not taken (the transport refused the POST): its ids are free. */
  release(keys: readonly string[]): void {
    for (const k of keys) this.ids.delete(k);
  }

  /**
   * Answer each cancelled request that is still in flight under the same claim (not answered
   * meanwhile, its id not taken again since): its POST ends, and the transport forgets it.
   */
  answerCancelled(transport: Sender, cancelled: readonly CancelledRequest[]): void {
    for (const { id, claim } of cancelled) {
      if (this.ids.get(idKey(id)!) !== claim) continue;
      // Answered already by the time the cancel got through (the SDK then has no stream for it).
      transport.send(cancelledAnswer(id)).catch(() => undefined);
    }
  }

  /** Free each id when the server sends its answer (a result or an error for it). */
  watch(transport: Sender): void {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      const m = message as Message;
      if (m && typeof m.method !== 'string' && ('result' in m || 'error' in m)) {
        const k = idKey(m.id);
        if (k) this.ids.delete(k);
      }
      return send(message, options);
    };
  }
}

/** The answer to a request reusing an id in flight: HTTP 400, a JSON-RPC Invalid Request error with that id. */
export function duplicateIdResponse(id: string | number): Response {
  const body = {
    jsonrpc: '2.0',
    id,
    error: {
      code: -32600,
      message: `request id ${JSON.stringify(id).slice(0, 100)} is already used by a request of this session still in flight; JSON-RPC request ids must be unique per MCP session`,
    },
  };
  return new Response(JSON.stringify(body), { status: 400, headers: { 'content-type': 'application/json' } });
}
