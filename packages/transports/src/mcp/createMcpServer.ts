import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { CoreError, invoke, type Context, type CoreError as CoreErrorType, type Identity, type McpCallContext, type Runtime } from '@ai-backend/core';
import type { ToolCatalog } from './toolCatalog.js';

/** What the HTTP layer learned about a request, carried to tool handlers in `authInfo.extra`. */
export interface McpRequestFacts {
  identity: Identity | null;
  credentialError: CoreErrorType | null;
  ip: string;
  headers: Headers;
}

export const SERVER_INFO = { name: 'ai-backend', version: '0.1.0' } as const;

function factsOf(authInfo: AuthInfo | undefined): McpRequestFacts {
  const facts = authInfo?.extra?.facts as McpRequestFacts | undefined;
  return facts ?? { identity: null, credentialError: null, ip: 'unknown', headers: new Headers() };
}

/** Tool results: text for every client, structuredContent when the tool declares an output schema. */
function toToolResult(data: unknown, structured: boolean) {
  const text = typeof data === 'string' ? data : JSON.stringify(data ?? null);
  return {
    content: [{ type: 'text' as const, text }],
    ...(structured && typeof data === 'object' && data !== null ? { structuredContent: data as Record<string, unknown> } : {}),
  };
}

/**
 * One MCP server (per session, or per request in stateless mode) whose tools are the
 * procedures with MCP metadata, called through core's invoke seam with the request's identity.
 */
export function createMcpServer(runtime: Runtime, catalog: ToolCatalog, sessionId: () => string | undefined): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false }, logging: {} },
    instructions: 'ai-backend: AI text generation, server workspaces and helper tools. Call tools/list to see what is available.',
  });

  server.setRequestHandler(ListToolsRequestSchema, () => catalog.listResult);

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = catalog.byName.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool: ${request.params.name.slice(0, 200)}`);
    const facts = factsOf(extra.authInfo);
    const progressToken = request.params._meta?.progressToken;
    const mcp: McpCallContext = {
      sessionId: sessionId(),
      toolName: tool.name,
      clientCapabilities: server.getClientCapabilities() as Record<string, unknown> | undefined,
      async progress(progress, total, message) {
        if (progressToken === undefined) return;
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) },
        });
      },
      async log(level, data) {
        await server.sendLoggingMessage({ level, data, logger: tool.name }, sessionId());
      },
      async request(method, params) {
        const { ResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
        return (await extra.sendRequest({ method, params } as never, ResultSchema)) as never;
      },
    };
    const ctx: Context = {
      runtime,
      identity: facts.identity,
      credentialError: facts.credentialError,
      req: { transport: 'mcp', ip: facts.ip, signal: extra.signal, headers: facts.headers },
      mcp,
    };
    const result = await invoke(runtime.router, tool.path, request.params.arguments ?? {}, ctx);
    if (result.ok) return toToolResult(result.data, tool.outputSchema !== undefined);
    const err = result.error;
    const internal = err.code === 'INTERNAL_SERVER_ERROR' && !(err instanceof CoreError);
    if (internal) runtime.logger.error('tool failed', { tool: tool.name, error: err.cause?.message ?? err.message });
    const message = internal ? 'internal error' : err.message;
    return { isError: true, content: [{ type: 'text' as const, text: `${err.code}: ${message}` }] };
  });

  return server;
}
