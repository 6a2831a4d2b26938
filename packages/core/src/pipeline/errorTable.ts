import type { TRPC_ERROR_CODE_KEY } from '@trpc/server';
import type { CoreErrorCode } from '../kernel/CoreError.js';

/**
 * The closed set of application error codes, and what each becomes on the wire.
 * This is the only place a code is mapped: tRPC code (and through it the HTTP status tRPC
 * uses), JSON-RPC error number for /rpc and MCP, HTTP status for plain HTTP answers.
 */
export const CORE_ERROR_TABLE = {
  BAD_REQUEST: { trpc: 'BAD_REQUEST', http: 400 },
  INVALID_PARAMS: { trpc: 'BAD_REQUEST', http: 400 },
  UNAUTHORIZED: { trpc: 'UNAUTHORIZED', http: 401 },
  INVALID_TOKEN: { trpc: 'UNAUTHORIZED', http: 401 },
  SESSION_NOT_FOUND: { trpc: 'UNAUTHORIZED', http: 401 },
  INSUFFICIENT_SCOPE: { trpc: 'FORBIDDEN', http: 403 },
  FORBIDDEN: { trpc: 'FORBIDDEN', http: 403 },
  ACCESS_DENIED: { trpc: 'FORBIDDEN', http: 403 },
  NOT_FOUND: { trpc: 'NOT_FOUND', http: 404 },
  NO_WORKSPACES: { trpc: 'PRECONDITION_FAILED', http: 412 },
  NOT_CONFIGURED: { trpc: 'PRECONDITION_FAILED', http: 412 },
  CONFLICT: { trpc: 'CONFLICT', http: 409 },
  PAYMENT_REQUIRED: { trpc: 'PAYMENT_REQUIRED', http: 402 },
  PAYLOAD_TOO_LARGE: { trpc: 'PAYLOAD_TOO_LARGE', http: 413 },
  RATE_LIMITED: { trpc: 'TOO_MANY_REQUESTS', http: 429 },
  UPSTREAM_ERROR: { trpc: 'BAD_GATEWAY', http: 502 },
  UPSTREAM_TIMEOUT: { trpc: 'GATEWAY_TIMEOUT', http: 504 },
  UNAVAILABLE: { trpc: 'SERVICE_UNAVAILABLE', http: 503 },
  CANCELLED: { trpc: 'CLIENT_CLOSED_REQUEST', http: 499 },
  INTERNAL: { trpc: 'INTERNAL_SERVER_ERROR', http: 500 },
} as const satisfies Record<CoreErrorCode, { trpc: TRPC_ERROR_CODE_KEY; http: number }>;

/**
 * JSON-RPC 2.0 error numbers by tRPC code, used by /rpc and by MCP tool errors.
 * -32700..-32600 are the standard ones; application errors use the -32000 server range,
 * and the tRPC code travels in `error.data.code` so clients need not decode numbers.
 */
export const JSONRPC_CODE_BY_TRPC: Record<TRPC_ERROR_CODE_KEY, number> = {
  PARSE_ERROR: -32700,
  BAD_REQUEST: -32602,
  NOT_FOUND: -32004,
  METHOD_NOT_SUPPORTED: -32601,
  INTERNAL_SERVER_ERROR: -32603,
  UNAUTHORIZED: -32001,
  FORBIDDEN: -32003,
  PAYMENT_REQUIRED: -32002,
  TIMEOUT: -32008,
  CONFLICT: -32009,
  PRECONDITION_FAILED: -32012,
  PRECONDITION_REQUIRED: -32028,
  PAYLOAD_TOO_LARGE: -32013,
  UNSUPPORTED_MEDIA_TYPE: -32015,
  UNPROCESSABLE_CONTENT: -32022,
  TOO_MANY_REQUESTS: -32029,
  CLIENT_CLOSED_REQUEST: -32099,
  NOT_IMPLEMENTED: -32601,
  BAD_GATEWAY: -32052,
  SERVICE_UNAVAILABLE: -32053,
  GATEWAY_TIMEOUT: -32054,
};

/** JSON-RPC standard codes used by the bridge itself (not by procedures). */
export const JSONRPC_STANDARD = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
} as const;
