import type { TRPCError } from '@trpc/server';
import type { Context } from '../trpc/context.js';
import { SpanStatusCode, tracer } from './tracing.js';
import { context, trace, SpanKind } from '@opentelemetry/api';

type MiddlewareResult = { ok: true } | { ok: false; error: TRPCError };

/** A procedure call ended: statistics (durable, per day) and metrics (per instance). */
export function callDone(ctx: Context, path: string, started: number, error: TRPCError | undefined): void {
  const ms = performance.now() - started;
  const { runtime } = ctx;
  runtime.stats.record(ctx.req.transport, path, ms, error !== undefined);
  runtime.metrics?.procedure(ctx.req.transport, path, ms / 1000, error ? error.code : 'ok');
}

/**
 * Run the rest of a procedure's chain in a span named after the procedure, child of the request's
 * span. The tRPC result (ok or a typed error) sets the span status; nothing is thrown here.
 */
export async function inProcedureSpan<R extends MiddlewareResult>(ctx: Context, path: string, next: () => Promise<R>): Promise<R> {
  const span = tracer.startSpan(`procedure ${path}`, { kind: SpanKind.INTERNAL, attributes: { 'rpc.system': 'ai-backend', 'rpc.method': path, 'ai_backend.entry': ctx.req.transport } });
  try {
    const result = await context.with(trace.setSpan(context.active(), span), next);
    if (!result.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error.code });
    return result;
  } finally {
    span.end();
  }
}
