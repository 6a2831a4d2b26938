import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Runtime } from '@ai-backend/core';
import { createMcpServer } from './createMcpServer.js';
import type { ToolCatalog } from './toolCatalog.js';

/**
 * Stateless mode: one MCP server and transport for this one POST, closed when the answer is
 * complete: at once for a JSON answer, when the stream ends (or the client leaves) for SSE.
 */
export async function handleStatelessRequest(
  runtime: Runtime,
  catalog: ToolCatalog,
  req: Request,
  body: unknown,
  authInfo: object,
  json: boolean,
): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
  const { server } = createMcpServer(runtime, catalog, () => undefined, 'stateless');
  await server.connect(transport);
  let res: Response;
  try {
    res = await transport.handleRequest(req, { parsedBody: body, authInfo: authInfo as never });
  } catch (err) {
    void server.close();
    throw err;
  }
  if (!res.body || !res.headers.get('content-type')?.includes('text/event-stream')) {
    void server.close();
    return res;
  }
  const reader = res.body.getReader();
  const done = () => void server.close();
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
