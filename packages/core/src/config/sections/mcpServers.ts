import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';

/** Server names become tool-name prefixes (`<server>__<tool>`) and storage slots: identifiers only. */
export const MCP_SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** What we add to every server of Claude Code's `.mcp.json` shape (docs/mcp-gateway.md). */
const additions = {
  /** Each user brings their own credentials (gateway.setCredentials or gateway.connect). Default false: `headers` serve everyone. */
  perUser: z.boolean().default(false),
  /** Off without removing it. Default true. */
  enabled: z.boolean().default(true),
  /** Give up on one upstream call after this many ms. Default 30000. */
  timeoutMs: z.number().int().min(100).max(600_000).default(30_000),
  tools: z.strictObject({ allow: z.array(z.string()).optional(), deny: z.array(z.string()).optional() }).optional(),
  expose: z.enum(['tools', 'search']).default('tools'),
  pricing: z.strictObject({ tokensPerCall: z.number().int().min(0), tools: z.record(z.string(), z.number().int().min(0)).optional() }).optional(),
};

/** Header names as HTTP defines them (RFC 9110 token). */
const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name');

const remote = z.strictObject({
  type: z.enum(['http', 'sse']),
  url: z.url({ protocol: /^https?$/ }),
  /** Shared headers sent for every user (`${VAR}` expanded from the environment). */
  headers: z.record(headerName, z.string()).optional(),
  /**
   * The upstream (and its authorization server) may be on a loopback or private address.
   * Default false: such addresses are refused (server-side request forgery guard).
   */
  allowPrivateNetwork: z.boolean().default(false),
  /**
   * OAuth to the upstream's authorization server for perUser servers: a client registered there
   * beforehand (else we register with its client ID metadata document support or dynamic
   * registration), and the scopes to ask for (default: what the upstream advertises).
   */
  oauth: z.strictObject({ clientId: z.string().min(1).optional(), clientSecret: z.string().min(1).optional(), scopes: z.array(z.string().min(1)).optional() }).optional(),
  ...additions,
});

const stdio = z.strictObject({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  ...additions,
});

/**
 * `mcpServers`: the upstream MCP servers of the gateway, keyed by name, in the shape Claude Code's
 * `.mcp.json` and Claude Desktop use (remote: `type` 'http' | 'sse', `url`, `headers`; stdio:
 * `command`, `args`, `env`, `cwd`), plus our additions above. Default: none.
 */
export const McpServersSchema = lazySection('mcpServers', () =>
  z
    .record(z.string().regex(MCP_SERVER_NAME, 'server names are letters, digits, _ and - (at most 64)'), z.union([remote, stdio]))
    .check((ctx) => {
      for (const [name, s] of Object.entries(ctx.value)) {
        if (s.perUser && !('url' in s)) ctx.issues.push({ code: 'custom', input: s, path: [name, 'perUser'], message: 'perUser needs a remote server (type http or sse): a stdio server has no per-user credentials' });
      }
    }),
);

export type McpServersConfig = z.output<typeof McpServersSchema>;
export type McpServerConfig = McpServersConfig[string];
export type RemoteMcpServerConfig = Extract<McpServerConfig, { url: string }>;
