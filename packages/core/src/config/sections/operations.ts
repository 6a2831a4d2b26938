import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';

/** `apiDescription`: the OpenRPC (/openrpc.json, rpc.discover) and OpenAPI (/openapi.json) documents. */
export const ApiDescriptionSchema = lazySection('apiDescription', () =>
  z.strictObject({
    /** Serve the documents. Default true: they describe procedures, never data or secrets. */
    enabled: z.boolean().default(true),
    /** `info.title` of both documents. Default 'ai-backend'. */
    title: z.string().min(1).max(200).default('ai-backend'),
    /** `info.version` of both documents (the version of your API, not of ai-backend). Default '1.0.0'. */
    version: z.string().min(1).max(50).default('1.0.0'),
  }),
);

/** `console`: the web console at /console (static assets served by the server itself). */
export const ConsoleSchema = lazySection('console', () =>
  z.strictObject({
    /**
     * Serve the console. Default true: its pages hold no data; every figure comes from the same
     * procedures (and the same access policy) as curl would use.
     */
    enabled: z.boolean().default(true),
  }),
);

/** `metrics`: Prometheus exposition of the server's counters and histograms. */
export const MetricsSchema = lazySection('metrics', () =>
  z.strictObject({
    /** Record metrics and serve them. Default true. */
    enabled: z.boolean().default(true),
    /**
     * Serve GET /metrics on the main listener to administrators (Authorization: Bearer <admin token>).
     * Default true.
     */
    adminRoute: z.boolean().default(true),
    /**
     * Also serve /metrics without authentication on a separate listener bound to `metrics.host`
     * (for a Prometheus scraper on the same machine or pod). Default: no separate listener.
     */
    port: z.number().int().min(0).max(65535).optional(),
    /** Address of the separate listener. Default 127.0.0.1 (loopback only). */
    host: z.string().default('127.0.0.1'),
    /** Also collect Node.js process metrics (event loop lag, heap, GC). Default true. */
    processMetrics: z.boolean().default(true),
  }),
);

/** `statistics`: the per-day request statistics kept in the store (admin.statistics). */
export const StatisticsSchema = lazySection('statistics', () =>
  z.strictObject({
    /** Keep statistics in the store. Default true. */
    enabled: z.boolean().default(true),
    /** How often each instance adds its counts to the store, in ms. Default 5000. */
    flushIntervalMs: z.number().int().min(100).max(600_000).default(5000),
    /** Days of statistics kept; older days expire. Default 90. */
    retentionDays: z.number().int().min(1).max(3650).default(90),
  }),
);

/** Events an alert webhook can receive. */
export const ALERT_EVENTS = [
  'tokenLow',
  'fallbackToByok',
  'oneTimeConsumed',
  'providerDegraded',
  'budgetThreshold',
  'budgetExceeded',
] as const;

/** `alerts`: signed outbound webhooks for operator events, through an outbox in the store. */
export const AlertsSchema = lazySection('alerts', () =>
  z.strictObject({
    /** Receivers; each gets every event it subscribes to. Default none (alerts off). */
    webhooks: z
      .array(
        z.strictObject({
          /** http(s) URL the event is POSTed to. */
          url: z.url({ protocol: /^https?$/ }),
          /** HMAC-SHA256 key for the signature header; at least 32 characters. */
          secret: z.string().min(32),
          /** Events sent to this receiver. Default: all. */
          events: z.array(z.enum(ALERT_EVENTS)).optional(),
        }),
      )
      .default([]),
    /** Delivery attempts before an alert is moved to the dead-letter list. Default 8. */
    maxAttempts: z.number().int().min(1).max(50).default(8),
    /**
     * Dead letters kept in the store; past it the oldest are dropped (counted in
     * `ai_backend_alerts_total{outcome="dropped"}` and `admin.overview`'s alert backlog). Default 1000.
     */
    maxDeadLetters: z.number().int().min(1).max(100_000).default(1000),
    /** First retry delay in ms; doubles per attempt (with jitter) up to retryMaxMs. Default 1000. */
    retryBaseMs: z.number().int().min(10).default(1000),
    /** Longest retry delay in ms. Default 300000 (5 minutes). */
    retryMaxMs: z.number().int().min(10).default(300_000),
    /** How often the outbox is scanned for due alerts, in ms. Default 1000. */
    pollIntervalMs: z.number().int().min(10).max(60_000).default(1000),
    /** Timeout of one delivery attempt in ms. Default 10000. */
    timeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  }),
);
