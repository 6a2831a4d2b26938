import { context, propagation, ProxyTracerProvider, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type TextMapGetter } from '@opentelemetry/api';

/**
 * Tracing goes through @opentelemetry/api only: without an SDK registered by the operator every
 * call here is the API's no-op (no span is recorded, nothing is exported). See docs/operations.md.
 */
export const tracer = trace.getTracer('ai-backend');

/** The API's no-op provider: what a ProxyTracerProvider delegates to until an SDK is registered. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * Has the operator registered an SDK? Checked per request (a global read), so the request path
 * skips context extraction and span bookkeeping entirely while tracing is off.
 */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

const headersGetter: TextMapGetter<Headers> = {
  keys: (h) => [...h.keys()],
  get: (h, key) => h.get(key) ?? undefined,
};

function endWith(span: Span, error: unknown): void {
  if (error !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message.slice(0, 200) : String(error).slice(0, 200) });
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
  const parent = propagation.extract(ROOT_CONTEXT, headers, headersGetter);
  const span = tracer.startSpan(`${method} ${route}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'http.route': route } }, parent);
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
  propagation.inject(context.active(), headers);
}

export { SpanKind, SpanStatusCode };
