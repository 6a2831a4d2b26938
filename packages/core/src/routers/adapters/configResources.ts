import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Context } from '../../pipeline/context.js';
import { runtimeOf } from '../../pipeline/callContext.js';
import { invoke } from '../../pipeline/invoke.js';
import type { ResourceContent, ResourceRegistry } from '../../services/resources/ResourceRegistry.js';
import { parseWorkspaceUri } from '../../services/resources/workspaceSchemeHandler.js';

/** The procedure whose access rules, limits and guard a workspace file read goes through. */
// Registries hand back, untyped, the Context the pipeline gave them (services/resources/ResourceRegistry.ts).
export const WORKSPACE_READ_PROCEDURE = 'system.readFile';

const TEXTUAL = /^(text\/|application\/(json|xml|javascript|yaml|x-yaml|toml|x-sh)|[^;]*\+(json|xml))/i;

/**
 * Read `workspace://<id>/<path>` as the caller: through system.readFile (core's invoke seam),
 * so the same access policy, rate limits and metrics apply as to the readFile tool, and the
 * workspace guard (root containment, symlinks, blocked paths and extensions, size) decides.
 */
async function readWorkspaceFile(uri: string, ctx: Context | undefined): Promise<ResourceContent> {
  if (!ctx) throw new CoreError('BAD_REQUEST', 'workspace resources are read with a caller context');
  const { workspaceId, rel } = parseWorkspaceUri(uri);
  const result = await invoke(runtimeOf(ctx).router, WORKSPACE_READ_PROCEDURE, { workspaceId, path: rel, encoding: 'base64' }, ctx);
  if (!result.ok) throw result.error;
  const r = result.data as { content: string; mimeType: string };
  if (TEXTUAL.test(r.mimeType)) return { content: Buffer.from(r.content, 'base64').toString('utf8'), mimeType: r.mimeType };
  return { content: r.content, mimeType: r.mimeType, blob: true };
}

function isWorkspaceUri(uri: string): boolean {
  return /^workspace:\/\//i.test(uri);
}

/**
 * Register the resources of `config.resources`: fixed resources and templates read by the
 * handler of their scheme (`workspace://` as the caller through system.readFile, `https://`
 * through the registry's guarded http handlers), and, with `workspaceFiles`, one template per
 * configured server workspace: `workspace://<id>/{+path}`.
 */
export function registerConfigResources(config: ResolvedConfig, registry: ResourceRegistry): void {
  const rc = config.resources;
  for (const r of rc.list) {
    const common = {
      uri: r.uri,
      name: r.name,
      ...(r.title ? { title: r.title } : {}),
      ...(r.description ? { description: r.description } : {}),
      ...(r.mimeType ? { mimeType: r.mimeType } : {}),
      ...(r.category ? { category: r.category } : {}),
    };
    if (isWorkspaceUri(r.uri))
      registry.register({
        ...common,
        procedure: WORKSPACE_READ_PROCEDURE,
        read: (_signal, ctx) => readWorkspaceFile(r.uri, ctx as Context | undefined),
      });
    // No read: the registry's scheme handler (https/http, SSRF-guarded) loads it.
    else registry.register(common);
  }
  for (const t of rc.templates) {
    const common = {
      uriTemplate: t.uriTemplate,
      name: t.name,
      ...(t.title ? { title: t.title } : {}),
      ...(t.description ? { description: t.description } : {}),
      ...(t.mimeType ? { mimeType: t.mimeType } : {}),
    };
    if (isWorkspaceUri(t.uriTemplate))
      registry.registerTemplate({
        ...common,
        procedure: WORKSPACE_READ_PROCEDURE,
        read: (uri, _vars, _signal, ctx) => readWorkspaceFile(uri, ctx as Context | undefined),
      });
    else registry.registerTemplate({ ...common, read: (uri, _vars, signal) => registry.readThroughScheme(uri, signal) });
  }
  if (rc.workspaceFiles && config.serverWorkspaces.enabled) {
    for (const [id, ws] of Object.entries(config.serverWorkspaces.workspaces)) {
      registry.registerTemplate({
        uriTemplate: `workspace://${encodeURIComponent(id)}/{+path}`,
        name: `${id}-files`,
        title: `${ws.name ?? id}: files`,
        description: `Files of the server workspace "${ws.name ?? id}" (path relative to its root)${ws.description ? `: ${ws.description}` : ''}`,
        procedure: WORKSPACE_READ_PROCEDURE,
        read: (uri, _vars, _signal, ctx) => readWorkspaceFile(uri, ctx as Context | undefined),
      });
    }
  }
}
