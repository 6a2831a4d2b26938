import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type TextMapGetter } from '@opentelemetry/api';

/**
 * Tracing goes through @opentelemetry/api only: without an SDK registered by the operator every
 * call here is the API's no-op (no span is recorded, nothing is exported). See docs/operations.md.
 */
export const tracer = trace.getTracer('ai-backend');

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

/** Run `fn` in an INTERNAL (or CLIENT) span, child of the active one. The span ends when `fn` settles. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  const span = tracer.startSpan(name, { kind, attributes });
  let error: unknown;
  try {
    return await context.with(trace.setSpan(context.active(), span), () => fn(span));
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
