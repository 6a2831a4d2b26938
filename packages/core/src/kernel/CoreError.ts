/**
 * The closed set of application error codes. What each becomes on the wire (tRPC code, HTTP
 * status, JSON-RPC number) is decided in one table in the pipeline (pipeline/errorTable.ts), so
 * the layers below it — storage, services — know nothing of any protocol.
 */
export const CORE_ERROR_CODES = [
  'BAD_REQUEST',
  'INVALID_PARAMS',
  'UNAUTHORIZED',
  'INVALID_TOKEN',
  'SESSION_NOT_FOUND',
  'INSUFFICIENT_SCOPE',
  'FORBIDDEN',
  'ACCESS_DENIED',
  'NOT_FOUND',
  'NO_WORKSPACES',
  'NOT_CONFIGURED',
  'CONFLICT',
  'PAYMENT_REQUIRED',
  'PAYLOAD_TOO_LARGE',
  'RATE_LIMITED',
  'UPSTREAM_ERROR',
  'UPSTREAM_TIMEOUT',
  'UNAVAILABLE',
  'CANCELLED',
  'INTERNAL',
] as const;

export type CoreErrorCode = (typeof CORE_ERROR_CODES)[number];

/**
 * The one error type of core. Services and procedures throw it with a code from the closed set
 * above; every entry point maps it through pipeline/errorTable.ts, never from the message text.
 * A plain Error: tRPC sees it only in the pipeline, which wraps it (as the TRPCError's cause).
 */
export class CoreError extends Error {
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
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'CoreError';
    this.appCode = code;
    this.details = opts.details;
    this.headers = opts.headers;
  }
}

export function isCoreError(err: unknown): err is CoreError {
  return err instanceof CoreError;
}

/**
 * The CoreError behind an error: itself, or the cause of the wrapper the tRPC pipeline put
 * around it (procedures called through tRPC or `invoke` fail with a TRPCError whose cause it is).
 */
export function coreErrorOf(err: unknown): CoreError | undefined {
  if (err instanceof CoreError) return err;
  const cause = (err as { cause?: unknown } | null | undefined)?.cause;
  return cause instanceof CoreError ? cause : undefined;
}
