import { provide } from '../../pipeline/provide.js';

/** What the system namespace's procedures use, in their ctx: workspaces, client workspaces and the health probes. */
export const systemServices = provide((r) => ({ workspaces: r.workspaces, clientWorkspaces: r.clientWorkspaces, health: r.health }));
