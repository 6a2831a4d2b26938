import { Hono, type Handler } from 'hono';
import type { ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import {
  createAppRouter,
  createLogger,
  isLoopbackHost,
  createRuntime,
  entryGateway,
  type EntryGateway,
  loadRouter,
  resolveConfig,
  type AppRouterWith,
  type ConfigInput,
  type CustomRouters,
  type Logger,
  type ResolvedConfig,
  type Runtime,
  servicesOf,
  authenticateRequest,
  type RequestAuthenticator,
  type AiBackendServices,
  type PurchaseWebhookDeps,
  type Storage,
} from '@ai-backend/core/internal';
import { createAuthenticator, mintDevToken, type OAuthTokenVerifier } from '@ai-backend/auth';
import type { OAuthRoutes } from '@ai-backend/auth/oauth';
import { bodyLimit } from './edge/bodyLimit.js';
import { createBrowserGuard, type GuardedRoute } from './edge/browserGuard.js';
import { apiDescriptionRoutes } from './routes/apiDescriptionRoutes.js';
import { consoleRoutes } from './routes/consoleRoutes.js';
import { cors } from './edge/cors.js';
import { adminMetricsHandler, metricsListenerApp, type MetricsServices } from './routes/metricsRoute.js';
import { entryOf, observeRequests } from './edge/observeRequests.js';
import { healthRoutes, type HealthServices } from './routes/healthRoutes.js';
import { jwtResourceMetadataHandler } from './routes/jwtResourceMetadata.js';
import { purchaseWebhookHandler } from './routes/purchaseWebhookRoute.js';
import { gatewayOAuthRoutes, type GatewayOAuthServices } from './routes/gatewayOAuthRoutes.js';
import { enforceBodyIdleTimeout, timeoutServerOptions } from './edge/nodeTimeouts.js';
import { limitConnections } from './edge/connectionLimit.js';
import { lingerOnClose } from './edge/lingeringClose.js';
import { requestOrigin } from './edge/requestFacts.js';
import { StreamAdmission, streamCapsOf } from './edge/StreamAdmission.js';
import { jsonRpcHandler } from './jsonrpc/jsonRpcHandler.js';
import type { McpHandler } from './mcp/mcpHandler.js';
import { mcpSessionOptions } from './mcp/createMcpHandler.js';
import { mcpServices } from './mcp/mcpServices.js';
import { checkToolNames } from './mcp/toolCatalog.js';
import { trpcHandler } from './trpc/trpcHandler.js';

/** The /v1 handlers, imported on the first /v1 request. */
type V1Handlers = typeof import('./v1/v1Handlers.js');

export interface CreateServerOptions {
  /** Use this storage instead of opening the configured backend. */
  storage?: Storage;
  logger?: Logger;
  /** Time stop() waits for in-flight requests before closing connections. Default 10000 ms. */
  shutdownTimeoutMs?: number;
  /** The clock the rate limits' fixed windows (and routes' minutes) are read from (tests). Default Date.now. */
  clock?: () => number;
  /**
   * `serve --dev`: a console link that signs the developer in as an administrator. The code is
   * exchanged (from loopback only, and only on a loopback-bound server) for a short-lived admin
   * JWT signed with `jwt.secret`, which must be set. Never use it on a shared server.
   */
  consoleDevSignIn?: ConsoleDevSignIn;
}

/** A developer sign-in for the console (see CreateServerOptions.consoleDevSignIn). */
export interface ConsoleDevSignIn {
  /** The secret code in the printed link (at least 32 characters). */
  code: string;
  /** Subject of the minted token. Default 'developer'. */
  sub?: string;
}

export interface BoundAddress {
  host: string;
  port: number;
  url: string;
}

export interface AiBackendServer<TRouter = AppRouterWith<{}>> {
  /** The Hono app: mount it in another Hono app. */
  readonly app: Hono;
  /**
   * The app router (built-in namespaces plus customRouters). Its type is what a tRPC client is
   * typed with: `createTRPCClient<typeof server.router>(...)` sees the custom namespaces.
   */
  readonly router: TRouter;
  /**
   * The app as a fetch handler (Bun, Deno, workers with Node built-ins such as node:crypto). It does
   * not load the Node HTTP adapter (@hono/node-server); only start() does.
   */
  readonly fetch: (req: Request) => Promise<Response>;
  readonly config: ResolvedConfig;
  /**
   * Resolves once storage is open and services are built, to what an embedder uses of the server:
   * its storage and the MCP prompt and resource registries (AiBackendServices, docs/mcp.md).
   */
  ready(): Promise<AiBackendServices>;
  /** Listen on config.host:config.port (port 0 picks a free one). */
  start(): Promise<BoundAddress>;
  /** Stop accepting, finish in-flight requests, close MCP sessions and stores. */
  stop(): Promise<void>;
  /** The separate metrics listener's address (`metrics.port`), once start() resolved. */
  metricsAddress(): BoundAddress | undefined;
}

/** Compare two strings in time independent of where they differ. */
function timingSafeEqualText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Body limit of the OAuth and webhook routes (their bodies are small forms and events). */
const SMALL_BODY_LIMIT = 64 * 1024;

/** Paths served by the OAuth authorization server. */
const OAUTH_PATHS = [
  '/.well-known/oauth-authorization-server',
  '/.well-known/oauth-authorization-server/*',
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/*',
  '/.well-known/jwks.json',
  '/register',
  '/oauth/*',
];

/**
 * Build the HTTP server for a config. Validation happens here, synchronously: an invalid
 * config throws ConfigError and nothing half-works. Storage opens in the background;
 * requests wait for it.
 */
export function createServer<C extends CustomRouters = {}>(
  input: (ConfigInput & { customRouters?: C }) | ResolvedConfig = {},
  opts: CreateServerOptions = {},
): AiBackendServer<AppRouterWith<C>> {
  // Every cross-field rule (OAuth completeness, no unauthenticated public bind) is in the schema.
  const config = resolveConfig(input);
  const appRouter = createAppRouter(config.customRouters as C);
  // Whether the OAuth authorization server runs is decided once, in the config (config.auth).
  const withOAuth = config.auth.oauthServer === 'running';
  const devSignIn = opts.consoleDevSignIn;
  if (devSignIn) {
    if (devSignIn.code.length < 32) throw new TypeError('consoleDevSignIn.code must be at least 32 characters');
    if (!config.jwt.secret) throw new TypeError('consoleDevSignIn needs jwt.secret (the minted token is a JWT)');
    if (!isLoopbackHost(config.host)) throw new TypeError('consoleDevSignIn is only for a server bound to loopback');
  }

  const mcpOn = config.mcp.enabled && config.transports.http;
  // One admission for every long-lived response of this server, whatever its entry point.
  const streams = new StreamAdmission(streamCapsOf(config.limits));
  /** The MCP layer (the SDK is a large module graph) loads on the first /mcp request. */
  let mcpLoading: Promise<McpHandler> | undefined;
  const getMcp = () =>
    (mcpLoading ??= Promise.all([getApiRuntime(), getGateway(), import('./mcp/mcpHandler.js')]).then(([runtime, entry, { McpHandler }]) => {
      // The gateway every entry point gets, plus the few services MCP uses (mcpServices.ts): not the runtime.
      const mcp = new McpHandler({ entry, services: mcpServices(runtime) }, { streams, ...mcpSessionOptions(config) });
      runtime.metrics?.setMcpSources(
        () => mcp.sessionCount,
        () => mcp.streamCount,
      );
      return mcp;
    }));
  const closeMcp = async () => (mcpLoading ? (await mcpLoading.catch(() => undefined))?.close() : undefined);
  let oauth: OAuthRoutes | undefined;
  let readyRuntime: Runtime | undefined;
  // One logger for the runtime and for errors caught at the HTTP layer.
  const logger = opts.logger ?? createLogger(config.monitoring.logging.level);
  // The token verifier is built inside the composition root: our own OAuth server's verifier
  // needs the store and services the runtime opens.
  const authenticator = async (runtime: Runtime) => {
    if (withOAuth) {
      const { createOAuthRoutes } = await import('@ai-backend/auth/oauth');
      const { config, logger, storage, signals } = runtime;
      const routes = createOAuthRoutes({ config, logger, storage, signals });
      oauth = routes;
      runtime.onClose(() => routes.close());
      await routes.ready();
    }
    const oauthVerifier: OAuthTokenVerifier | undefined = oauth && ((token, opts) => oauth!.verifyAccessToken(token, opts));
    const verifier = createAuthenticator(config, { logger: runtime.logger, oauthVerifier });
    runtime.caches.set('tokens', () => verifier.clearCache());
    return verifier;
  };
  const runtimePromise = createRuntime(config, {
    storage: opts.storage,
    logger,
    router: appRouter,
    authenticator,
    lazyRouter: true,
    clock: opts.clock,
  }).then((runtime) => {
    if (mcpOn) checkToolNames(runtime.router); // a tool-name clash fails start-up
    readyRuntime = runtime;
    return runtime;
  });
  // Surface start-up failures through ready()/start(), not as an unhandled rejection.
  runtimePromise.catch(() => undefined);
  /** The runtime, here in the composition root only: each route gets what it uses, picked below. */
  const getRuntime = () => runtimePromise;
  /** What one route gets of the runtime, picked once on first use (the route's file sees no more). */
  const picked = <T>(pick: (runtime: Runtime) => T, from: () => Promise<Runtime> = getRuntime): (() => Promise<T>) => {
    let made: Promise<T> | undefined;
    return () => (made ??= from().then(pick));
  };
  // Their credential is verified as an entry point's is, and counted against an API key's limits.
  const requestAuthenticator =
    (r: Runtime, route: 'health' | 'metrics'): RequestAuthenticator =>
    (token, facts) =>
      authenticateRequest(r, token, facts, route);
  const getHealth = picked((r): HealthServices => ({ health: r.health, authenticate: requestAuthenticator(r, 'health') }));
  const getMetrics = picked((r): MetricsServices => ({ metrics: r.metrics, authenticate: requestAuthenticator(r, 'metrics') }));
  const getGatewayOAuth = picked(
    (r): GatewayOAuthServices => ({ upstreamCredentials: r.upstreamCredentials, config: r.config, logger: r.logger }),
  );
  /**
   * The runtime with every namespace built: for the entry points, which read the procedures. The
   * lazy built-in namespaces load on the first API request, not at start-up
   * (docs/architecture.md#lazy-namespaces). One promise, so a request awaits it once.
   */
  let apiRuntime: Promise<Runtime> | undefined;
  const getApiRuntime = () => (apiRuntime ??= runtimePromise.then((runtime) => loadRouter(runtime.router).then(() => runtime)));
  /** What the entry points get of it: the router, config, logger and request scopes (core's EntryGateway), not the runtime. */
  let apiGateway: Promise<EntryGateway> | undefined;
  const getGateway = () => (apiGateway ??= getApiRuntime().then(entryGateway));

  const app = new Hono();
  app.use(
    '*',
    observeRequests(() => readyRuntime),
  );
  // The HTTP edge, before CORS (a refused preflight must not be answered): origin, host and
  // content type, then body limits, on every route that acts.
  const guard = createBrowserGuard(config);
  const { limits } = config;
  const guarded = (route: GuardedRoute, limit: number, trpcDepth?: number) =>
    guard(route, bodyLimit({ family: route.family, limit, idleMs: limits.bodyIdleTimeoutMs, trpcDepth }));
  const edge = (path: string, route: GuardedRoute, limit: number, trpcDepth?: number) => app.use(path, guarded(route, limit, trpcDepth));
  if (config.protocols.tRpc) {
    for (const path of ['/trpc/*', '/typedrpc/*'])
      edge(path, { family: 'trpc', api: true, jsonOnly: true }, limits.bodyLimit, limits.maxJsonDepth);
  }
  if (config.protocols.jsonRpc) edge('/rpc', { family: 'jsonrpc', api: true, jsonOnly: true }, limits.bodyLimit);
  if (config.protocols.openAi) {
    // /v1 speaks two vendors' formats: each refusal in the shape of the client that sent the request.
    const openai = guarded({ family: 'openai', api: true, jsonOnly: true }, limits.bodyLimit);
    const anthropic = guarded({ family: 'anthropic', api: true, jsonOnly: true }, limits.bodyLimit);
    app.use('/v1/*', (c, next) => (entryOf(c.req.path) === 'anthropic' ? anthropic : openai)(c, next));
  }
  if (mcpOn) {
    edge('/mcp', { family: 'jsonrpc', api: true, jsonOnly: true }, limits.bodyLimit);
  }
  if (withOAuth)
    for (const path of ['/register', '/oauth/*'])
      edge(path, { family: 'oauth', api: false, jsonOnly: false }, Math.min(limits.bodyLimit, SMALL_BODY_LIMIT));
  if (config.console.enabled && config.protocols.jsonRpc && devSignIn)
    edge('/console/dev-session', { family: 'plain', api: true, jsonOnly: true }, SMALL_BODY_LIMIT);
  if (config.billing.webhookSecret)
    edge('/webhooks/purchase', { family: 'plain', api: false, jsonOnly: false }, Math.min(limits.bodyLimit, SMALL_BODY_LIMIT));
  app.use(
    '*',
    cors(config.cors, (req) => requestOrigin(req, config.trustProxy)),
  );
  app.onError((err, c) => {
    logger.error('unhandled error', { path: c.req.path, error: err.message });
    return c.json({ error: 'internal error' }, 500);
  });
  app.notFound((c) => c.json({ error: 'not found' }, 404));
  app.route('/', healthRoutes(getHealth, config.trustProxy));
  // The console calls procedures over /rpc: without the JSON-RPC entry point it has nothing to call.
  if (config.console.enabled && config.protocols.jsonRpc) {
    const exchange =
      devSignIn &&
      (async (code: string) => {
        if (!timingSafeEqualText(code, devSignIn.code)) return undefined;
        return mintDevToken({
          secret: config.jwt.secret!,
          sub: devSignIn.sub ?? 'developer',
          scopes: [config.admin.scope],
          expiresIn: '8h',
          issuer: config.jwt.issuer,
          audience: config.jwt.audience,
        });
      });
    app.route('/', consoleRoutes(config, exchange ? { devSignIn: exchange } : {}));
  }
  if (config.apiDescription.enabled)
    app.route('/', apiDescriptionRoutes(getGateway, { openrpc: config.protocols.jsonRpc, openapi: config.protocols.tRpc }));

  if (withOAuth) {
    for (const path of OAUTH_PATHS) {
      app.all(path, async (c) => {
        await getRuntime();
        return oauth!.app.fetch(c.req.raw, c.env);
      });
    }
  } else if (config.auth.mode !== 'none') {
    const prm = jwtResourceMetadataHandler(config);
    app.get('/.well-known/oauth-protected-resource', prm);
    app.get('/.well-known/oauth-protected-resource/*', prm);
  }
  if (config.metrics.enabled && config.metrics.adminRoute) app.get('/metrics', adminMetricsHandler(getMetrics, config.trustProxy));
  if (config.protocols.tRpc) {
    app.all('/trpc/*', trpcHandler(getGateway, '/trpc', streams));
    app.all('/typedrpc/*', trpcHandler(getGateway, '/typedrpc', streams));
  }
  if (config.protocols.jsonRpc) app.post('/rpc', jsonRpcHandler(getGateway));
  /** The /v1 wire formats' handlers, loaded once (first /v1 request or the warm start). */
  let v1: Promise<V1Handlers> | undefined;
  if (config.protocols.openAi) {
    // The wire formats' code loads on the first /v1 request (v1Handlers.ts), or at the warm start after listen.
    const v1Route = (pick: (m: V1Handlers) => Handler): Handler => {
      let handler: Promise<Handler> | undefined;
      return async (c, next) => (await (handler ??= (v1 ??= import('./v1/v1Handlers.js')).then(pick)))(c, next);
    };
    app.post(
      '/v1/chat/completions',
      v1Route((m) => m.chatCompletionsHandler(getGateway, streams)),
    );
    // Anthropic's Messages API on the same /v1 (the Anthropic SDK and Claude Code's ANTHROPIC_BASE_URL).
    app.post(
      '/v1/messages',
      v1Route((m) => m.messagesHandler(getGateway, streams)),
    );
    app.post(
      '/v1/messages/count_tokens',
      v1Route((m) => m.countTokensHandler(getGateway)),
    );
    app.post(
      '/v1/responses',
      v1Route((m) => m.responsesHandler(getGateway, streams)),
    );
    app.post(
      '/v1/embeddings',
      v1Route((m) => m.embeddingsHandler(getGateway)),
    );
    app.get(
      '/v1/models',
      v1Route((m) => m.modelsHandler(getGateway)),
    );
    app.get(
      '/v1/models/*',
      v1Route((m) => m.modelHandler(getGateway)),
    );
    app.all(
      '/v1/*',
      v1Route((m) => m.v1NotFound()),
    );
  }
  if (config.billing.webhookSecret)
    app.post(
      '/webhooks/purchase',
      purchaseWebhookHandler(picked(({ config, billing, logger }): PurchaseWebhookDeps => ({ config, billing, logger }), getApiRuntime)),
    );
  // The OAuth client side of the MCP gateway: only with upstream servers configured.
  if (Object.keys(config.mcpServers).length) app.route('/', gatewayOAuthRoutes(getGatewayOAuth));
  if (mcpOn) {
    app.all('/mcp', async (c, next) => {
      const mcp = await getMcp();
      return mcp.handle(c, next);
    });
  }

  let http: ServerType | undefined;
  let metricsHttp: ServerType | undefined;
  let metricsBound: BoundAddress | undefined;
  let stopping: Promise<void> | undefined;
  const lingerings = new Map<ServerType, { closeLingering(): void }>();
  const listen = (
    fetch: (req: Request) => Response | Promise<Response>,
    port: number,
    hostname: string,
    onServer: (s: ServerType) => void,
  ) =>
    // Loaded here, not at the top: server.fetch must work in fetch runtimes without the Node adapter.
    Promise.all([import('@hono/node-server'), import('./edge/StreamHeadResponse.js')]).then(
      ([{ serve }, { StreamHeadResponse }]) =>
        new Promise<BoundAddress>((resolve, reject) => {
          const server = serve(
            { fetch, port, hostname, serverOptions: { ...timeoutServerOptions(limits), ServerResponse: StreamHeadResponse } },
            (info: AddressInfo) => {
              const host = info.address.includes(':') ? `[${info.address}]` : info.address;
              resolve({ host: info.address, port: info.port, url: `http://${host}:${info.port}` });
            },
          );
          server.once('error', reject);
          enforceBodyIdleTimeout(server as HttpServer, limits.bodyIdleTimeoutMs);
          limitConnections(server as HttpServer, limits.maxConnections, (msg, fields) => logger.warn(msg, fields));
          lingerings.set(server, lingerOnClose(server as HttpServer));
          onServer(server);
        }),
    );

  /**
   * What the first calls would load, loaded after listen, off the request path (docs/operations.md,
   * "Warm start"): on a server that pays for a provider, the AI SDK with the packages of the
   * providers it pays for and the /v1 wire formats' handlers. Imports only, once each (a call that comes first shares the same loading);
   * a failure is logged and left to the first call, which loads what it needs as before.
   */
  const warmStart = async () => {
    const started = performance.now();
    try {
      const runtime = await getRuntime();
      // Only a server that pays for a provider (ProviderRegistry.prewarm): a default one stays lean.
      if (!(await runtime.ai.providers.prewarm())) return;
      if (config.protocols.openAi) await (v1 ??= import('./v1/v1Handlers.js'));
      logger.debug('warm start: AI modules loaded', { ms: Math.round(performance.now() - started) });
    } catch (err) {
      logger.warn('warm start failed; the first calls load what they need', { error: err instanceof Error ? err.message : String(err) });
    }
  };

  return {
    app,
    router: appRouter,
    fetch: (req) => Promise.resolve(app.fetch(req)),
    config,
    ready: () => getApiRuntime().then(servicesOf),
    async start() {
      await getRuntime();
      if (config.metrics.enabled && config.metrics.port !== undefined) {
        metricsBound = await listen(
          metricsListenerApp(getMetrics).fetch,
          config.metrics.port,
          config.metrics.host,
          (s) => (metricsHttp = s),
        );
        logger.info(`metrics listening on ${metricsBound.url}/metrics`, { url: metricsBound.url });
      }
      const bound = await listen(app.fetch, config.port, config.host, (s) => (http = s));
      // A library user gets no banner (the CLI prints one): this line says where the server is.
      logger.info(`ai-backend listening on ${bound.url}`, { url: bound.url, host: bound.host, port: bound.port });
      void warmStart();
      return bound;
    },
    metricsAddress: () => metricsBound,
    stop() {
      stopping ??= (async () => {
        const metricsServer = metricsHttp as HttpServer | undefined;
        if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
        const server = http as HttpServer | undefined;
        if (server) {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          const graceMs = opts.shutdownTimeoutMs ?? 10_000;
          const started = Date.now();
          // MCP calls in flight finish like /rpc ones (within the same grace period); then the
          // sessions end, since long-lived MCP streams would hold close() open forever.
          await (mcpLoading ? (await mcpLoading.catch(() => undefined))?.drain(graceMs) : undefined);
          await closeMcp();
          server.closeIdleConnections();
          lingerings.get(server)?.closeLingering();
          const timer = setTimeout(() => server.closeAllConnections(), Math.max(0, graceMs - (Date.now() - started)));
          await closed;
          clearTimeout(timer);
        } else {
          await closeMcp();
        }
        await (await runtimePromise.catch(() => undefined))?.close();
      })();
      return stopping;
    },
  };
}
