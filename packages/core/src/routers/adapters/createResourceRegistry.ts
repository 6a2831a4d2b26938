import type { AnyRouter } from '@trpc/server';
import type { ResolvedConfig } from '../../config/schema.js';
import { registerConfigResources } from './configResources.js';
import { createHttpSchemeHandlers } from '../../services/resources/httpSchemeHandler.js';
import { ResourceRegistry } from '../../services/resources/ResourceRegistry.js';
import { registerRouterResources } from './resourcesFromRouter.js';
import { connectWorkspaceResources, type WorkspaceFiles } from '../../services/resources/workspaceSchemeHandler.js';

/**
 * The runtime's registry: http(s) and workspace:// handlers, workspace watching wired to
 * resource updates, every procedure published as a resource, and `config.resources`.
 */
export function createResourceRegistry(router: AnyRouter, workspaces?: WorkspaceFiles, config?: ResolvedConfig): ResourceRegistry {
  const registry = new ResourceRegistry();
  for (const handler of createHttpSchemeHandlers(config?.resources.fetch)) registry.registerScheme(handler);
  if (workspaces) connectWorkspaceResources(workspaces, registry);
  registerRouterResources(router, registry);
  if (config) registerConfigResources(config, registry);
  return registry;
}
