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
 * `gen`, telling `onEnd` once how it ended: the tokens its `finish` event reported (ai.streamText
 * yields `{ type: 'finish', result }`), or the error it threw. Values pass through unchanged.
 */
function watchGenerator<T, R, N>(gen: AsyncGenerator<T, R, N>, onEnd: (end: { tokens: number | null } | { error: unknown }) => void): AsyncGenerator<T, R, N> {
  let tokens: number | null = null;
  let ended = false;
  const end = (e: { tokens: number | null } | { error: unknown }) => {
    if (!ended) onEnd(e);
    ended = true;
  };
  const step = async (run: () => Promise<IteratorResult<T, R>>): Promise<IteratorResult<T, R>> => {
    try {
      const r = await run();
      if (r.done) end({ tokens });
      else {
        const v = r.value as { type?: unknown; result?: unknown } | null;
        if (typeof v === 'object' && v !== null && v.type === 'finish') tokens = reportedTokens(v.result);
      }
      return r;
    } catch (error) {
      end({ error });
      throw error;
    }
  };
  const watched = {
    next: (...args: [] | [N]) => step(() => gen.next(...args)),
    // A consumer that stops early (client gone) ends the stream: what was reported so far stands.
    return: (value: R | PromiseLike<R>) => step(() => gen.return(value)),
    throw: (err: unknown) => step(() => gen.throw(err)),
    [Symbol.asyncIterator]: () => watched,
  };
  return watched as unknown as AsyncGenerator<T, R, N>;
}

/**
 * One procedure call as the operator sees it: a span named after the procedure (child of the
 * request's span, covering refusals too), then on `done` the durable statistics and the metrics.
 */
export class CallObservation {
  private readonly started = performance.now();
  private readonly span: Span | undefined;
  /** This call in the Live view's ring, when it is a stream still to end. */
  private liveSeq: number | undefined;

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
    const active = this.span ? trace.setSpan(context.active(), this.span) : undefined;
    const result = active ? await context.with(active, next) : await next();
    const data = (result as { data?: unknown }).data;
    if (!result.ok || !isAsyncGenerator(data)) return result;
    // A streaming procedure (ai.streamText) returns a generator whose body (the upstream call
    // and the settle) runs as the transport pulls from it, after this middleware has returned:
    // pull it inside the procedure's context too, or its spans would hang off the request span;
    // and its tokens are known only at its end, when the Live view's row is completed.
    const watched = watchGenerator(data, (end) => this.streamEnded(end));
    (result as { data?: unknown }).data = active ? bindGenerator(watched, active) : watched;
    return result;
  }

  private streamEnded(end: { tokens: number | null } | { error: unknown }): void {
    if (this.liveSeq === undefined) return;
    // The stream's whole duration: the row first showed the time to its first event.
    const latencyMs = Math.round((performance.now() - this.started) * 10) / 10;
    if ('tokens' in end) return this.ctx.runtime.recentCalls.update(this.liveSeq, { streaming: false, tokens: end.tokens, latencyMs });
    const code = (end.error as { code?: unknown } | null)?.code;
    this.ctx.runtime.recentCalls.update(this.liveSeq, { streaming: false, status: typeof code === 'string' ? code : 'INTERNAL_SERVER_ERROR', latencyMs });
  }

  /** The call ended: ok (with its answer, read only for its token count), or refused/failed with a tRPC error. */
  done(error: TRPCError | undefined, data?: unknown): void {
    const ms = performance.now() - this.started;
    const { runtime, req, identity } = this.ctx;
    runtime.stats.record(req.transport, this.path, ms, error !== undefined);
    // The Live view polls admin.recentCalls: its own reads would push every other call out.
    if (this.path !== 'admin.recentCalls') {
      const stream = !error && isAsyncGenerator(data);
      const seq = runtime.recentCalls.push({
        atMs: Date.now(),
        entry: req.transport,
        procedure: this.path,
        identity: identity?.sub ?? null,
        via: identity?.via ?? null,
        status: error ? error.code : 'ok',
        latencyMs: Math.round(ms * 10) / 10,
        tokens: error || stream ? null : reportedTokens(data),
        ...(stream ? { streaming: true as const } : {}),
      });
      if (stream) this.liveSeq = seq;
    }
    if (this.ctx.identity) runtime.users.seen(this.ctx.identity);
    runtime.metrics?.procedure(req.transport, this.path, ms / 1000, error ? error.code : 'ok');
    if (!this.span) return;
    if (error) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.code });
    this.span.end();
  }
}
