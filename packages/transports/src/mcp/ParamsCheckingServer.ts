import { ProtocolError, ProtocolErrorCode, Server, type ServerContext } from '@modelcontextprotocol/server';

type Handler = (request: never, ctx: ServerContext) => unknown;

/** The list methods we serve, none of them paged. */
const UNPAGED_LISTS: ReadonlySet<string> = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']);

/**
 * The SDK's protocol server, answering a request whose params do not fit the method's schema
 * (prompts/get without `name`, resources/read with a numeric `uri`, logging/setLevel with an
 * unknown level...) with -32602 Invalid params, as JSON-RPC and the MCP specification say
 * (logging: "Invalid log level: -32602"). The SDK checks the params before our handler runs and
 * throws a plain Error there, which it then answers as -32603 Internal error on every method
 * but tools/call: a client's mistake read as a server fault.
 *
 * A failure is the params check's when our handler was never reached for that request: the
 * handler marks the request's context on entry, and a failure without the mark is re-thrown as
 * Invalid params. Errors with their own JSON-RPC code (the SDK's ProtocolErrors) pass unchanged.
 *
 * Our lists are never paged (no `nextCursor`), so any `cursor` a client sends for one is not a
 * cursor we gave it: -32602, as the specification's pagination says of invalid cursors, instead
 * of the first page again, which a client walking pages would read as a duplicate.
 */
export class ParamsCheckingServer extends Server {
  /** Contexts of the requests whose handler ran (the params check passed). */
  private readonly reached = new WeakSet<ServerContext>();

  // `any`: both of the base overloads pass through unchanged (a narrower signature would not override them).
  override setRequestHandler(method: any, schemasOrHandler: any, maybeHandler?: any): void {
    if (typeof schemasOrHandler !== 'function') return super.setRequestHandler(method, schemasOrHandler, maybeHandler);
    const handler = schemasOrHandler as Handler;
    const unpaged = UNPAGED_LISTS.has(method);
    super.setRequestHandler(method, ((request: { params?: { cursor?: unknown } }, ctx: ServerContext) => {
      this.reached.add(ctx);
      if (unpaged && request.params?.cursor !== undefined) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `invalid cursor: ${method} answers with the whole list and hands out no cursors`,
        );
      }
      return handler(request as never, ctx);
    }) as never);
  }

  protected override _wrapHandler(method: string, handler: Parameters<Server['_wrapHandler']>[1]): ReturnType<Server['_wrapHandler']> {
    return super._wrapHandler(method, async (request, ctx) => {
      try {
        return await handler(request, ctx);
      } catch (err) {
        if (this.reached.has(ctx) || hasRpcCode(err)) throw err;
        const detail = err instanceof Error ? err.message : String(err);
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid ${method} request: ${detail}`);
      }
    });
  }
}

const hasRpcCode = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && Number.isSafeInteger((err as { code?: unknown }).code);
