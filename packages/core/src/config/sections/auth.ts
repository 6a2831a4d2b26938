import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';
import { once } from '../../lib/once.js';
import { RedisOptionsSchema } from './storage.js';

/** Server-level JWT (spec: `jwt`). */
export const JwtSchema = lazySection('jwt', () =>
  z.strictObject({
    /** HS256 shared secret; at least 32 bytes. */
    secret: z
      .string()
      .refine((s) => Buffer.byteLength(s) >= 32, 'must be at least 32 bytes')
      .optional(),
    issuer: z.string().optional(),
    audience: z.string().optional(),
    /** Allowed clock skew in seconds for exp/nbf/iat. Default 30. */
    clockToleranceSec: z.number().int().min(0).max(300).default(30),
  }),
);

const providerEndpointsSchema = once(() =>
  z.union([
    z.strictObject({ issuer: z.url(), scopes: z.array(z.string()).optional() }),
    z.strictObject({
      authorizationUrl: z.url(),
      tokenUrl: z.url(),
      userinfoUrl: z.url(),
      scopes: z.array(z.string()).optional(),
      /** How we authenticate at tokenUrl. Default 'client_secret_post' (accepted by GitHub and most providers). */
      tokenEndpointAuthMethod: z.enum(['client_secret_basic', 'client_secret_post']).optional(),
    }),
    z.strictObject({ preset: z.enum(['google', 'github']), scopes: z.array(z.string()).optional() }),
  ]),
);

/** The resolved `oauth.sessionStorage`: one store's options, chosen by `type`. */
const sessionStorageSchema = once(() =>
  z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('memory') }),
    z.strictObject({ type: z.literal('file'), filePath: z.string().optional() }),
    z.strictObject({ type: z.literal('redis'), redis: RedisOptionsSchema }),
  ]),
);

