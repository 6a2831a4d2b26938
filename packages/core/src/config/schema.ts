import type { AnyRouter } from '@trpc/server';
import { z } from '../lib/zod.js';
import { AdminSchema, JwtSchema, McpSchema, OAuthSchema } from './sections/auth.js';
import { AiSchema, BillingSchema } from './sections/ai.js';
import { isBuiltinProvider } from './sections/aiProviders.js';
import { CorsSchema, LimitsSchema, MonitoringSchema, ProtocolsSchema, TransportsSchema } from './sections/server.js';
import { StorageSchema } from './sections/storage.js';
import { AlertsSchema, ApiDescriptionSchema, ConsoleSchema, MetricsSchema, StatisticsSchema } from './sections/operations.js';
import { ServerWorkspacesSchema } from './sections/workspaces.js';
import { crossFieldProblems } from './authMode.js';
import { resolveAuth } from './resolveAuth.js';
import { mcpResponseModes } from './mcpResponseModes.js';
import { ApiKeysSchema } from './sections/apiKeys.js';
import { ResourcesSchema } from './sections/resources.js';
import { GatewaySchema, McpServersSchema } from './sections/mcpServers.js';
import { BUILT_IN_NAMESPACES } from '../kernel/namespaces.js';

/** A tRPC router; checked structurally so core does not depend on a router instance here. */
const RouterLike = z.custom<AnyRouter>(
  (v) => typeof v === 'object' && v !== null && '_def' in v && typeof (v as { _def: unknown })._def === 'object',
  'must be a tRPC router (created with router({...}))',
);

/**
 * The whole configuration: every entry of the spec plus our additions, with defaults resolved
 * once here. Unknown keys are errors (strict objects), so a typo never goes unnoticed.
 */
