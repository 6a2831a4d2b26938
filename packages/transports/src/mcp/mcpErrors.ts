import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { CoreError, JSONRPC_CODE_BY_TRPC, type Runtime } from '@ai-backend/core';
import { getTRPCErrorFromUnknown } from '@trpc/server';

/**
 * A failure inside a prompts/resources/completion handler as a JSON-RPC error: the code comes
 * from the error table (never from message text); internal errors are logged and masked.
 */
export function toMcpError(runtime: Runtime, err: unknown, what: string): McpError {
  if (err instanceof McpError) return err;
  const trpc = getTRPCErrorFromUnknown(err);
  if (trpc.code === 'INTERNAL_SERVER_ERROR' && !(trpc instanceof CoreError)) {
    runtime.logger.error(`${what} failed`, { error: trpc.cause?.message ?? trpc.message });
    return new McpError(ErrorCode.InternalError, 'internal error');
  }
  // NOT_FOUND maps to -32601 for procedures; for a named prompt/resource MCP uses -32002/-32602.
  if (trpc.code === 'NOT_FOUND') return new McpError(what === 'resources/read' ? -32002 : ErrorCode.InvalidParams, trpc.message);
  const code = JSONRPC_CODE_BY_TRPC[trpc.code] ?? ErrorCode.InternalError;
  const data = trpc instanceof CoreError ? { code: trpc.appCode, ...(trpc.details ? { details: trpc.details } : {}) } : { code: trpc.code };
  return new McpError(code, trpc.message, data);
}