/** Server-level OAuth (spec: `oauth`). */
export const OAuthSchema = lazySection('oauth', () =>
  z.strictObject({
    enabled: z.boolean().optional(),
    providerClientId: z.string().optional(),
    providerClientSecret: z.string().optional(),
    provider: providerEndpointsSchema().optional(),
    encryptionKey: z.string().min(32, 'must be at least 32 characters').optional(),
    /**
     * Where OAuth sessions live when not in the main storage: a union by `type` like `storage`.
     * Today's shape (`filePath` and `redis` beside any type) is accepted; the resolved config keeps
     * `filePath` for 'file' and `redis` for 'redis' only.
     */
    sessionStorage: z
      .strictObject({
        type: z.enum(['memory', 'file', 'redis']),
        /** The embedded database of type 'file': a file, or a directory to hold `oauth.db`. Default `<storage.dir>/oauth.db`. */
        filePath: z.string().optional(),
        redis: z.custom<z.input<typeof RedisOptionsSchema>>().optional(),
      })
      .transform(
        ({ type, filePath, redis }): z.input<ReturnType<typeof sessionStorageSchema>> =>
          type === 'redis'
            ? { type, redis: redis ?? {} }
            : type === 'file'
              ? filePath === undefined
                ? { type }
                : { type, filePath }
              : { type },
      )
      .pipe(sessionStorageSchema())
      .optional(),
    /** Dynamic client registration policy. Default 'open'. */
    registration: z
      .strictObject({
        policy: z.enum(['open', 'token']).default('open'),
        initialAccessToken: z.string().optional(),
        /**
         * Private-use redirect URI schemes accepted besides https and loopback http
         * (RFC 8252 §7.1), e.g. ['cursor']. Default none. Schemes a browser runs or reads
         * locally (javascript, data, vbscript, file, blob, about) are never private-use schemes.
         */
        allowedCustomSchemes: z
          .array(
            z
              .string()
              .regex(/^[a-z][a-z0-9+.-]*$/)
              .refine((s) => !['javascript', 'data', 'vbscript', 'file', 'blob', 'about'].includes(s), {
                error: 'not a private-use scheme: a browser runs or reads it locally',
              }),
          )
          .default([]),
        /** A client that completes no authorization within this many seconds is removed. Default 86400 (1 day). */
        unusedClientTtlSec: z.number().int().min(60).default(86_400),
        /** A client that has been used lives this long after its last token, sliding. Default 7776000 (90 days). */
        clientTtlSec: z
          .number()
          .int()
          .min(3600)
          .default(90 * 86_400),
        /** Registrations per client address per day. Default 20. */
        maxPerAddressPerDay: z.number().int().min(1).default(20),
        /** Largest stored client record (its metadata as JSON), in bytes. Default 8192. */
        maxClientBytes: z.number().int().min(1024).default(8192),
      })
      .prefault({}),
    /**
     * Client ID Metadata Documents (MCP 2026-07-28, draft-ietf-oauth-client-id-metadata-document):
     * a client may use an https URL as its client_id; we fetch the JSON document there (SSRF
     * guarded, bounded in time and size, cached per its Cache-Control) instead of a registration.
     */
    clientIdMetadataDocuments: z
      .strictObject({
        enabled: z.boolean().default(true),
        /** Largest document accepted, in bytes. Default 5120 (the draft suggests 5 KB). */
        maxBytes: z.number().int().min(512).max(65_536).default(5120),
        /** Give up fetching a document after this many ms. Default 5000. */
        timeoutMs: z.number().int().min(100).max(30_000).default(5000),
        /** How long a document is cached when its response sets no max-age, in seconds. Default 300. */
        cacheTtlSec: z.number().int().min(0).default(300),
        /** Upper bound on caching whatever the response says, in seconds. Default 86400. */
        maxCacheTtlSec: z.number().int().min(0).default(86_400),
        /** Trust policy: when set, only client_id URLs on these hosts (exact, or `*.example.com`) are accepted. */
        allowedHosts: z.array(z.string().min(1)).optional(),
        /** Fetch from loopback and private addresses. Development and tests only: this is what SSRF means. Default false. */
        allowPrivateNetwork: z.boolean().default(false),
        /** Accept http:// client_id URLs. Development and tests only. Default false. */
        allowHttp: z.boolean().default(false),
      })
      .prefault({}),
    /**
     * Scope one of our access tokens needs to run procedures (MCP tools, prompts and resources
     * served by procedures); without it a call gets 403 insufficient_scope naming it, so clients
     * step up. Listing and config resources need only a valid token. Checked only while the scope
     * is in `scopesSupported`; null turns the check off. Default 'mcp:call'.
     */
    callScope: z
      .string()
      .regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/)
      .nullable()
      .default('mcp:call'),
    /** Scopes clients may request (scopes_supported). The admin scope is granted only to admin.users. */
    scopesSupported: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/)).default(['mcp', 'mcp:call']),
    /** Algorithm of our access-token signing key. Default 'ES256'. */
    signingAlg: z.enum(['ES256', 'RS256']).default('ES256'),
    /** Age in days after which the signing key is replaced; the old one stays published. Default 30. */
    signingKeyRotationDays: z.number().int().min(1).default(30),
    /** Authorization code lifetime in seconds. Default 60. */
    authCodeTtlSec: z.number().int().min(10).max(600).default(60),
    /** How long verifyAccessToken trusts a session it has seen, in ms (revocation delay). Default 5000. */
    sessionCacheMs: z.number().int().min(0).max(60_000).default(5000),
    /** Per client address and endpoint limits on /register, /oauth/*. Default 30 requests a minute. */
    rateLimit: z
      .strictObject({
        enabled: z.boolean().default(true),
        windowMs: z.number().int().min(1000).default(60_000),
        maxRequests: z.number().int().min(1).default(30),
      })
      .prefault({}),
    /** Access token lifetime in seconds. Default 3600. */
    accessTokenTtlSec: z.number().int().min(60).default(3600),
    /** Refresh token lifetime in seconds. Default 7 days. */
    refreshTokenTtlSec: z
      .number()
      .int()
      .min(300)
      .default(7 * 24 * 3600),
    /** Public base URL (e.g. https://api.example.com) when it cannot be derived from requests. */
    publicUrl: z.url().optional(),
  }),
);

/**
 * Keys the spec lists that ask for less checking than we do: only `true` (what we do anyway) is
 * accepted, and the key is dropped from the resolved config. `false` is refused, since honouring
 * it would weaken security and silently ignoring it would mislead.
 */
const alwaysOn = (instead: string) =>
  z
    .boolean()
    .optional()
    .refine(
      (v) => v !== false,
      `false is no longer accepted (the key is removed): ${instead}. Delete the key (true is accepted and ignored)`,
    );

/** Drop a key from a parsed object (the accepted-but-always-on flags above). */
function without<T extends object, K extends keyof T>(value: T, key: K): Omit<T, K> {
  const { [key]: _dropped, ...rest } = value;
  return rest;
}