export const ConfigSchema = z
  .strictObject({
    port: z.number().int().min(0).max(65535).default(8000),
    /** Bind address. Default loopback. */
    host: z.string().default('127.0.0.1'),
    /**
     * Explicit opt-in to serve without authentication on a non-loopback address.
     * Without it such a config is refused.
     */
    allowUnauthenticatedRemote: z.boolean().default(false),
    trustProxy: z.boolean().default(false),
    cors: CorsSchema,
    protocols: ProtocolsSchema,
    transports: TransportsSchema,
    limits: LimitsSchema,
    /** Providers the server pays for with its own key: built-in ids or named providers of ai.providers. */
    serverProviders: z.array(z.string()).default([]),
    customRouters: z
      .record(z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/, 'namespace names are identifiers'), RouterLike)
      .default({})
      .check((ctx) => {
        for (const ns of Object.keys(ctx.value)) {
          if ((BUILT_IN_NAMESPACES as readonly string[]).includes(ns)) {
            ctx.issues.push({ code: 'custom', input: ns, path: [ns], message: `"${ns}" is a built-in namespace` });
          }
        }
      }),
    monitoring: MonitoringSchema,
    storage: StorageSchema,
    mcp: McpSchema,
    oauth: OAuthSchema,
    jwt: JwtSchema,
    admin: AdminSchema,
    serverWorkspaces: ServerWorkspacesSchema,
    ai: AiSchema,
    billing: BillingSchema,
    apiDescription: ApiDescriptionSchema,
    console: ConsoleSchema,
    metrics: MetricsSchema,
    statistics: StatisticsSchema,
    alerts: AlertsSchema,
    apiKeys: ApiKeysSchema,
    resources: ResourcesSchema,
    /** Upstream MCP servers the gateway fronts on /mcp, /trpc and /rpc (docs/mcp-gateway.md). */
    mcpServers: McpServersSchema,
    gateway: GatewaySchema,
  })
  // A workspace:// resource must name a configured server workspace (clear error at start, not a 404 later).
  .check((ctx) => {
    const ids = new Set(Object.keys(ctx.value.serverWorkspaces.workspaces));
    const check = (value: string, path: (string | number)[]) => {
      const m = /^workspace:\/\/([^/?#]+)\//i.exec(value);
      if (!m) return;
      let id: string;
      try {
        id = decodeURIComponent(m[1]!);
      } catch {
        id = m[1]!;
      }
      if (!ids.has(id) && !(id === 'default' && ids.size > 0))
        ctx.issues.push({
          code: 'custom',
          input: value,
          path,
          message: `no server workspace "${id}" (serverWorkspaces has: ${[...ids].join(', ') || 'none'})`,
        });
    };
    ctx.value.resources.list.forEach((r, i) => check(r.uri, ['resources', 'list', i, 'uri']));
    ctx.value.resources.templates.forEach((t, i) => check(t.uriTemplate, ['resources', 'templates', i, 'uriTemplate']));
  })
  // The spec's `mcp.auth.oauth.sessionStorePath` is our `oauth.sessionStorage` of type file: mapped here, once.
  .check((ctx) => {
    const path = ctx.value.mcp.auth.oauth.sessionStorePath;
    const storage = ctx.value.oauth.sessionStorage;
    if (path !== undefined && storage && (storage.type !== 'file' || storage.filePath !== path)) {
      ctx.issues.push({
        code: 'custom',
        input: path,
        path: ['mcp', 'auth', 'oauth', 'sessionStorePath'],
        message: 'conflicts with oauth.sessionStorage; set only one of them',
      });
    }
  })
  .overwrite((config) => {
    const path = config.mcp.auth.oauth.sessionStorePath;
    if (path !== undefined && !config.oauth.sessionStorage) config.oauth.sessionStorage = { type: 'file', filePath: path };
    return config;
  })
  .check((ctx) => {
    ctx.value.serverProviders.forEach((id, i) => {
      if (!isBuiltinProvider(id) && !Object.hasOwn(ctx.value.ai.providers, id)) {
        ctx.issues.push({
          code: 'custom',
          input: id,
          path: ['serverProviders', i],
          message: `unknown provider "${id}": a built-in (anthropic, openai, google, openrouter) or a named provider of ai.providers`,
        });
      }
    });
  })
  // The auth rules, derived once: `auth` holds every rule the rest of the code reads (see
  // resolveAuth), and the tri-state flags it was derived from (`oauth.enabled`,
  // `mcp.auth.jwt.enabled`, `mcp.auth.oauth.enabled`) leave the resolved config, so no reader can
  // decide from them again; the MCP answer modes likewise (`mcp.responseModes`, see mcpResponseModes).
  .transform((config) => {
    const auth = resolveAuth(config);
    const { enabled: _server, ...oauth } = config.oauth;
    const { jwt: mcpJwt, oauth: mcpOAuth, ...mcpAuth } = config.mcp.auth;
    const { enabled: _jwtTokens, ...jwt } = mcpJwt;
    const { enabled: _oauthTokens, ...ourTokens } = mcpOAuth;
    const mcp = {
      ...config.mcp,
      auth: { ...mcpAuth, jwt, oauth: ourTokens },
      responseModes: mcpResponseModes(config.mcp.responseMode, config.mcp.sessionMode),
    };
    return { ...config, mcp, oauth, auth };
  })
  // Rules across sections (OAuth completeness, no unauthenticated public bind): `serve` and
  // `config check` both get them from here.
  .check((ctx) => {
    for (const p of crossFieldProblems(ctx.value))
      ctx.issues.push({ code: 'custom', input: undefined, path: p.path.split('.'), message: p.message });
  })
  .prefault({});

/** What users write (every field optional). */
export type ConfigInput = z.input<typeof ConfigSchema>;
/** The resolved config: defaults applied, nothing optional that has a default. */
export type ResolvedConfig = z.output<typeof ConfigSchema>;

/** Identity helper for typed config files: `export default defineConfig({...})`. */
export function defineConfig(config: ConfigInput): ConfigInput {
  return config;
}
