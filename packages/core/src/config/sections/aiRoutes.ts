import { z } from '../../lib/zod.js';
import { once } from '../../lib/once.js';

/** Public model names (routes, aliases): letters, digits, `_ . : -`, so bare vendor ids such as `gpt-4.1-nano` fit. */
export const MODEL_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;

/** How a route picks the order of its targets for one call (docs/ai.md#routes). */
export const ROUTE_STRATEGIES = ['weighted', 'least-busy', 'latency', 'usage', 'priority'] as const;
export type RouteStrategy = (typeof ROUTE_STRATEGIES)[number];

/** One deployment behind a route. */
export const routeTargetSchema = once(() =>
  z.strictObject({
    /** `provider/model`: a built-in or named provider (one named provider per key, region or replica). */
    model: z
      .string()
      .regex(/^[a-z][a-z0-9_-]*\/.+$/, 'a route target is provider/model')
      .max(300),
    /** Share of calls under `weighted` (and within a `priority` group). Default 1. */
    weight: z.number().positive().max(1_000_000).default(1),
    /** Requests per minute this target takes, counted across instances; at the limit it is skipped. */
    rpm: z.number().int().min(1).optional(),
    /** Tokens per minute (reported usage) this target takes, counted across instances. */
    tpm: z.number().int().min(1).optional(),
    /** `priority` strategy: lower groups are used first, while they have capacity. Default 0. */
    priority: z.number().int().min(0).max(1000).default(0),
  }),
);

/** `ai.routes.<name>`: one public model name served by several deployments. */
export const routeSchema = once(() =>
  z.strictObject({
    /** Default 'weighted'. */
    strategy: z.enum(ROUTE_STRATEGIES).default('weighted'),
    targets: z.array(routeTargetSchema()).min(1).max(50),
    /** Other targets of the route tried within one request after a retryable failure. Default 2. */
    retries: z.number().int().min(0).max(10).default(2),
    /** How long a target that failed (429, 5xx, timeout, connection) is skipped, in seconds; a 429's Retry-After wins. Default 30. */
    cooldownSec: z.number().min(0).max(3600).default(30),
  }),
);
export type RouteConfig = z.output<ReturnType<typeof routeSchema>>;
export type RouteTargetConfig = RouteConfig['targets'][number];

export const routesSchema = once(() =>
  z.record(z.string().regex(MODEL_NAME, 'route names use letters, digits, _ . : -'), routeSchema()).default({}),
);

/** `ai.cache`: exact-match response cache (docs/ai.md#response-cache). Off by default. */
export const responseCacheSchema = once(() =>
  z
    .strictObject({
      enabled: z.boolean().default(false),
      /** 'opt-out' (default): every call is cached unless it says `off`; 'opt-in': only calls that say `on`. */
      perRequest: z.enum(['opt-out', 'opt-in']).default('opt-out'),
      /** Who may be served an entry: 'user' (default: the same signed-in user), 'key' (the same API key), 'global' (anyone). */
      scope: z.enum(['user', 'key', 'global']).default('user'),
      /** Lifetime of an entry in seconds. Default 300. */
      ttlSec: z
        .number()
        .int()
        .min(1)
        .max(30 * 86_400)
        .default(300),
      /** Share of the original call's tokens a hit is charged. Default 0 (free). */
      chargeRatio: z.number().min(0).max(1).default(0),
      /** Largest answer stored, in bytes of its JSON. Default 256 KiB. */
      maxEntryBytes: z
        .number()
        .int()
        .min(256)
        .default(256 * 1024),
      /** Bytes of entries alive at once (bounded from above); past it, answers are not stored. Default 64 MiB. */
      maxTotalBytes: z
        .number()
        .int()
        .min(1024)
        .default(64 * 1024 * 1024),
    })
    .prefault({}),
);
export type ResponseCacheConfig = z.output<ReturnType<typeof responseCacheSchema>>;