/** `mcp.auth`: which credentials /mcp and the other entry points accept. */
const McpAuthSchema = lazySection(
  'mcp.auth',
  () =>
    z.strictObject({
      authType: z.enum(['oauth', 'jwt', 'both', 'none']).default('oauth'),
      oauth: z
        .strictObject({
          /** Accept our OAuth access tokens. Default: on unless authType is 'jwt' (resolved into `auth.verifiers`). */
          enabled: z.boolean().optional(),
          /** Directory of a file-backed OAuth session store: the same as `oauth.sessionStorage: { type: 'file', filePath }`. */
          sessionStorePath: z.string().min(1).optional(),
          requireValidSession: alwaysOn(
            'an OAuth access token is accepted only while its session exists; to bound how long a revoked session keeps working use oauth.sessionCacheMs',
          ),
        })
        .prefault({})
        .transform((o) => without(o, 'requireValidSession')),
      jwt: z
        .strictObject({
          /** Accept HS256 tokens signed with `jwt.secret`. Default: on unless authType is 'oauth' (resolved into `auth.verifiers`). */
          enabled: z.boolean().optional(),
          requireValidSignature: alwaysOn('JWT signatures are always verified (allowExpiredTokens relaxes expiry only)'),
          requiredScopes: z.array(z.string()).default([]),
          allowExpiredTokens: z.boolean().default(false),
        })
        .prefault({})
        .transform((j) => without(j, 'requireValidSignature')),
      requireAuthForToolsList: z.boolean().default(false),
      requireAuthForToolsCall: z.boolean().default(true),
      publicTools: z.array(z.string()).default([]),
    }),
  // The tri-state `enabled` flags stay as written here: resolveAuth decides them once, with
  // `jwt.secret` and the OAuth server, into `auth.verifiers`, and the resolved config drops them.
);

