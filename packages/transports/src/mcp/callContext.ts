import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  ResultSchema,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { CoreError, RequestScope, type Context, type McpCallContext } from '@ai-backend/core';
import { levelEnabled, type McpServerDeps, type McpSessionState } from './sessionState.js';

/** What the HTTP layer learned about a request, carried to handlers in `authInfo.extra`: core's request scope. */
export interface McpRequestFacts {
  scope: RequestScope;
}

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

function scopeOf(authInfo: AuthInfo | undefined): RequestScope {
  const facts = authInfo?.extra?.facts as McpRequestFacts | undefined;
  if (!facts) throw new CoreError('INTERNAL', 'MCP request without request facts');
  return facts.scope;
}

/**
 * The signal a procedure run from MCP sees: aborted by notifications/cancelled or the session
 * closing (the SDK's `extra.signal`), and by the HTTP request that carried the call going away
 * before its answer was written (client disconnect). A stream the server itself ends for
 * SEP-1699 polling finishes its response normally, so it does not cancel the call.
 */
function callSignal(scope: RequestScope, extra: Extra): AbortSignal {
  return AbortSignal.any([extra.signal, scope.facts.signal()]);
}

/** Which client capability each server-to-client request needs. */
const REQUIRED_CAPABILITY: Record<string, string> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};
const RESULT_SCHEMA = {
  'sampling/createMessage': CreateMessageResultSchema,
  'elicitation/create': ElicitResultSchema,
  'roots/list': ListRootsResultSchema,
} as const;
/** A person answers elicitations and reviews sampling requests: give them time. */
const DEFAULT_TIMEOUT_MS: Record<string, number> = { 'elicitation/create': 10 * 60_000, 'sampling/createMessage': 5 * 60_000 };

/**
 * The tRPC context for a procedure run from an MCP request (tool call, prompt, resource):
 * the caller's identity from the HTTP layer, the request's AbortSignal (aborted by
 * notifications/cancelled), and `ctx.mcp` with progress, logging and server-to-client requests.
 */
export function mcpContext(deps: McpServerDeps, state: McpSessionState, server: Server, extra: Extra, name: string, progressToken?: string | number): Context {
  const scope = scopeOf(extra.authInfo);
  const mcp: McpCallContext = {
    sessionId: deps.sessionId(),
    toolName: name,
    clientCapabilities: server.getClientCapabilities() as Record<string, unknown> | undefined,
    async progress(progress, total, message) {
      if (progressToken === undefined) return;
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) },
      });
    },
    async log(level, data) {
      if (!levelEnabled(state, level)) return;
      // Related to the request, so it travels on the call's own SSE stream.
      await extra.sendNotification({ method: 'notifications/message', params: { level, logger: name, data } });
    },
    async request(method, params, opts) {
      if (deps.mode === 'stateless') {
        throw new CoreError('NOT_CONFIGURED', `${method} needs a stateful MCP session (mcp.sessionMode 'stateful'); this server runs stateless`);
      }
      const capability = REQUIRED_CAPABILITY[method];
      const caps = server.getClientCapabilities() as Record<string, unknown> | undefined;
      if (capability && !caps?.[capability]) {
        throw new CoreError('NOT_CONFIGURED', `the MCP client did not declare the ${capability} capability, so ${method} is not available`);
      }
      const schema = RESULT_SCHEMA[method as keyof typeof RESULT_SCHEMA] ?? ResultSchema;
      const timeout = opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS[method];
      return (await extra.sendRequest({ method, params } as ServerRequest, schema, {
        ...(timeout ? { timeout } : {}),
        signal: extra.signal,
      })) as never;
    },
    ...(extra.closeSSEStream ? { closeStream: extra.closeSSEStream } : {}),
  };
  return scope.context({ mcp, signal: callSignal(scope, extra) });
}
