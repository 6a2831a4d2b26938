import { provide } from '../../pipeline/procedures.js';

/** What the mcp namespace's procedures use, in their ctx: the resource registry. */
export const mcpServices = provide((r) => ({ resources: r.resources }));
