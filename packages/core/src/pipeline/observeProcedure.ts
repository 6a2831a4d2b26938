import type { TRPCError } from '@trpc/server';
import { context, trace, SpanKind, type Context as OtelContext, type Span } from '@opentelemetry/api';
import type { Context } from './context.js';
import { SpanStatusCode, tracer, tracingActive } from '../observability/tracing.js';
import { reportedTokens } from '../observability/RecentCalls.js';

type MiddlewareResult = { ok: true } | { ok: false; error: TRPCError };

function isAsyncGenerator(v: unknown): v is AsyncGenerator<unknown, unknown, unknown> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v && typeof (v as { next?: unknown }).next === 'function';
}

/** `gen`, each step of which runs with `ctx` active. */
function bindGenerator<T, R, N>(gen: AsyncGenerator<T, R, N>, ctx: OtelContext): AsyncGenerator<T, R, N> {
  const bound = {
    next: (...args: [] | [N]) => context.with(ctx, () => gen.next(...args)),
    return: (value: R | PromiseLike<R>) => context.with(ctx, () => gen.return(value)),
    throw: (err: unknown) => context.with(ctx, () => gen.throw(err)),
    [Symbol.asyncIterator]: () => bound,
  };
  return bound as unknown as AsyncGenerator<T, R, N>;
}

/**
 * One procedure call as the operator sees it: a span named after the procedure (child of the
 * request's span, covering refusals too), then on `done` the durable statistics and the metrics.
 */
export class CallObservation {
  private readonly started = performance.now();
  private readonly span: Span | undefined;

  constructor(
    private readonly ctx: Context,
    private readonly path: string,
  ) {
    this.span = tracingActive()
      ? tracer.startSpan(`procedure ${path}`, { kind: SpanKind.INTERNAL, attributes: { 'rpc.system': 'ai-backend', 'rpc.method': path, 'ai_backend.entry': ctx.req.transport } })
      : undefined;
  }

  /** Run the rest of the chain with this call's span active (storage and upstream spans nest under it). */
  async run<R extends MiddlewareResult>(next: () => Promise<R>): Promise<R> {
    if (!this.span) return next();
    const active = trace.setSpan(context.active(), this.span);
    const result = await context.with(active, next);
    // A streaming procedure (ai.streamText) returns a generator whose body (the upstream call
    // and the settle) runs as the transport pulls from it, after this middleware has returned:
    // pull it inside the procedure's context too, or its spans would hang off the request span.
    const data = (result as { data?: unknown }).data;
    if (result.ok && isAsyncGenerator(data)) (result as { data?: unknown }).data = bindGenerator(data, active);
    return result;
  }

  /** The call ended: ok (with its answer, read only for its token count), or refused/failed with a tRPC error. */
  done(error: TRPCError | undefined, data?: unknown): void {
    const ms = performance.now() - this.started;
    const { runtime, req, identity } = this.ctx;
    runtime.stats.record(req.transport, this.path, ms, error !== undefined);
    // The Live view polls admin.recentCalls: its own reads would push every other call out.
    if (this.path !== 'admin.recentCalls') runtime.recentCalls.push({
      atMs: Date.now(),
      entry: req.transport,
      procedure: this.path,
      identity: identity?.sub ?? null,
      via: identity?.via ?? null,
      status: error ? error.code : 'ok',
      latencyMs: Math.round(ms * 10) / 10,
      tokens: error ? null : reportedTokens(data),
    });
    if (this.ctx.identity) runtime.users.seen(this.ctx.identity);
    runtime.metrics?.procedure(req.transport, this.path, ms / 1000, error ? error.code : 'ok');
    if (!this.span) return;
    if (error) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.code });
    this.span.end();
  }
}
