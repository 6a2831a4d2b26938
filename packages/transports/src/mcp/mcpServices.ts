import { entryGateway, type EntryGateway, type Runtime } from '@ai-backend/core/internal';

/**
 * What the MCP layer uses of the server besides its entry gateway (config, logger, router, request
 * scopes): the services of one MCP server, shared state (session records, event stores, tasks),
 * cross-instance signals, the user index, rate limits and security events. createServer builds it
 * once (mcpServices) and hands it to McpHandler with the gateway (McpHandlerDeps).
 */
export type McpServices = Pick<
  Runtime,
  'prompts' | 'resources' | 'gateway' | 'clientWorkspaces' | 'shared' | 'signals' | 'users' | 'rateLimit' | 'security'
>;

/** The MCP services of a runtime (what createServer and the tests hand to McpHandler). */
export function mcpServices(runtime: Runtime): McpServices {
  const { prompts, resources, gateway, clientWorkspaces, shared, signals, users, rateLimit, security } = runtime;
  return { prompts, resources, gateway, clientWorkspaces, shared, signals, users, rateLimit, security };
}

/** What an McpHandler is built from: the entry gateway every entry point gets, and the MCP services. */
export interface McpHandlerDeps {
  readonly entry: EntryGateway;
  readonly services: McpServices;
}

/** The deps of an McpHandler on a runtime: its entry gateway and its MCP services, picked once. */
export function mcpHandlerDeps(runtime: Runtime): McpHandlerDeps {
  return { entry: entryGateway(runtime), services: mcpServices(runtime) };
}
