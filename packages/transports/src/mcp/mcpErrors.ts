import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { logWireError, toJsonRpcError, toWireError, type Runtime } from '@ai-backend/core';

/** MCP's "resource not found" error code. */
const RESOURCE_NOT_FOUND = -32002;

/**
 * A JSON-RPC error the SDK sends as is: it reads `code`, `message` and `data` off whatever a
 * handler throws. (McpError would prefix the message with "MCP error <code>: ", so the same
 * failure would read differently on MCP than on /rpc.)
 */
class WireRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: Record<string, unknown>,
  ) {
    super(message);
  }
}

/**
 * A failure inside a prompts/resources/completion handler as a JSON-RPC error, through core's
 * one error mapper (code from the error table, safe message, appCode/details/Retry-After in
 * data); internal errors are logged the same way as on every entry point.
 */
export function toMcpError(runtime: Runtime, err: unknown, what: string): Error {
  if (err instanceof McpError) return err;
  const wire = toWireError(err);
  logWireError(runtime.logger, wire, { transport: 'mcp', path: what });
  // NOT_FOUND maps to -32004 for procedures; for a named prompt/resource MCP uses -32002/-32602.
  const e = toJsonRpcError(wire, { notFoundCode: what === 'resources/read' ? RESOURCE_NOT_FOUND : ErrorCode.InvalidParams });
  return new WireRpcError(e.code, e.message, e.data);
}
