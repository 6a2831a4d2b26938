import { z } from '../../lib/zod.js';
import { once } from '../../lib/once.js';
import { CoreError } from '../../kernel/CoreError.js';
import { MCP_SERVER_NAME, mcpServerSchema } from '../../config/sections/mcpServers.js';
import { toolCallNeedsAuth } from '../../pipeline/accessPolicy.js';
import { router } from '../../pipeline/init.js';
import { adminProcedure, publicProcedure } from '../../pipeline/procedures.js';
import { gatewayServices } from './gatewayServices.js';
import { exposedName } from '../../services/gateway/gatewayAccess.js';
import { credentialProcedures } from './credentialProcedures.js';

const serverName = once(() =>
  z.string().regex(MCP_SERVER_NAME, 'a server name: letters, digits, - and _ (no "__", not ending in "_"), at most 40'),
);
const ListToolsInput = z.lazy(() => z.object({ server: serverName().optional() }).default({}));
const CallToolInput = z.lazy(() =>
  z.object({
    /** Absent: the gateway's own search_tools or call_tool (tool search, docs/mcp-gateway.md). */
    server: serverName().optional(),
    tool: z.string().min(1).max(200),
    arguments: z.record(z.string(), z.unknown()).default({}),
  }),
);
const AddServerInput = z.lazy(() => z.object({ name: serverName(), server: mcpServerSchema() }));
const NameInput = z.lazy(() => z.object({ name: serverName() }));

/** The gateway namespace's procedures, with the MCP gateway in ctx. */
const gatewayProcedure = publicProcedure.use(gatewayServices);
const gatewayAdminProcedure = adminProcedure.use(gatewayServices);

/**
 * The MCP gateway on /trpc and /rpc (docs/mcp-gateway.md): the upstream servers' tools for apps
 * and scripts without an MCP client. A caller sees and calls exactly what /mcp would show it:
 * the same gateway service decides (server allowScopes/allowUsers, the server's tool rules, the
 * API key's `tools` rule over `<server>__<tool>`). `keyToolsRule: 'byTool'`: the key's tools rule
 * names upstream tools, so the gateway applies it to the tool named in the input.
 */
export const gatewayRouter = router({
  // setCredentials, deleteCredentials, connect: each user's own credentials for perUser servers.
  ...credentialProcedures,

  listServers: gatewayProcedure
    .meta({ keyAccess: 'any', keyToolsRule: 'byTool', description: 'The upstream MCP servers you may use, with their health' })
    .query(({ ctx }) => ({ servers: ctx.gateway.listServers(ctx.identity) })),

  listTools: gatewayProcedure
    .meta({ keyAccess: 'any', keyToolsRule: 'byTool', description: 'The upstream MCP tools you may call, named <server>__<tool>' })
    .input(ListToolsInput)
    .query(async ({ ctx, input }) => {
      const tools = await ctx.gateway.listTools(ctx.identity);
      return { tools: input.server ? tools.filter((t) => t.server === input.server) : tools };
    }),

  callTool: gatewayProcedure
    .meta({
      keyAccess: 'any',
      keyToolsRule: 'byTool',
      countsAsToolCall: true,
      description:
        "Call an upstream MCP tool (or, without server, the gateway's search_tools / call_tool); the answer is its MCP tool result (content, structuredContent, isError)",
    })
    .input(CallToolInput)
    .mutation(async ({ ctx, input }) => {
      // Without a server, the tool is the gateway's own (search_tools, call_tool); any other name is an unknown tool there.
      const name = input.server ? exposedName(input.server, input.tool) : input.tool;
      // The same rule as our own MCP tools: requireAuthForToolsCall (unless the name is in publicTools).
      if (!ctx.identity && toolCallNeedsAuth(ctx.config, undefined, name))
        throw new CoreError('UNAUTHORIZED', 'authentication required for this tool');
      const mcp = ctx.mcp;
      // Progress is asked of the upstream only for a caller that wants it (a progressToken, a task).
      const progress = mcp?.progressWanted ? mcp.progress : undefined;
      return ctx.gateway.callTool(
        {
          identity: ctx.identity,
          ip: ctx.req.ip,
          signal: ctx.req.signal,
          // What the upstream asks the client during the call (sampling, elicitation) goes to our MCP caller's
          // client; ctx.mcp.request refuses clearly where it cannot (2026-07-28 and stateless sessions).
          ...(mcp
            ? { onRequest: (method: string, params: Record<string, unknown>) => mcp.request<Record<string, unknown>>(method, params) }
            : {}),
          ...(progress
            ? {
                onProgress: (p: number, total: number | undefined, message: string | undefined) =>
                  void progress(p, total, message).catch(() => undefined),
              }
            : {}),
        },
        name,
        input.arguments,
      );
    }),

  addServer: gatewayAdminProcedure
    .meta({
      writes: true,
      description: 'Add (or replace) a remote MCP server (http or sse) on every instance; stdio servers come only from the config file',
    })
    .input(AddServerInput)
    .mutation(async ({ ctx, input }) => {
      await ctx.gateway.addServer(input.name, input.server);
      return { added: input.name };
    }),

  removeServer: gatewayAdminProcedure
    .meta({ writes: true, description: 'Remove a server added with addServer, on every instance' })
    .input(NameInput)
    .mutation(async ({ ctx, input }) => ({ removed: await ctx.gateway.removeServer(input.name) })),

  serverStatus: gatewayAdminProcedure
    .meta({
      description:
        'Every upstream MCP server: connection state, last error, tools, calls, per-user connections, its stderr tail (untrusted text)',
    })
    .query(({ ctx }) => ({ servers: ctx.gateway.status() })),
});
