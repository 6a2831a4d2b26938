import { z } from 'zod';

/** `apiDescription`: the OpenRPC (/openrpc.json, rpc.discover) and OpenAPI (/openapi.json) documents. */
export const ApiDescriptionSchema = z
  .strictObject({
    /** Serve the documents. Default true: they describe procedures, never data or secrets. */
    enabled: z.boolean().default(true),
    /** `info.title` of both documents. Default 'ai-backend'. */
    title: z.string().min(1).max(200).default('ai-backend'),
    /** `info.version` of both documents (the version of your API, not of ai-backend). Default '1.0.0'. */
    version: z.string().min(1).max(50).default('1.0.0'),
  })
  .prefault({});

/** `metrics`: Prometheus exposition of the server's counters and histograms. */
export const MetricsSchema = z
  .strictObject({
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
  })
  .prefault({});

/** `statistics`: the per-day request statistics kept in the store (admin.statistics). */
export const StatisticsSchema = z
  .strictObject({
    /** Keep statistics in the store. Default true. */
    enabled: z.boolean().default(true),
    /** How often each instance adds its counts to the store, in ms. Default 5000. */
    flushIntervalMs: z.number().int().min(100).max(600_000).default(5000),
    /** Days of statistics kept; older days expire. Default 90. */
    retentionDays: z.number().int().min(1).max(3650).default(90),
  })
  .prefault({});
