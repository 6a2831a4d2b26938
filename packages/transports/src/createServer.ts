import { Hono } from 'hono';
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { createLogger, createRuntime, resolveConfig, ConfigError, type ConfigInput, type Logger, type ResolvedConfig, type Runtime, type Storage } from '@ai-backend/core';
import { checkOAuthConfig, createAuthenticator } from '@ai-backend/auth';
import type { OAuthRoutes } from '@ai-backend/auth/oauth';
import { cors } from './http/cors.js';
import { healthRoutes } from './http/healthRoutes.js';
import { jwtResourceMetadataHandler } from './http/jwtResourceMetadata.js';
import { purchaseWebhookHandler } from './http/purchaseWebhookRoute.js';
import { requestOrigin } from './http/requestFacts.js';
import { jsonRpcHandler } from './jsonrpc/jsonRpcHandler.js';
import type { McpHandler } from './mcp/mcpHandler.js';
import { toolProcedures } from './mcp/toolCatalog.js';
import { isLoopbackHost } from './mcp/originGuard.js';
import { chatCompletionsHandler, modelsHandler } from './openai/openAiHandler.js';
import { trpcHandler } from './trpc/trpcHandler.js';

export interface CreateServerOptions {
  /** Use this storage instead of opening the configured backend. */
  storage?: Storage;
  logger?: Logger;
  /** Time stop() waits for in-flight requests before closing connections. Default 10000 ms. */
  shutdownTimeoutMs?: number;
}

export interface BoundAddress {
  host: string;
  port: number;
  url: string;
}

export interface AiBackendServer {
  /** The Hono app: mount it in another Hono app or serve it from any fetch runtime. */
  readonly app: Hono;
  readonly fetch: (req: Request) => Promise<Response>;
  readonly config: ResolvedConfig;
  /** Resolves once storage is open and services are built. */
  ready(): Promise<Runtime>;
  /** Listen on config.host:config.port (port 0 picks a free one). */
  start(): Promise<BoundAddress>;
  /** Stop accepting, finish in-flight requests, close MCP sessions and stores. */
  stop(): Promise<void>;
}

/**
 * Does this config run the OAuth authorization server? `oauth.enabled: true` demands it (and a
 * missing piece is a config error); otherwise it runs when the auth type uses OAuth and the
 * identity provider is configured.
 */
export function oauthEnabled(config: ResolvedConfig): boolean {
  if (config.oauth.enabled === false) return false;
  if (config.oauth.enabled === true) return true;
  const usesOAuth = config.mcp.auth.authType === 'oauth' || config.mcp.auth.authType === 'both';
  return usesOAuth && checkOAuthConfig(config).length === 0;
}

/** Is this config one that would serve without any authentication? */
function servesWithoutAuth(config: ResolvedConfig): boolean {
  const authType = config.mcp.auth.authType;
  if (authType === 'none') return true;
  const jwtReady = Boolean(config.jwt.secret);
  if (authType === 'jwt') return !jwtReady;
  if (authType === 'oauth') return !oauthEnabled(config);
  return !jwtReady && !oauthEnabled(config);
}

