import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import type { RequestStateSeal } from './requestStateSeal.js';
import { createMcpServer } from './createMcpServer.js';
import { cancelledAnswer } from './InFlightIds.js';
import type { McpServerServices } from './sessionState.js';
import type { ToolCatalog } from './toolCatalog.js';

type Message = { id?: unknown; method?: unknown; params?: { requestId?: unknown } } | null;

/**
 * The requests this instance is running in stateless mode, by caller and JSON-RPC id: a client
 * cancels a call (`notifications/cancelled`) in a POST of its own, which meets a fresh server
 * that never saw the call, so the notification is handed to the transport running it.
 */
export type StatelessCalls = Map<string, Set<WebStandardStreamableHTTPServerTransport>>;

const callKey = (caller: string, id: unknown) => `${caller}\n${JSON.stringify(id)}`;

/** One stateless POST: what it is, who sent it, and what serves it. */
export interface StatelessRequest {
  services: McpServerServices;
  catalog: ToolCatalog;
  seal: RequestStateSeal;
  req: Request;
  /** The body, parsed. */
  body: unknown;
  authInfo: object;
  /** 'json': one JSON body; 'sse': an SSE stream (mcp.responseModes.legacy). */
  responseMode: 'sse' | 'json';
  calls: StatelessCalls;
  /** Who sent it (a caller can cancel only its own calls). */
  caller: string;
}

/**
 * Stateless mode: one MCP server and transport for this one POST, closed when the answer is
 * complete: at once for a JSON answer, when the stream ends (or the client leaves) for SSE.
 */
export async function handleStatelessRequest({
  services,
  catalog,
  seal,
  req,
  body,
  authInfo,
  responseMode,
  calls,
  caller,
}: StatelessRequest): Promise<Response> {
  const messages = (Array.isArray(body) ? body : [body]) as Message[];
  for (const m of messages) {
    if (m?.method !== 'notifications/cancelled' || m.params?.requestId === undefined) continue;
    // Two clients of one caller may both have a call with this id running: the cancel could be
    // either's, so it is delivered only when it is unambiguous.
    const running = calls.get(callKey(caller, m.params.requestId));
    if (running?.size !== 1) continue;
    for (const t of running) {
      t.onmessage?.(m as never, { authInfo: authInfo as never });
      // The SDK never answers a cancelled request, so its POST (and this server made for it)
      // would wait for good: it is answered now, which ends it (an answer sent meanwhile wins).
      t.send(cancelledAnswer(m.params.requestId as string | number)).catch(() => undefined);
    }
  }
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: responseMode === 'json',
  });
  const { server } = createMcpServer(services, catalog, seal, () => undefined, 'stateless');
  await server.connect(transport);
  const keys = messages.filter((m) => m?.id !== undefined && typeof m.method === 'string').map((m) => callKey(caller, m!.id));
  for (const k of keys) calls.set(k, (calls.get(k) ?? new Set()).add(transport));
  const close = () => {
    for (const k of keys) {
      const running = calls.get(k);
      running?.delete(transport);
      if (running?.size === 0) calls.delete(k);
    }
    void server.close();
  };
  let res: Response;
  try {
    res = await transport.handleRequest(req, { parsedBody: body, authInfo: authInfo as never });
  } catch (err) {
    close();
    throw err;
  }
  if (!res.body || !res.headers.get('content-type')?.includes('text/event-stream')) {
    close();
    return res;
  }
  const reader = res.body.getReader();
  const done = close;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done: end, value } = await reader.read();
      if (end) {
        controller.close();
        done();
      } else controller.enqueue(value);
    },
    cancel(reason) {
      done();
      return reader.cancel(reason);
    },
  });
  return new Response(stream, { status: res.status, headers: res.headers });
}
