import { provide } from '../../pipeline/provide.js';

/** What the gateway namespace's procedures use, in their ctx: the MCP gateway and the users' upstream credentials. */
export const gatewayServices = provide((r) => ({ config: r.config, gateway: r.gateway, upstreamCredentials: r.upstreamCredentials }));