/** Paths served by the OAuth authorization server. */
const OAUTH_PATHS = ['/.well-known/oauth-authorization-server', '/.well-known/oauth-authorization-server/*', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/*', '/.well-known/jwks.json', '/register', '/oauth/*'];

/**
 * Build the HTTP server for a config. Validation happens here, synchronously: an invalid
 * config throws ConfigError and nothing half-works. Storage opens in the background;
 * requests wait for it.
 */
export function createServer(input: ConfigInput | ResolvedConfig = {}, opts: CreateServerOptions = {}): AiBackendServer {
  const config = resolveConfig(input);
  if (!isLoopbackHost(config.host) && servesWithoutAuth(config) && !config.allowUnauthenticatedRemote) {
    throw new ConfigError([
      {
        path: 'host',
        message: `refusing to serve without authentication on non-loopback address ${config.host}; configure jwt.secret or oauth, bind to 127.0.0.1, or set allowUnauthenticatedRemote: true to accept the risk`,
      },
    ]);
  }

  const withOAuth = oauthEnabled(config);
  if (config.oauth.enabled === true) {
    const problems = checkOAuthConfig(config);
    if (problems.length) throw new ConfigError(problems);
  }

  const mcpOn = config.mcp.enabled && config.transports.http;
  /** The MCP layer (the SDK is a large module graph) loads on the first /mcp request. */
  let mcpLoading: Promise<McpHandler> | undefined;
  const getMcp = () =>
    (mcpLoading ??= Promise.all([runtimePromise, import('./mcp/mcpHandler.js')]).then(([runtime, { McpHandler }]) => new McpHandler(runtime, config.mcp.responseMode ? { responseMode: config.mcp.responseMode } : {})));
  const closeMcp = async () => (mcpLoading ? (await mcpLoading.catch(() => undefined))?.close() : undefined);
  let oauth: OAuthRoutes | undefined;
  // One logger for the runtime and for errors caught at the HTTP layer.
  const logger = opts.logger ?? createLogger(config.monitoring.logging.level);
  const runtimePromise = createRuntime(config, { storage: opts.storage, logger }).then(async (runtime) => {
    if (withOAuth) {
      const { createOAuthRoutes } = await import('@ai-backend/auth/oauth');
      const routes = createOAuthRoutes(runtime);
      oauth = routes;
      runtime.onClose(() => routes.close());
      await routes.ready();
    }
    const oauthVerifier = oauth && ((token: string) => oauth!.verifyAccessToken(token));
    runtime.setAuthenticator(createAuthenticator(config, { logger: runtime.logger, oauthVerifier }));
    if (mcpOn) toolProcedures(runtime.router); // a tool-name clash fails start-up
    return runtime;
  });
  // Surface start-up failures through ready()/start(), not as an unhandled rejection.
  runtimePromise.catch(() => undefined);
  const getRuntime = () => runtimePromise;

  const app = new Hono();
  app.use('*', cors(config.cors, (req) => requestOrigin(req, config.trustProxy)));
  app.onError((err, c) => {
    logger.error('unhandled error', { path: c.req.path, error: err.message });
    return c.json({ error: 'internal error' }, 500);
  });
  app.notFound((c) => c.json({ error: 'not found' }, 404));
  app.route('/', healthRoutes(getRuntime));

  if (withOAuth) {
    for (const path of OAUTH_PATHS) {
      app.all(path, async (c) => {
        await getRuntime();
        return oauth!.app.fetch(c.req.raw, c.env);
      });
    }
  } else if (config.mcp.auth.authType !== 'none') {
    const prm = jwtResourceMetadataHandler(config);
    app.get('/.well-known/oauth-protected-resource', prm);
    app.get('/.well-known/oauth-protected-resource/mcp', prm);
  }
  if (config.protocols.tRpc) {
    app.all('/trpc/*', trpcHandler(getRuntime, '/trpc'));
    app.all('/typedrpc/*', trpcHandler(getRuntime, '/typedrpc'));
  }
  if (config.protocols.jsonRpc) app.post('/rpc', jsonRpcHandler(getRuntime));
  if (config.protocols.openAi) {
    app.post('/v1/chat/completions', chatCompletionsHandler(getRuntime));
    app.get('/v1/models', modelsHandler(getRuntime));
  }
  if (config.billing.webhookSecret) app.post('/webhooks/purchase', purchaseWebhookHandler(getRuntime));
  if (mcpOn) {
    app.all('/mcp', async (c, next) => {
      const mcp = await getMcp();
      return mcp.handle(c, next);
    });
  }

  let http: ServerType | undefined;
  let stopping: Promise<void> | undefined;

  return {
    app,
    fetch: (req) => Promise.resolve(app.fetch(req)),
    config,
    ready: getRuntime,
    async start() {
      await getRuntime();
      return new Promise<BoundAddress>((resolve, reject) => {
        const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, (info: AddressInfo) => {
          const host = info.address.includes(':') ? `[${info.address}]` : info.address;
          resolve({ host: info.address, port: info.port, url: `http://${host}:${info.port}` });
        });
        server.once('error', reject);
        http = server;
      });
    },
    stop() {
      stopping ??= (async () => {
        const server = http as HttpServer | undefined;
        if (server) {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          // Long-lived MCP streams would hold close() open forever: end sessions first.
          await closeMcp();
          server.closeIdleConnections();
          const timer = setTimeout(() => server.closeAllConnections(), opts.shutdownTimeoutMs ?? 10_000);
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
