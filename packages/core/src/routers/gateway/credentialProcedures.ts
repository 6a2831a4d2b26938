import { z } from '../../lib/zod.js';
import { publicBaseUrl } from '../../runtime/publicBaseUrl.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { RequestInfo } from '../../pipeline/context.js';
import { protectedProcedure } from '../../pipeline/procedures.js';
import { gatewayServices } from './gatewayServices.js';
import { MAX_HEADERS, MAX_HEADER_VALUE } from '../../services/gateway/credentials/headerRules.js';
import { GATEWAY_OAUTH_CALLBACK_PATH, GATEWAY_OAUTH_CLIENT_METADATA_PATH } from '../../services/gateway/credentials/callbackPaths.js';

const ServerName = z.string().min(1).max(64);

/**
 * This server's address as the user's browser reaches it: oauth.publicUrl, else the request's Host (the Node server speaks plain http;
 * behind a proxy trustProxy gives X-Forwarded-*).
 */
function callbackUrls(config: ResolvedConfig, req: RequestInfo) {
  const host = req.headers.get('host') ?? `${config.host}:${config.port}`;
  const base = publicBaseUrl(`http://${host}`, req.headers, config);
  return { redirectUri: `${base}${GATEWAY_OAUTH_CALLBACK_PATH}`, clientMetadataUrl: `${base}${GATEWAY_OAUTH_CLIENT_METADATA_PATH}` };
}

/** A signed-in caller, with the gateway services in ctx. */
const gatewayUserProcedure = protectedProcedure.use(gatewayServices);

/**
 * gateway.setCredentials / deleteCredentials / connect: a user's own credentials for upstream MCP
 * servers marked `perUser` (docs/mcp-gateway.md "Per-user credentials and OAuth"). They change
 * the caller's account, so an API key cannot call them (keyAccess 'none'), and they are no MCP
 * tools: header values are secrets that must not pass through a model's context.
 */
export const credentialProcedures = {
  setCredentials: gatewayUserProcedure
    .meta({
      keyAccess: 'none',
      description: 'Store your own headers for a perUser upstream MCP server (encrypted at rest; never returned)',
    })
    .input(
      z.lazy(() =>
        z.object({
          server: ServerName,
          headers: z
            .record(z.string().max(128), z.string().max(MAX_HEADER_VALUE))
            .refine((h) => Object.keys(h).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`),
        }),
      ),
    )
    .mutation(async ({ ctx, input }) => {
      const status = await ctx.upstreamCredentials.setHeaders(ctx.identity.sub, input.server, input.headers);
      return {
        server: input.server,
        stored: true as const,
        kind: 'headers' as const,
        headerNames: status.headerNames ?? [],
        updatedAt: status.updatedAt,
      };
    }),

  deleteCredentials: gatewayUserProcedure
    .meta({
      keyAccess: 'none',
      description:
        'Delete your stored headers or OAuth grant for an upstream MCP server (an OAuth grant is also revoked there where possible)',
    })
    .input(z.lazy(() => z.object({ server: ServerName })))
    .mutation(async ({ ctx, input }) => ({
      server: input.server,
      ...(await ctx.upstreamCredentials.remove(ctx.identity.sub, input.server)),
    })),

  connect: gatewayUserProcedure
    .meta({
      keyAccess: 'none',
      description:
        'Start signing in to a perUser upstream MCP server with OAuth: returns the URL to open in a browser (single use, expires)',
    })
    .input(z.lazy(() => z.object({ server: ServerName })))
    .mutation(async ({ ctx, input }) => ({
      server: input.server,
      ...(await ctx.upstreamCredentials.connect(ctx.identity.sub, input.server, callbackUrls(ctx.config, ctx.req))),
    })),
};
