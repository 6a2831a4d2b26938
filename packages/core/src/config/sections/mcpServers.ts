import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';
import { HTTP_TOKEN } from '../../lib/httpToken.js';

/**
 * `mcpServers`: the upstream MCP servers the gateway fronts (docs/mcp-gateway.md), in the shape
 * of Claude Code's `.mcp.json` and Claude Desktop's config, so a team pastes what it has. Our
 * additions sit beside the pasted keys. `gateway`: limits every upstream shares.
 */

/**
 * Server names become tool-name prefixes (`<server>__<tool>`): no `__` inside and no `_` at the end
 * (`a_` + `__` + `x` would read as server `a`, tool `_x`), so the first `__` of a name always ends
 * the server's part; short, and safe in metric labels.
 */
export const MCP_SERVER_NAME = /^(?!.*__)(?!.*_$)[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/;

/** `${VAR}` or `${VAR:-default}` (Claude Code's expansion syntax). */
const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Expand `${VAR}` from `env`; a variable neither set nor defaulted is a config error (a silent empty header would be worse). */
export function expandVars(value: string, env: Readonly<Record<string, string | undefined>>, missing: (name: string) => void): string {
  return value.replace(VAR, (_, name: string, fallback: string | undefined) => {
    const v = env[name];
    if (v !== undefined && v !== '') return v;
    if (fallback !== undefined) return fallback;
    missing(name);
    return '';
  });
}

const glob = () => z.string().min(1).max(200);
const bounded = (max: number) => z.string().min(1).max(max);

const common = {
  /** Off: the server is not connected and none of its tools, prompts or resources appear. */
  enabled: z.boolean().default(true),
  /** Each user brings their own credentials (gateway.setCredentials or OAuth via gateway.connect); the connection is per (server, user). */
  perUser: z.boolean().default(false),
  /** micromatch globs over the upstream's own tool names: `allow` (default all) minus `deny`. */
  tools: z.strictObject({ allow: z.array(glob()).max(100).optional(), deny: z.array(glob()).max(100).default([]) }).prefault({}),
  /** 'tools': every tool listed; 'search': only search_tools and call_tool stand for this server's tools. */
  expose: z.enum(['tools', 'search']).default('tools'),
  /** Tokens charged per successful call (held before, settled after, like an AI call); `tools` overrides per upstream tool name. */
  pricing: z
    .strictObject({
      tokensPerCall: z.number().int().min(0).max(1_000_000_000).default(0),
      tools: z.record(bounded(200), z.number().int().min(0).max(1_000_000_000)).default({}),
    })
    .prefault({}),
  /** A call (and a connect) gives up after this many ms with a tool error. */
  timeoutMs: z.number().int().min(100).max(3_600_000).default(30_000),
  /** Only callers holding one of these scopes see and call the server; absent: everyone allowed by the rest. */
  allowScopes: z.array(bounded(200)).max(50).optional(),
  /** Only these users (subject ids or verified e-mails) see and call the server; absent: everyone. Administrators always may. */
  allowUsers: z.array(bounded(320)).max(1000).optional(),
  /** Shown to administrators (console, gateway.listServers); never sent to clients as instructions. */
  description: bounded(500).optional(),
};

/** Header names as HTTP defines them (RFC 9110 token). */
const headerName = () => z.string().regex(HTTP_TOKEN, 'an HTTP header name').max(200);
const headers = () => z.record(headerName(), z.string().max(8192)).default({});
const url = () =>
  z
    .string()
    .max(2048)
    .refine((v) => /^https?:\/\//i.test(v) && URL.canParse(v), 'an http(s) URL')
    .refine((v) => !/^[a-z]+:\/\/[^/?#]*@/i.test(v), 'URLs must not contain credentials (user:password@); use headers');

/** What only remote servers have besides `url` and `headers`. */
const remote = () => ({
  /**
   * This upstream (and its authorization server) may be on a loopback or private address, as
   * `gateway.allowPrivateNetwork` allows for every upstream. Default false: the SSRF guard refuses them.
   */
  allowPrivateNetwork: z.boolean().default(false),
  /**
   * OAuth to the upstream's authorization server for perUser servers: a client registered there
   * beforehand (else we register with its client ID metadata document support or dynamic
   * registration), and the scopes to ask for (default: what the upstream advertises).
   */
  oauth: z
    .strictObject({
      clientId: z.string().min(1).optional(),
      clientSecret: z.string().min(1).optional(),
      scopes: z.array(z.string().min(1)).optional(),
    })
    .optional(),
});

export const mcpServerSchema = () =>
  z.union([
    z.strictObject({
      type: z.literal('stdio').default('stdio'),
      command: bounded(1000),
      args: z.array(z.string().max(4096)).max(200).default([]),
      env: z.record(bounded(200), z.string().max(8192)).default({}),
      cwd: bounded(1000).optional(),
      ...common,
    }),
    z.strictObject({ type: z.literal('http'), url: url(), headers: headers(), ...remote(), ...common }),
    z.strictObject({ type: z.literal('sse'), url: url(), headers: headers(), ...remote(), ...common }),
  ]);

export type McpServerConfig = z.output<ReturnType<typeof mcpServerSchema>>;
export type McpServersConfig = Record<string, McpServerConfig>;
export type McpServerInput = z.input<ReturnType<typeof mcpServerSchema>>;
export type RemoteMcpServerConfig = Extract<McpServerConfig, { type: 'http' | 'sse' }>;

export const McpServersSchema = lazySection('mcpServers', () =>
  z
    .record(
      z.string().regex(MCP_SERVER_NAME, 'server names: letters, digits, - and _ (no "__", not ending in "_"), at most 40'),
      mcpServerSchema(),
    )
    .default({})
    .check((ctx) => {
      for (const [name, server] of Object.entries(ctx.value)) {
        if (server.perUser && server.type === 'stdio')
          ctx.issues.push({
            code: 'custom',
            input: name,
            path: [name, 'perUser'],
            message: 'perUser needs a remote server (type http or sse); a stdio process has no per-user credentials',
          });
      }
    }),
);

export const GatewaySchema = lazySection('gateway', () =>
  z
    .strictObject({
      /** Remote upstreams may be on loopback or private addresses (development, a sidecar). Default false: the SSRF guard refuses them. */
      allowPrivateNetwork: z.boolean().default(false),
      /** Remote upstreams may use plain http:. Default false (https only), except on private addresses allowed above. */
      allowHttp: z.boolean().default(false),
      /** An upstream answer (a tool result, prompt or resource) larger than this many bytes of JSON is refused with a tool error. */
      maxResultBytes: z
        .number()
        .int()
        .min(1024)
        .max(64 * 1024 * 1024)
        .default(4 * 1024 * 1024),
      /** Per-user connections kept open at most (least recently used closed first). */
      maxUserConnections: z.number().int().min(1).max(100_000).default(200),
      /** A per-user connection unused this long is closed. */
      userConnectionIdleMs: z.number().int().min(1000).max(86_400_000).default(300_000),
      /** How often each instance looks for servers added or removed at run time (gateway.addServer). */
      syncIntervalMs: z.number().int().min(100).max(60_000).default(1000),
    })
    .prefault({}),
);
