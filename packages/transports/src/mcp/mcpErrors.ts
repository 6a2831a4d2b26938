import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { logWireError, toJsonRpcError, toWireError, type Logger } from '@ai-backend/core/internal';

/**
 * A JSON-RPC error the SDK sends as is: it reads `code`, `message` and `data` off whatever a
 * handler throws, so the same failure reads the same on MCP as on /rpc.
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
 * "Resource not found" as SEP-2164 says, on both revisions: -32602 (Invalid Params) with the
 * URI in `data`. (The older -32002 also is core's PAYMENT_REQUIRED code, so it was ambiguous.)
 */
export function resourceNotFound(uri: string, message = 'resource not found'): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, message, { uri: uri.slice(0, 2048) });
}

/**
 * A failure inside a prompts/resources/completion handler as a JSON-RPC error, through core's
 * one error mapper (code from the error table, safe message, appCode/details/Retry-After in
 * data); internal errors are logged the same way as on every entry point.
 */
export function toMcpError(logger: Logger, err: unknown, what: string, uri?: string): Error {
  if (err instanceof ProtocolError) return err;
  const wire = toWireError(err);
  logWireError(logger, wire, { transport: 'mcp', path: what });
  // NOT_FOUND maps to -32004 for procedures; a named prompt/resource that does not exist is -32602.
  const e = toJsonRpcError(wire, { notFoundCode: ProtocolErrorCode.InvalidParams });
  const data = uri !== undefined && wire.code === 'NOT_FOUND' ? { ...e.data, uri: uri.slice(0, 2048) } : e.data;
  return new WireRpcError(e.code, e.message, data);
}

/** An HTTP answer carrying one JSON-RPC error with no id: how /mcp refuses a request before any message of it is read by the SDK. */
export const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
