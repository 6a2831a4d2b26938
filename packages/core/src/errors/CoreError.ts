import { TRPCError } from '@trpc/server';
import { CORE_ERROR_TABLE, type CoreErrorCode } from './errorTable.js';

/**
 * The one error type of core. Services and procedures throw it with a code from the closed
 * set in `errorTable.ts`; every transport maps it from there (tRPC code, JSON-RPC number,
 * HTTP status), never from the message text.
 *
 * It extends TRPCError so tRPC middleware and handlers treat it natively.
 */
export class CoreError extends TRPCError {
  readonly appCode: CoreErrorCode;
  /** Extra, client-safe details (never secrets). Surfaced as `error.data.details`. */
  readonly details: Record<string, unknown> | undefined;
  /** Headers the HTTP transports should add (e.g. Retry-After, WWW-Authenticate). */
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: CoreErrorCode,
    message: string,
    opts: { cause?: unknown; details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super({ code: CORE_ERROR_TABLE[code].trpc, message, cause: opts.cause });
    this.name = 'CoreError';
    this.appCode = code;
    this.details = opts.details;
    this.headers = opts.headers;
  }
}

export function isCoreError(err: unknown): err is CoreError {
  return err instanceof CoreError;
}
