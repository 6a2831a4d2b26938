import { provide } from '../../pipeline/provide.js';

/**
 * What the mcp namespace's procedures use, in their ctx: the resource registry, and what the
 * check of a caller's resource rules reads (pipeline/resourceAccess.ts).
 */
export const mcpServices = provide((r) => ({
  resources: r.resources,
  resourceAccess: { resources: r.resources, router: r.router, security: r.security },
}));