export const McpSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    auth: McpAuthSchema,
    /**
     * Per-caller limits (the signed-in subject, else the client address), counted in fixed
     * windows in the shared store. On by default (docs/security.md#rate-limits): generous enough
     * for an interactive client or an agent, low enough that one caller cannot flood the server.
     */
    rateLimiting: lazySection('mcp.rateLimiting', () =>
      z.strictObject({
        /** Default true. */
        enabled: z.boolean().default(true),
        /** Window length in ms. Default 60000 (one minute). */
        windowMs: z.number().int().min(100).default(60_000),
        /** /mcp requests per caller and window. Default 300. */
        maxRequests: z.number().int().min(1).default(300),
        /**
         * Tool calls per caller and window, on every entry point (an MCP tools/call, or a tool procedure over /trpc, /rpc or /v1). Default
         * 120.
         */
        maxToolCalls: z.number().int().min(1).default(120),
      }),
    ),
    securityLogging: lazySection('mcp.securityLogging', () =>
      z.strictObject({
        enabled: z.boolean().default(true),
        logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('warn'),
        logToFile: z.boolean().default(false),
        logFilePath: z.string().optional(),
        /**
         * Size at which the file is rotated (renamed `<file>.1`, older ones shifted): a flood of
         * refusals never fills the disk. Default 64 MiB.
         */
        maxFileBytes: z
          .number()
          .int()
          .min(64 * 1024)
          .default(64 * 1024 * 1024),
        /** Rotated files kept beside the live one (`<file>.1` … `<file>.N`); the oldest is dropped. Default 5. */
        maxFiles: z.number().int().min(1).max(100).default(5),
      }),
    ),
    /**
     * Operator override of the MCP access rules: `{ enabled: true, requireAuth: false }` lifts
     * requireAuthForToolsList/requireAuthForToolsCall (resolved once into `auth.mcpAccessRulesActive`).
     */
    authEnforcement: lazySection('mcp.authEnforcement', () =>
      z
        .strictObject({
          enabled: z.boolean().default(true),
          requireAuth: z.boolean().default(true),
          requireValidSession: alwaysOn(
            'an OAuth access token is accepted only while its session exists; to bound how long a revoked session keeps working use oauth.sessionCacheMs',
          ),
        })
        .transform((e) => without(e, 'requireValidSession')),
    ),
    /**
     * Resource budgets of /mcp (docs/security.md#resource-budgets): how many sessions one client
     * address or identity may hold, how long sessions that never finish initializing or stay
     * anonymous and idle live, and how much the resumability event stores may keep.
     */
    budgets: lazySection('mcp.budgets', () =>
      z.strictObject({
        /** Open anonymous sessions per client address (signed-in sessions count per identity instead). Default 50. */
        sessionsPerAddress: z.number().int().min(1).default(50),
        /** Open sessions per identity. Default 20. */
        sessionsPerIdentity: z.number().int().min(1).default(20),
        /** Anonymous sessions in all; the rest of the session cap stays for signed-in clients. Default 1000. */
        maxAnonymousSessions: z.number().int().min(0).default(1000),
        /** A session whose client never sends notifications/initialized is closed after this many ms. Default 30000. */
        uninitializedTtlMs: z.number().int().min(1000).default(30_000),
        /** An anonymous session idle this long is closed (signed-in ones follow the general idle time). Default 300000 (5 min). */
        anonymousIdleMs: z.number().int().min(1000).default(300_000),
        eventStore: z
          .strictObject({
            /** Largest event kept for replay, in bytes (JSON); bigger ones are sent but not resumable. Default 262144 (256 KiB). */
            maxEventBytes: z
              .number()
              .int()
              .min(1024)
              .default(256 * 1024),
            /** Bytes kept per session; oldest events are evicted first. Default 1048576 (1 MiB). */
            sessionBytes: z
              .number()
              .int()
              .min(1024)
              .default(1024 * 1024),
            /** Events kept per stream; oldest evicted first. Default 200. */
            maxEventsPerStream: z.number().int().min(1).default(200),
            /** Bytes kept by all sessions together (memory: exact, oldest first; storage: per ttl window). Default 67108864 (64 MiB). */
            totalBytes: z
              .number()
              .int()
              .min(64 * 1024)
              .default(64 * 1024 * 1024),
            /** How long an event stays replayable, in ms (the resumability window). Default 600000 (10 min). */
            ttlMs: z.number().int().min(1000).default(600_000),
            /** A store call slower than this is abandoned: the message goes out without resumability. Default 250. */
            timeoutMs: z.number().int().min(10).max(5000).default(250),
          })
          .prefault({}),
      }),
    ),
    /** Stateful sessions (default) or stateless mode for horizontally scaled deployments. */
    sessionMode: z.enum(['stateful', 'stateless']).default('stateful'),
    /**
     * How POST requests are answered: 'sse' streams (default when stateful: progress, logs,
     * sampling and elicitation travel on them) or single 'json' bodies (default when stateless;
     * faster, but a tool cannot send anything before its result).
     */
    responseMode: z.enum(['sse', 'json']).optional(),
    /** Stateful MCP sessions (sessionMode 'stateful'). */
    sessions: lazySection('mcp.sessions', () =>
      z.strictObject({
        /** Idle sessions are closed after this many ms. Default 30 minutes. */
        idleTimeoutMs: z
          .number()
          .int()
          .min(1000)
          .default(30 * 60_000),
        /** Upper bound on concurrent sessions; at the cap the least recently used idle one is closed, else more get 503. Default 10000. */
        maxSessions: z.number().int().min(1).default(10_000),
        /**
         * A session with nothing running or open is parked (transport and server closed, rebuilt on its next request) after this many ms
         * without a request. Default 60000.
         */
        parkIdleMs: z.number().int().min(1000).default(60_000),
        /** Live (unparked) sessions kept at most; beyond it the least recently used idle ones are parked at once. Default 256. */
        maxLiveSessions: z.number().int().min(0).default(256),
        /**
         * Resumability (Last-Event-ID) of SSE streams: 'memory' (per session, bounded), 'storage'
         * (core storage, so events outlive the process and other instances can replay them) or
         * 'none'. Default: 'storage' when storage.type is 'redis', else 'memory'.
         */
        eventStore: z.enum(['memory', 'storage', 'none']).optional(),
        /** The SSE `retry` hint in priming events, in ms. Default 1000. */
        retryIntervalMs: z.number().int().min(0).default(1000),
      }),
    ),
    /**
     * Hosts allowed on every route (DNS-rebinding protection; the name predates that). Default: loopback names when bound to loopback, any
     * otherwise.
     */
    allowedHosts: z.array(z.string()).optional(),
    /** Browser origins allowed on every route besides the server's own origin and an explicit cors.origin list (see docs/security.md). */
    allowedOrigins: z.array(z.string()).optional(),
  })
  .prefault({});

/** Administrators: identities (by email or sub) that may call admin-only procedures. */
export const AdminSchema = lazySection('admin', () =>
  z.strictObject({
    users: z.array(z.string()).default([]),
    /** Scope that makes a token an administrator. Default 'mcp:admin'. */
    scope: z.string().default('mcp:admin'),
  }),
);
