import type { AnyRouter } from '@trpc/server';
import { createHttpSchemeHandlers } from './httpSchemeHandler.js';
import { ResourceRegistry } from './ResourceRegistry.js';
import { registerRouterResources } from './resourcesFromRouter.js';
import { connectWorkspaceResources, type WorkspaceFiles } from './workspaceSchemeHandler.js';

/**
 * The runtime's registry: http(s) and workspace:// handlers, workspace watching wired to
 * resource updates, and every procedure published as a resource.
 */
export function createResourceRegistry(router: AnyRouter, workspaces?: WorkspaceFiles): ResourceRegistry {
  const registry = new ResourceRegistry();
  for (const handler of createHttpSchemeHandlers()) registry.registerScheme(handler);
  if (workspaces) connectWorkspaceResources(workspaces, registry);
  registerRouterResources(router, registry);
  return registry;
}
