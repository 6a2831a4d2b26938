import { provide } from '../../pipeline/provide.js';

/**
 * What the admin namespace's procedures use, in their ctx: the operator's view reaches most
 * services (statistics, users, billing, keys, alerts, caches, retention), but not the transports'
 * (rate limits, security log, MCP sessions) nor the gateway.
 */
export const adminServices = provide((r) => ({
  config: r.config,
  storage: r.storage,
  logger: r.logger,
  ai: r.ai,
  alerts: r.alerts,
  billing: r.billing,
  caches: r.caches,
  health: r.health,
  keys: r.keys,
  metrics: r.metrics,
  recentCalls: r.recentCalls,
  retention: r.retention,
  signals: r.signals,
  stats: r.stats,
  users: r.users,
  vault: r.vault,
}));
