import type { TRPCError } from '@trpc/server';
import { toTRPCError } from './wireError.js';
import type { Context as OtelContext, Span } from '@opentelemetry/api';
import { isFinishEvent } from '../kernel/streamEvents.js';
import type { Context } from './context.js';
import { RUNTIME, type CallContext } from './callContext.js';
import { otel, SpanKind, SpanStatusCode, tracer, tracingActive } from '../observability/tracing.js';
import { cacheHitOf, reportedTokens, type RecentCalls } from '../observability/RecentCalls.js';

type MiddlewareResult = { ok: true } | { ok: false; error: TRPCError };

function isAsyncGenerator(v: unknown): v is AsyncGenerator<unknown, unknown, unknown> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v && typeof (v as { next?: unknown }).next === 'function';
}

/** A streamed call the consumer stopped reading before its end. */
const STOPPED_READING = { code: 'CLIENT_CLOSED_REQUEST' } as TRPCError;

/**
 * One procedure call as the operator sees it: a span named after the procedure (child of the
 * request's span, covering refusals too), then on `done` the durable statistics and the metrics.
 * A streamed call (a procedure returning an async generator, ai.streamText) is done when its
 * stream ends, not when the procedure returns: a failure mid-stream counts as that error, its
 * latency is the whole stream's.
 */
export class CallObservation {
  private readonly started = performance.now();
  private readonly span: Span | undefined;
  /** This call in the Live view's ring, when it is a stream still to end (shown as streaming meanwhile). */
  private liveSeq: number | undefined;

  constructor(
    private readonly ctx: Context,
    private readonly path: string,
  ) {
    this.span = tracingActive()
      ? tracer().startSpan(`procedure ${path}`, {
          kind: SpanKind.INTERNAL,
          attributes: { 'rpc.system': 'ai-backend', 'rpc.method': path, 'ai_backend.entry': ctx.req.transport },
        })
      : undefined;
  }

  /**
   * Run the rest of the chain with this call's span active (storage and upstream spans nest
   * under it), and end the observation with its outcome: at once, or for a streamed result when
   * the stream ends.
   */
  async run<R extends MiddlewareResult>(next: () => Promise<R>): Promise<R> {
    // The tracing API is loaded only when tracing is on (this.span).
    const active = this.span ? otel().trace.setSpan(otel().context.active(), this.span) : undefined;
    const result = active ? await otel().context.with(active, next) : await next();
    const data = (result as { data?: unknown }).data;
    // A failure is ended by the caller, once it has its tRPC code (toTRPCError).
    if (!result.ok) return result;
    if (!isAsyncGenerator(data)) {
      this.done(undefined, data);
      return result;
    }
    // The Live view shows the stream while it runs; done() completes the row when it ends.
    if (this.path !== 'admin.recentCalls')
      this.liveSeq = (this.ctx as CallContext)[RUNTIME].recentCalls.push(this.liveRow(undefined, null, true));
    (result as { data?: unknown }).data = this.observeStream(data, active);
    return result;
  }

  /**
   * `gen`, each step pulled inside the procedure's span (the upstream call and the settle run as
   * the transport pulls, after the middleware returned), ending this observation when it ends:
   * done, thrown, stopped by its consumer, or never read by a client that left.
   */
  private observeStream<T, TR, N>(gen: AsyncGenerator<T, TR, N>, active: OtelContext | undefined): AsyncGenerator<T, TR, N> {
    let ended = false;
    let started = false;
    /** The `finish` event's result (ai.streamText): the call's answer, read for its token count. */
    let finish: unknown;
    const { signal } = this.ctx.req;
    const end = (error: TRPCError | undefined) => {
      if (ended) return;
      ended = true;
      signal.removeEventListener('abort', onAbort);
      this.done(error, finish);
    };
    const onAbort = () => {
      if (!started) end(STOPPED_READING);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const step = async (
      pull: () => Promise<IteratorResult<T, TR>>,
      how: 'reading' | 'stopping' = 'reading',
    ): Promise<IteratorResult<T, TR>> => {
      started = true;
      try {
        const r = await (active ? otel().context.with(active, pull) : pull());
        if (!r.done && isFinishEvent(r.value)) finish = r.value.result;
        // Stopped before its end: cancelled, unless the answer was complete already.
        if (r.done) end(how === 'stopping' && finish === undefined ? STOPPED_READING : undefined);
        return r;
      } catch (err) {
        end(toTRPCError(err));
        throw err;
      }
    };
    const observed = {
      next: (...args: [] | [N]) => step(() => gen.next(...args)),
      return: (value: TR | PromiseLike<TR>) => step(() => gen.return(value), 'stopping'),
      throw: (err: unknown) => step(() => gen.throw(err)),
      [Symbol.asyncIterator]: () => observed,
    };
    return observed as unknown as AsyncGenerator<T, TR, N>;
  }

  /** The Live view's row of this call (no input, no answer, no credential), as one object. */
  private liveRow(error: TRPCError | undefined, tokens: number | null, streaming?: true) {
    const { req, identity } = this.ctx;
    const row: Parameters<RecentCalls['push']>[0] = {
      atMs: Date.now(),
      entry: req.transport,
      procedure: this.path,
      identity: identity?.sub ?? null,
      via: identity?.via ?? null,
      status: error ? error.code : 'ok',
      latencyMs: Math.round((performance.now() - this.started) * 10) / 10,
      tokens,
    };
    if (streaming) row.streaming = true;
    return row;
  }

  /** The call ended: ok (with its answer, read only for its token count), or refused/failed with a tRPC error. */
  done(error: TRPCError | undefined, data?: unknown): void {
    const ms = performance.now() - this.started;
    const { req } = this.ctx;
    const runtime = (this.ctx as CallContext)[RUNTIME];
    const tokens = error ? null : reportedTokens(data);
    runtime.stats.record(req.transport, this.path, ms, error !== undefined, error ? undefined : cacheHitOf(data, tokens));
    // A stream's row, shown while it ran, is completed; any other call gets its row now. The Live
    // view polls admin.recentCalls: its own reads would push every other call out.
    if (this.liveSeq !== undefined)
      runtime.recentCalls.update(this.liveSeq, {
        streaming: false,
        status: error ? error.code : 'ok',
        tokens,
        latencyMs: Math.round(ms * 10) / 10,
      });
    else if (this.path !== 'admin.recentCalls') runtime.recentCalls.push(this.liveRow(error, tokens));
    if (this.ctx.identity) runtime.users.seen(this.ctx.identity);
    runtime.metrics?.procedure(req.transport, this.path, ms / 1000, error ? error.code : 'ok');
    if (!this.span) return;
    if (error) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.code });
    this.span.end();
  }
}
