import type { Metrics } from './Metrics.js';
import type { UpstreamStats } from './UpstreamStats.js';
import { injectTraceContext, otel, SpanKind, SpanStatusCode, tracer, tracingActive } from './tracing.js';
import { plainHeaders } from '../net/httpRequest.js';

type FetchFunction = typeof globalThis.fetch;

/** Where an HTTP attempt's outcome goes: the Prometheus metrics and the durable upstream statistics, either optional. */
interface Sinks {
  metrics: Metrics | undefined;
  stats: UpstreamStats | undefined;
}

function sample(sinks: Sinks, provider: string, model: string, outcome: string, seconds: number | undefined): void {
  sinks.metrics?.upstream(provider, model, outcome, seconds);
  sinks.stats?.record(provider, model, outcome, seconds);
}

function outcomeOf(status: number): string {
  if (status === 429) return '429';
  return `${Math.floor(status / 100)}xx`;
}

/**
 * The provider `fetch` for one provider and model: each HTTP attempt (the AI SDK retries) is a
 * CLIENT span carrying the caller's trace onward (`traceparent` header, W3C), and a sample of
 * `ai_backend_upstream_*` by provider, model and outcome, and of the durable upstream statistics
 * (the console's series). Latency is time to the response headers.
 */
export function observedFetch(
  inner: FetchFunction,
  provider: string,
  model: string,
  metrics: Metrics | undefined,
  stats?: UpstreamStats,
): FetchFunction {
  const sinks: Sinks = { metrics, stats };
  return async (input, init = {}) => {
    // Tracing off (no SDK registered): the API's span would record nothing and only carry its
    // parent's context, which injectTraceContext reads from the active context just the same.
    if (!tracingActive()) return unspanned(inner, provider, model, sinks, input, init);
    const method = (init.method ?? 'GET').toUpperCase();
    const { context, trace } = otel();
    const span = tracer().startSpan(`${method} ${provider}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': method,
        'gen_ai.system': provider,
        'gen_ai.request.model': model,
        'server.address': safeHost(input),
      },
    });
    const started = performance.now();
    const headers = plainHeaders(init.headers);
    const spanContext = trace.setSpan(context.active(), span);
    context.with(spanContext, () => injectTraceContext(headers));
    try {
      const res = await context.with(spanContext, () => inner(input, { ...init, headers }));
      const seconds = (performance.now() - started) / 1000;
      sample(sinks, provider, model, outcomeOf(res.status), seconds);
      span.setAttribute('http.response.status_code', res.status);
      if (res.status >= 400) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${res.status}` });
      return res;
    } catch (err) {
      const aborted = init.signal?.aborted === true;
      sample(sinks, provider, model, aborted ? 'aborted' : 'network', undefined);
      span.setStatus({ code: SpanStatusCode.ERROR, message: aborted ? 'aborted' : 'network error' });
      throw err;
    } finally {
      span.end();
    }
  };
}

/** observedFetch without a span: the same headers (trace context injected) and metrics. */
async function unspanned(
  inner: FetchFunction,
  provider: string,
  model: string,
  sinks: Sinks,
  input: Parameters<FetchFunction>[0],
  init: RequestInit,
): Promise<Response> {
  const started = performance.now();
  const headers = plainHeaders(init.headers);
  injectTraceContext(headers);
  try {
    const res = await inner(input, { ...init, headers });
    sample(sinks, provider, model, outcomeOf(res.status), (performance.now() - started) / 1000);
    return res;
  } catch (err) {
    sample(sinks, provider, model, init.signal?.aborted === true ? 'aborted' : 'network', undefined);
    throw err;
  }
}

function safeHost(input: unknown): string {
  try {
    return new URL(input instanceof Request ? input.url : String(input)).host;
  } catch {
    return 'unknown';
  }
}
