import type { TRPCError } from '@trpc/server';
import { context, trace, SpanKind, type Span } from '@opentelemetry/api';
import type { Context } from '../trpc/context.js';
import { SpanStatusCode, tracer } from './tracing.js';

type MiddlewareResult = { ok: true } | { ok: false; error: TRPCError };

/**
 * One procedure call as the operator sees it: a span named after the procedure (child of the
 * request's span, covering refusals too), then on `done` the durable statistics and the metrics.
 */
export class CallObservation {
  private readonly started = performance.now();
  private readonly span: Span;

  constructor(
    private readonly ctx: Context,
    private readonly path: string,
  ) {
    this.span = tracer.startSpan(`procedure ${path}`, { kind: SpanKind.INTERNAL, attributes: { 'rpc.system': 'ai-backend', 'rpc.method': path, 'ai_backend.entry': ctx.req.transport } });
  }

  /** Run the rest of the chain with this call's span active (storage and upstream spans nest under it). */
  run<R extends MiddlewareResult>(next: () => Promise<R>): Promise<R> {
    return context.with(trace.setSpan(context.active(), this.span), next);
  }

  /** The call ended: ok, or refused/failed with a tRPC error. */
  done(error: TRPCError | undefined): void {
    const ms = performance.now() - this.started;
    const { runtime, req } = this.ctx;
    runtime.stats.record(req.transport, this.path, ms, error !== undefined);
    if (this.ctx.identity) runtime.users.seen(this.ctx.identity);
    runtime.metrics?.procedure(req.transport, this.path, ms / 1000, error ? error.code : 'ok');
    if (error) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.code });
    this.span.end();
  }
}
