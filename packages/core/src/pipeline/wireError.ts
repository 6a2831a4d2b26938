import { getTRPCErrorFromUnknown, TRPCError, type TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { ZodError } from '../lib/zod.js';
import { coreErrorOf, type CoreErrorCode } from '../kernel/CoreError.js';
import { CORE_ERROR_TABLE, JSONRPC_CODE_BY_TRPC, JSONRPC_STANDARD } from './errorTable.js';
import type { Logger } from '../kernel/Logger.js';

/**
 * Any error, as every entry point may show it: the ONE mapping from a thrown value to what a
 * caller sees (tRPC error shape, JSON-RPC error, MCP tool result or protocol error, HTTP status
 * and headers). Built by {@link toWireError}; the formatters below only rearrange it.
 */
export interface WireError {
  /** tRPC error code (`error.data.code` everywhere). */
  code: TRPC_ERROR_CODE_KEY;
  /** Our closed application code, for CoreErrors. */
  appCode?: CoreErrorCode;
  /** Safe to show anyone: never a library or parser message, a stack or a URL from a dependency. */
  message: string;
  httpStatus: number;
  jsonRpcCode: number;
  details?: Record<string, unknown>;
  /** zod issues of invalid input. */
  issues?: unknown[];
  /** Headers the HTTP answer carries (Retry-After, RateLimit, WWW-Authenticate). */
  headers?: Record<string, string>;
  /** Seconds to wait before retrying (from Retry-After), repeated in structured form. */
  retryAfterSec?: number;
  /** An unexpected failure: logged with its cause, shown as 'internal error'. */
  internal: boolean;
  /** The original error, for logs only. */
  error: TRPCError;
}

const GENERIC: Partial<Record<TRPC_ERROR_CODE_KEY, string>> = {
  PARSE_ERROR: 'malformed request input',
  BAD_REQUEST: 'invalid request input',
  INTERNAL_SERVER_ERROR: 'internal error',
};
const MAX_MESSAGE = 500;

/**
 * A message we may show: CoreError messages are written for callers. Other TRPCErrors (tRPC's
 * own, or thrown by custom procedures) keep theirs unless it was taken from a wrapped library
 * error (superjson, JSON.parse: "Maximum call stack size exceeded", parser positions) or names a
 * URL (library documentation links).
 */
function safeMessage(err: TRPCError): string {
  const core = coreErrorOf(err);
  if (core) return core.message;
  const generic = GENERIC[err.code] ?? err.code.toLowerCase().replace(/_/g, ' ');
  if (err.code === 'INTERNAL_SERVER_ERROR') return generic;
  if (err.cause instanceof ZodError) return inputMessage(err.cause);
  if (err.cause && err.cause.message === err.message) return generic;
  if (/https?:\/\/|\n\s+at /.test(err.message)) return generic;
  return err.message.length > MAX_MESSAGE ? `${err.message.slice(0, MAX_MESSAGE)}…` : err.message;
}

/**
 * "invalid input: <path>: <first issue>": the issues are in `issues` too, but an MCP client reads
 * only the text and a tRPC client's `message`, and "invalid input" alone does not say what to
 * change. Zod's messages name types and rules, never the values sent.
 */
function inputMessage(zod: ZodError): string {
  const first = zod.issues[0];
  if (!first) return 'invalid input';
  // A union that no branch matched: report the branch that got furthest ("expected string"
  // of a string-or-parts field says less than the part that was wrong).
  let issue: { path: PropertyKey[]; message: string; code?: string; errors?: unknown } = first;
  let path = [...first.path];
  while (issue.code === 'invalid_union' && Array.isArray(issue.errors) && issue.errors.length > 0) {
    const branches = (issue.errors as Array<Array<{ path: PropertyKey[]; message: string }>>)
      .map((b) => b[0])
      .filter((b) => b !== undefined);
    const deepest = branches.reduce<(typeof branches)[number] | undefined>(
      (a, b) => (!a || b.path.length > a.path.length ? b : a),
      undefined,
    );
    if (!deepest || deepest.path.length === 0) break;
    path = [...path, ...deepest.path];
    issue = deepest;
  }
  const where = path.map(String).join('.');
  const more = zod.issues.length > 1 ? ` (and ${zod.issues.length - 1} more)` : '';
  const text = `invalid input: ${where ? `${where}: ` : ''}${issue.message}${more}`;
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}

/**
 * Any thrown value as the TRPCError tRPC answers with: a CoreError (or tRPC's generic wrapper
 * around one) gets the tRPC code of its application code — the one place core's errors meet tRPC.
 */
export function toTRPCError(thrown: unknown): TRPCError {
  const core = coreErrorOf(thrown);
  if (!core) return getTRPCErrorFromUnknown(thrown);
  const code = CORE_ERROR_TABLE[core.appCode].trpc;
  if (thrown instanceof TRPCError && thrown.code === code) return thrown;
  return new TRPCError({ code, message: core.message, cause: core });
}

export function toWireError(thrown: unknown): WireError {
  const error = toTRPCError(thrown);
  const core = coreErrorOf(error);
  const wire: WireError = {
    code: error.code,
    message: safeMessage(error),
    httpStatus: getHTTPStatusCodeFromError(error),
    jsonRpcCode: error.cause instanceof ZodError ? JSONRPC_STANDARD.INVALID_PARAMS : JSONRPC_CODE_BY_TRPC[error.code],
    internal: error.code === 'INTERNAL_SERVER_ERROR' && !core,
    error,
  };
  if (core) {
    wire.appCode = core.appCode;
    if (core.details) wire.details = core.details;
    if (core.headers) {
      wire.headers = core.headers;
      const retry = Number(core.headers['Retry-After']);
      if (Number.isFinite(retry)) wire.retryAfterSec = retry;
    }
  }
  if (error.cause instanceof ZodError) wire.issues = error.cause.issues;
  return wire;
}

/** `error.data` on /trpc, /rpc and MCP: the same fields everywhere. */
export function wireErrorData(w: WireError, path?: string): Record<string, unknown> {
  const data: Record<string, unknown> = { code: w.code, httpStatus: w.httpStatus };
  if (path) data.path = path;
  if (w.appCode) data.appCode = w.appCode;
  if (w.details) data.details = w.details;
  if (w.issues) data.issues = w.issues;
  if (w.retryAfterSec !== undefined) data.retryAfterSec = w.retryAfterSec;
  return data;
}

/**
 * tRPC's `errorFormatter` for core's instance (pipeline/init.ts): the shape tRPC built, with our
 * message and `data` in place of its own (no stack, no library message).
 */
export function formatTrpcError<Shape extends { message: string; data: { path?: string } }>(opts: {
  shape: Shape;
  error: unknown;
}): Omit<Shape, 'message' | 'data'> & { message: string; data: Record<string, unknown> } {
  const wire = toWireError(opts.error);
  return { ...opts.shape, message: wire.message, data: wireErrorData(wire, opts.shape.data.path) };
}

/** A JSON-RPC 2.0 error object (/rpc, and MCP protocol errors of prompts and resources). */
export function toJsonRpcError(
  w: WireError,
  opts: { notFoundCode?: number } = {},
): { code: number; message: string; data: Record<string, unknown> } {
  const code = w.code === 'NOT_FOUND' && opts.notFoundCode !== undefined ? opts.notFoundCode : w.jsonRpcCode;
  return { code, message: w.message, data: wireErrorData(w) };
}

/** Key of the structured error in an MCP tool result's `_meta`. */
export const MCP_ERROR_META_KEY = 'ai-backend/error';

/**
 * A failed tool call as an MCP tool result (isError, so the model can read and correct it): the
 * text keeps "CODE: message" for models; the same fields as `error.data` elsewhere travel in
 * `_meta["ai-backend/error"]`, and in `structuredContent.error` when the tool declares no output
 * schema (a declared schema would make clients validate the error against it).
 */
export function toMcpToolError(
  w: WireError,
  opts: { structuredContent: boolean },
): {
  isError: true;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  _meta: Record<string, unknown>;
} {
  const error = { message: w.message, ...wireErrorData(w) };
  return {
    isError: true,
    content: [{ type: 'text', text: `${w.code}: ${w.message}` }],
    ...(opts.structuredContent ? { structuredContent: { error } } : {}),
    _meta: { [MCP_ERROR_META_KEY]: error },
  };
}

/**
 * Log an unexpected failure, the same way on every entry point; expected refusals are not
 * logged here (the security log records those).
 */
export function logWireError(logger: Pick<Logger, 'error'>, w: WireError, where: { transport: string; path?: string }): void {
  if (w.code !== 'INTERNAL_SERVER_ERROR') return;
  const cause = w.error.cause ?? w.error;
  logger.error('procedure failed', { transport: where.transport, path: where.path, error: cause.message, stack: cause.stack });
}
