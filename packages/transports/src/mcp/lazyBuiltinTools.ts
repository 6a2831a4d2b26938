/**
 * Tool name → procedure path of every MCP tool in the built-in namespaces that load on first use
 * (core's routers/appRouter.ts). createServer checks custom tool names against these at start-up
 * without building those namespaces; toolCatalog.test.ts fails when this list and the loaded
 * namespaces disagree.
 */
export const LAZY_BUILTIN_TOOLS: Readonly<Record<string, string>> = {
  generateText: 'ai.generateText',
  streamText: 'ai.streamText',
  listProviders: 'ai.listProviders',
  listAllowedModels: 'ai.listAllowedModels',
  health: 'system.health',
  test: 'system.test',
  getServerWorkspaces: 'system.getServerWorkspaces',
  listFiles: 'system.listFiles',
  readFile: 'system.readFile',
  writeFile: 'system.writeFile',
  pathExists: 'system.pathExists',
  addServerWorkspace: 'system.addServerWorkspace',
  removeServerWorkspace: 'system.removeServerWorkspace',
  registerClientWorkspace: 'system.registerClientWorkspace',
  unregisterClientWorkspace: 'system.unregisterClientWorkspace',
  listClientWorkspaces: 'system.listClientWorkspaces',
  getTokenBalance: 'billing.getTokenBalance',
  getUserTokenBalances: 'billing.getUserTokenBalances',
  getUsageAnalytics: 'billing.getUsageAnalytics',
  planConsumption: 'billing.planConsumption',
  getBudget: 'billing.getBudget',
  checkRequestEligibility: 'user.checkRequestEligibility',
};
