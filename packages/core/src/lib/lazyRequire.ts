import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS dependency loaded on its first use and kept. For libraries a default server does
 * not need at start (glob matching, IP parsing, Prometheus): loading them synchronously on first
 * use keeps the call sites synchronous while start-up time and idle memory do not pay for them
 * (docs/performance.md, "Cold start and idle memory").
 */
export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}
