export { Metrics, BoundedLabel, createMetrics, type Payer } from './Metrics.js';
export { inRequestSpan, injectTraceContext, tracingActive } from './tracing.js';
export { instrumentStorage } from './instrumentStorage.js';
export { observedFetch } from './observedFetch.js';
export type { RecentCall } from './RecentCalls.js';
export { UpstreamStats, type UpstreamDay, type UpstreamRecord } from './UpstreamStats.js';
