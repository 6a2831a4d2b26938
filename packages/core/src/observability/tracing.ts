import type * as OtelApi from '@opentelemetry/api';
import type { Span, TextMapGetter } from '@opentelemetry/api';
import { lazyRequire } from '../lib/lazyRequire.js';

/**
 * Tracing goes through @opentelemetry/api only: without an SDK registered by the operator every
 * call here is the API's no-op (no span is recorded, nothing is exported). See docs/operations.md.
 *
 * The API itself (about 50 modules) loads only once an operator has registered something with it:
 * a default server never loads it, which shows in cold start and idle RSS (docs/performance.md).
 */

/**
 * Where @opentelemetry/api 1.x keeps what is registered with it (`trace`, `propagation`,
 * `context`): one object on globalThis shared by every copy of the 1.x API in the process
 * (its internal/global-utils), so an SDK registered through another copy is seen here too.
 */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

function registered(what: 'trace' | 'propagation'): boolean {
  return (globalThis as Record<symbol, Record<string, unknown> | undefined>)[OTEL_GLOBAL]?.[what] !== undefined;
}

const otelApi = lazyRequire<typeof OtelApi>('@opentelemetry/api');
let api: typeof OtelApi | undefined;
let noopProvider: unknown;

/** @opentelemetry/api, loaded on first use (synchronously: it is CommonJS, and spans start on the request path). */
export function otel(): typeof OtelApi {
  if (!api) {
    api = otelApi();
    // The API's no-op provider: what a ProxyTracerProvider delegates to until an SDK is registered.
    noopProvider = new api.ProxyTracerProvider().getDelegate();
  }
  return api;
}

/** The tracer of our spans (the API returns a proxy that follows the registered provider). */
export function tracer(): OtelApi.Tracer {
  return otel().trace.getTracer('ai-backend');
}

/**
 * Has the operator registered an SDK? Checked per request (a global read), so the request path
 * skips context extraction and span bookkeeping entirely while tracing is off.
 */
export function tracingActive(): boolean {
  if (!registered('trace')) return false;
  const { trace, ProxyTracerProvider } = otel();
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== noopProvider;
}

/** SpanKind and SpanStatusCode of the API (numeric enums, copied so that using them loads nothing). */
export const SpanKind = {
  INTERNAL: 0 as OtelApi.SpanKind.INTERNAL,
  SERVER: 1 as OtelApi.SpanKind.SERVER,
  CLIENT: 2 as OtelApi.SpanKind.CLIENT,
};
export const SpanStatusCode = {
  UNSET: 0 as OtelApi.SpanStatusCode.UNSET,
  OK: 1 as OtelApi.SpanStatusCode.OK,
  ERROR: 2 as OtelApi.SpanStatusCode.ERROR,
};

const headersGetter: TextMapGetter<Headers> = {
  keys: (h) => [...h.keys()],
  get: (h, key) => h.get(key) ?? undefined,
};

function endWith(span: Span, error: unknown): void {
  if (error !== undefined) {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message.slice(0, 200) : String(error).slice(0, 200),
    });
  }
  span.end();
}

/**
 * Run one HTTP request in a SERVER span, child of the caller's W3C trace context (`traceparent`,
 * `tracestate`) when it sent one. `fn` returns the response status.
 */
export async function inRequestSpan(headers: Headers, method: string, route: string, fn: () => Promise<number>): Promise<void> {
  if (!tracingActive()) {
    await fn();
    return;
  }
  const { context, propagation, ROOT_CONTEXT, trace } = otel();
  const parent = propagation.extract(ROOT_CONTEXT, headers, headersGetter);
  const span = tracer().startSpan(
    `${method} ${route}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'http.route': route } },
    parent,
  );
  let error: unknown;
  try {
    const status = await context.with(trace.setSpan(parent, span), fn);
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) error = `HTTP ${status}`;
  } catch (err) {
    error = err;
    throw err;
  } finally {
    endWith(span, error);
  }
}

/** Add the active trace context to outgoing request headers (W3C traceparent), in place. */
export function injectTraceContext(headers: Record<string, string>): void {
  // Without a registered propagator the API's is a no-op: nothing to load.
  if (!registered('propagation')) return;
  const { context, propagation } = otel();
  propagation.inject(context.active(), headers);
}
