import { provide } from '../../pipeline/provide.js';

/** What the mcp namespace's procedures use, in their ctx: the resource registry. */
export const mcpServices = provide((r) => ({ resources: r.resources }));
