import { KEY_SCOPES } from '../../services/apiKeys/keyScopes.js';
import { z } from '../../lib/zod.js';
import { MAX_URI_LENGTH, sessionOwner, type ClientWorkspace } from '../../services/workspaces/ClientWorkspaceService.js';
import { WORKSPACE_ID } from '../../services/workspaces/WorkspaceService.js';
import type { Context } from '../../pipeline/context.js';
import { publicProcedure } from '../../pipeline/procedures.js';
import { systemServices } from './systemServices.js';

/**
 * Client workspaces (MCP roots) of the system namespace. Each caller sees and changes only its
 * own registry: its identity, else its MCP session, else the shared anonymous one.
 * They describe folders on the client's side and never grant access to server files.
 */
export function clientWorkspaceOwner(ctx: Pick<Context, 'identity' | 'mcp'>): string {
  if (ctx.identity) return `sub:${ctx.identity.sub}`;
  if (ctx.mcp?.sessionId) return sessionOwner(ctx.mcp.sessionId);
  return 'anonymous';
}

const id = z.string().regex(WORKSPACE_ID, 'letters, digits, "_", "." and "-", at most 64');

/** The system namespace's public procedures, with its services in ctx. */
const systemProcedure = publicProcedure.use(systemServices);

export const clientWorkspaceProcedures = {
  registerClientWorkspace: systemProcedure
    .meta({
      keyAccess: { scope: KEY_SCOPES.workspacesWrite },
      description: 'Register a folder of the client (file:// URI) as a client workspace; replaces one with the same id',
      writes: true,
      mcp: { name: 'registerClientWorkspace', annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true } },
    })
    .input(
      z.lazy(() =>
        z.object({
          id,
          uri: z.string().max(MAX_URI_LENGTH).describe('file:// URI of the folder'),
          name: z.string().max(200).optional(),
          description: z.string().max(1000).optional(),
        }),
      ),
    )
    .mutation(({ ctx, input }) => ctx.clientWorkspaces.register(clientWorkspaceOwner(ctx), input)),

  unregisterClientWorkspace: systemProcedure
    .meta({
      keyAccess: { scope: KEY_SCOPES.workspacesWrite },
      description: 'Unregister one of your client workspaces',
      writes: true,
      mcp: { name: 'unregisterClientWorkspace', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true } },
    })
    .input(z.lazy(() => z.object({ id: z.string().max(64) })))
    .mutation(({ ctx, input }) => ctx.clientWorkspaces.unregister(clientWorkspaceOwner(ctx), input.id)),

  // The spec's output is an array of strings: the ids (what unregisterClientWorkspace takes).
  // `detailed: true` returns the records (uri, name, source...) instead.
  listClientWorkspaces: systemProcedure
    .meta({
      keyAccess: 'any',
      description:
        'List the ids of your client workspaces: registered ones and the roots your MCP session reported (detailed: true for id, uri, name, description, source)',
      mcp: { name: 'listClientWorkspaces', roots: true, annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .input(z.lazy(() => z.object({ detailed: z.boolean().default(false).describe('Return records instead of ids') }).optional()))
    .query(async ({ ctx, input }): Promise<string[] | ClientWorkspace[]> => {
      const all = await ctx.clientWorkspaces.list(clientWorkspaceOwner(ctx), ctx.mcp?.sessionId);
      return input?.detailed ? all : all.map((w) => w.id);
    }),
};
