import type { Storage } from '../kernel/Storage.js';
import type { Metrics } from './Metrics.js';
import { otel, SpanKind, SpanStatusCode, tracer, tracingActive } from './tracing.js';

/** Methods that are not storage operations worth a span or a latency sample. */
const SKIP = new Set(['close', 'constructor']);

/**
 * The store every service sees: each operation (get, set, increment, a transaction...) gets a
 * CLIENT span `storage.<operation>` and a latency sample, failures are counted. A proxy rather
 * than a wrapper class so every method of the backend (present or added later) is covered;
 * the operation label is the method name, a closed set.
 */
export function instrumentStorage<S extends Storage>(storage: S, metrics: Metrics | undefined): S {
  const backend = storage.kind;
  // Keyed by the method itself, not its name: a method replaced on the store later is wrapped anew.
  const wrapped = new WeakMap<object, unknown>();
  return new Proxy(storage, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string' || SKIP.has(prop)) return value;
      let fn = wrapped.get(value);
      if (!fn) {
        const original = value as (...args: unknown[]) => unknown;
        const operation = prop;
        fn = function (this: unknown, ...args: unknown[]) {
          // Tracing off (no SDK registered): the API's span would record nothing and only carry its
          // parent's context, so it and the context copy are skipped (several storage calls per AI call).
          const span = tracingActive()
            ? tracer().startSpan(`storage.${operation}`, {
                kind: SpanKind.CLIENT,
                attributes: { 'db.system': backend, 'db.operation.name': operation },
              })
            : undefined;
          const started = performance.now();
          const done = (failed: boolean, err?: unknown) => {
            metrics?.storage(backend, operation, (performance.now() - started) / 1000, failed);
            if (!span) return;
            if (failed)
              span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message.slice(0, 200) : 'failed' });
            span.end();
          };
          let out: unknown;
          try {
            if (span) {
              const { context, trace } = otel();
              out = context.with(trace.setSpan(context.active(), span), () => original.apply(target, args));
            } else out = original.apply(target, args);
          } catch (err) {
            done(true, err);
            throw err;
          }
          if (out instanceof Promise) {
            return out.then(
              (v) => {
                done(false);
                return v;
              },
              (err) => {
                done(true, err);
                throw err;
              },
            );
          }
          done(false);
          return out;
        };
        wrapped.set(value, fn);
      }
      return fn;
    },
  });
}
