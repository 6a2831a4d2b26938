import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';

const originList = () =>
  z
    .union([z.string(), z.array(z.string())])
    // Rule 2: a comma-separated string (e.g. CORS_ORIGIN) is split into a list.
    .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean));

export const CorsSchema = lazySection('cors', () =>
  z
    .strictObject({
      /** Allowed origins: '*' or a list. Default '*'. Functions are not supported (rule 8). */
      origin: originList().default(['*']),
      /** Send Access-Control-Allow-Credentials. Default false; refused together with '*'. */
      credentials: z.boolean().default(false),
    })
    .check((ctx) => {
      if (ctx.value.credentials && ctx.value.origin.includes('*')) {
        ctx.issues.push({
          code: 'custom',
          input: ctx.value,
          path: ['credentials'],
          message: "credentials true cannot be combined with origin '*' (browsers forbid it); list the origins",
        });
      }
    }),
);

export const ProtocolsSchema = lazySection('protocols', () =>
  z.strictObject({
    tRpc: z.boolean().default(true),
    jsonRpc: z.boolean().default(true),
    /** The OpenAI-compatible endpoint: POST /v1/chat/completions and GET /v1/models. Default true. */
    openAi: z.boolean().default(true),
  }),
);

export const TransportsSchema = lazySection('transports', () => z.strictObject({ http: z.boolean().default(true) }));

export const MonitoringSchema = lazySection('monitoring', () =>
  z.strictObject({
    logging: z
      .strictObject({
        level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'silent']).default('info'),
      })
      .prefault({}),
  }),
);

export const LimitsSchema = lazySection('limits', () =>
  z
    .strictObject({
      /**
       * Maximum request body in bytes on /trpc, /typedrpc, /rpc and /mcp (OAuth and webhook routes: at most 64 KiB). Default 1 MiB; larger
       * bodies get 413.
       */
      bodyLimit: z
        .number()
        .int()
        .min(1024)
        .default(1024 * 1024),
      /** Maximum JSON nesting depth accepted in a request body. Default 64. */
      maxJsonDepth: z.number().int().min(4).default(64),
      /** Maximum entries in a JSON-RPC batch. Default 100. */
      maxBatchSize: z.number().int().min(1).default(100),
      /** Time a client has to send the request headers, in ms (node `headersTimeout`). Default 20000. */
      headersTimeoutMs: z.number().int().min(1000).default(20_000),
      /** Time a client has to send the whole request, headers and body, in ms (node `requestTimeout`). Default 60000. */
      requestTimeoutMs: z.number().int().min(1000).default(60_000),
      /** Longest pause between two pieces of a request body, in ms; the connection is closed after it. Default 10000. */
      bodyIdleTimeoutMs: z.number().int().min(100).default(10_000),
      /**
       * Long-lived streams one client address may hold open, every kind counted together (MCP GET
       * streams, MCP POST answers streamed as SSE, MCP 2026 subscriptions/listen, /v1 streams, tRPC
       * streamed batches); more get 429 with Retry-After. Default 16.
       */
      maxSseStreamsPerClient: z.number().int().min(1).default(16),
      /** Long-lived streams one identity (subject) may hold open from any number of addresses; more get 429. Default 32. */
      maxSseStreamsPerIdentity: z.number().int().min(1).default(32),
      /**
       * Long-lived streams this server instance holds in all; more get 503 with Retry-After.
       * Default: a third of the process's open-file limit, read when the server is built (between
       * 32 and 4096; 1024 where the limit cannot be read), so streams never take the descriptors
       * /health, storage and other clients need (a stream of an AI answer holds two: the client's
       * socket and the upstream's).
       */
      maxSseStreams: z.number().int().min(1).optional(),
      /**
       * How often, in seconds, an open long-lived stream's credential is verified again (revoked,
       * expired, demoted: the stream is closed). An API key's change is seen at once. Default 30.
       */
      streamCredentialCheckSec: z.number().int().min(1).max(3600).default(30),
      /**
       * Connections this server instance accepts at once (node's `server.maxConnections`); more
       * are closed as they arrive, before a byte is read, and a warning is logged (at most every
       * 10 s). Default: half of the process's open-file limit, read when the server starts
       * (between 64 and 32768; 4096 where the limit cannot be read), so idle or slow connections
       * can never take the descriptors storage, upstreams and streams need.
       */
      maxConnections: z.number().int().min(1).optional(),
    })
    .check((ctx) => {
      // node refuses a headers timeout longer than the whole-request timeout.
      if (ctx.value.headersTimeoutMs > ctx.value.requestTimeoutMs) {
        ctx.issues.push({
          code: 'custom',
          input: ctx.value.headersTimeoutMs,
          path: ['headersTimeoutMs'],
          message: 'must not exceed limits.requestTimeoutMs',
        });
      }
    }),
);
