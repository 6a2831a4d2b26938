import type { JSONRPCMessage } from '@modelcontextprotocol/server';

type Message = { id?: unknown; method?: unknown; result?: unknown; error?: unknown; params?: { requestId?: unknown } } | null;

/** JSON-RPC ids are strings or numbers; `1` and `"1"` are different ids. */
const idKey = (id: unknown): string | undefined => (typeof id === 'number' ? `n:${id}` : typeof id === 'string' ? `s:${id}` : undefined);

/**
 * The ids of one 2025 session's requests still unanswered. The MCP specification requires a
 * request id not used before by the requestor in the same session; the SDK's transport keys its
 * answers by id, so a second request with an id in flight would take the first one's answer
 * stream and one answer would be lost without a word. A request reusing an id in flight is
 * refused instead (`claim`), with a JSON-RPC error naming the id; once answered (or cancelled by
 * the client, which the server then never answers) the id is free again.
 */
export class InFlightIds {
  private readonly ids = new Set<string>();

  /**
   * Claim the ids of `messages`' requests: the first id already in flight (or repeated in the batch) is returned and nothing is claimed.
   */
  claim(messages: readonly unknown[]): { duplicate: string | number } | { claimed: string[] } {
    const keys: string[] = [];
    for (const raw of messages) {
      const m = raw as Message;
      if (typeof m?.method !== 'string') continue;
      if (m.method === 'notifications/cancelled') {
        const k = idKey(m.params?.requestId);
        if (k) this.ids.delete(k);
        continue;
      }
      const k = idKey(m.id);
      if (!k) continue;
      if (this.ids.has(k) || keys.includes(k)) return { duplicate: m.id as string | number };
      keys.push(k);
    }
    for (const k of keys) this.ids.add(k);
    return { claimed: keys };
  }

  /** The request was not taken (the transport refused the POST): its ids are free. */
  release(keys: readonly string[]): void {
    for (const k of keys) this.ids.delete(k);
  }

  /** Free each id when the server sends its answer (a result or an error for it). */
  watch(transport: { send(message: JSONRPCMessage, options?: unknown): Promise<void> }): void {
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
