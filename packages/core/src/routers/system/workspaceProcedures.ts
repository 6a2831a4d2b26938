import { KEY_SCOPES } from '../../services/apiKeys/keyScopes.js';
import { z } from '../../lib/zod.js';
import { WorkspaceConfigSchema } from '../../config/sections/workspaces.js';
import { MAX_PATH_LENGTH } from '../../services/workspaces/pathSyntax.js';
import { WORKSPACE_ID } from '../../services/workspaces/WorkspaceService.js';
import { adminProcedure, publicProcedure } from '../../pipeline/procedures.js';
import { systemServices } from './systemServices.js';

/**
 * Server workspace procedures of the system namespace (and MCP tools of the same names).
 * File operations are public procedures: on /mcp the tool-call auth rules apply as for every
 * tool; adding and removing workspaces needs an administrator on every entry point.
 */

// A plain string checked at request time, so workspaces added at run time are usable at once.
const workspaceId = z
  .string()
  .max(64)
  .default('default')
  .describe('Server workspace id (getServerWorkspaces); "default" is the default workspace');
const relPath = z.string().max(MAX_PATH_LENGTH).describe('Path relative to the workspace root (forward slashes, no "..")');
const encoding = z
  .enum(['utf8', 'base64', 'binary'])
  .default('utf8')
  .describe('utf8 text, base64, or binary (a latin1 string: one character per byte)');

const mutationResult = { success: z.boolean(), id: z.string(), message: z.string() };

/** The system namespace's procedures, with its services in ctx. */
const systemProcedure = publicProcedure.use(systemServices);
const systemAdminProcedure = adminProcedure.use(systemServices);

export const workspaceProcedures = {
  getServerWorkspaces: systemProcedure
    .meta({
      keyAccess: 'any',
      description: 'List the server workspaces with their accessibility (folder paths only for administrators)',
      mcp: { name: 'getServerWorkspaces', annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .query(({ ctx }) => ctx.workspaces.list({ includePaths: ctx.identity?.isAdmin === true })),

  listFiles: systemProcedure
    .meta({
      keyAccess: 'any',
      description: 'List files (and folders, ending with "/") of a server workspace folder; paths are relative to the workspace root',
      mcp: { name: 'listFiles', annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .input(
      z.lazy(() =>
        z
          .object({
            workspaceId,
            path: relPath.default(''),
            recursive: z.boolean().default(false).describe('Include subfolders recursively'),
            includeDirectories: z.boolean().default(true).describe('Include folders (with a trailing "/")'),
          })
          .default({ workspaceId: 'default', path: '', recursive: false, includeDirectories: true }),
      ),
    )
    .query(({ ctx, input }) =>
      ctx.workspaces.listFiles(input.workspaceId, input.path, {
        recursive: input.recursive,
        includeDirectories: input.includeDirectories,
        signal: ctx.req.signal,
      }),
    ),

  readFile: systemProcedure
    .meta({
      keyAccess: 'any',
      description: 'Read a file of a server workspace',
      mcp: { name: 'readFile', annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .input(z.lazy(() => z.object({ workspaceId, path: relPath, encoding })))
    .query(({ ctx, input }) => ctx.workspaces.readFile(input.workspaceId, input.path, input.encoding)),

  writeFile: systemProcedure
    .meta({
      keyAccess: { scope: KEY_SCOPES.filesWrite },
      description: 'Write a file of a server workspace atomically, creating missing folders',
      writes: true,
      mcp: { name: 'writeFile', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true } },
    })
    .input(
      z.lazy(() => z.object({ workspaceId, path: relPath, content: z.string().describe('File content in the given encoding'), encoding })),
    )
    .output(z.lazy(() => z.object({ success: z.boolean(), path: z.string(), size: z.number() })))
    .mutation(({ ctx, input }) => ctx.workspaces.writeFile(input.workspaceId, input.path, input.content, input.encoding)),

  pathExists: systemProcedure
    .meta({
      keyAccess: 'any',
      description: 'Whether a file or folder exists in a server workspace (and is reachable under its rules)',
      mcp: { name: 'pathExists', annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .input(z.lazy(() => z.object({ workspaceId, path: relPath })))
    .query(({ ctx, input }) => ctx.workspaces.pathExists(input.workspaceId, input.path)),

  addServerWorkspace: systemAdminProcedure
    .meta({
      description: 'Add a server workspace at run time (administrators only; persisted in storage)',
      mcp: { name: 'addServerWorkspace', annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false } },
    })
    .input(
      z.lazy(() =>
        z.object({ id: z.string().regex(WORKSPACE_ID, 'letters, digits, "_", "." and "-", at most 64'), config: WorkspaceConfigSchema }),
      ),
    )
    .output(z.lazy(() => z.object(mutationResult)))
    .mutation(({ ctx, input }) => ctx.workspaces.add(input.id, input.config, ctx.identity.sub)),

  removeServerWorkspace: systemAdminProcedure
    .meta({
      description: 'Remove a server workspace added at run time (administrators only)',
      mcp: { name: 'removeServerWorkspace', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true } },
    })
    .input(z.lazy(() => z.object({ id: z.string().max(64) })))
    .output(z.lazy(() => z.object(mutationResult)))
    .mutation(({ ctx, input }) => ctx.workspaces.remove(input.id, ctx.identity.sub)),
};
