import type { ResolvedConfig } from '../../config/schema.js';
import type { Logger } from '../../kernel/Logger.js';

/**
 * Are the MCP access rules (requireAuthForToolsList, requireAuthForToolsCall) in force?
 *
 * Off with authType 'none', and when the operator switches them off through
 * `mcp.authEnforcement: { enabled: true, requireAuth: false }`. Either way only the MCP rules
 * are lifted: a presented credential is still verified (and refused when invalid), protected
 * procedures still need an identity and administrator procedures an administrator.
 * `authEnforcement.enabled: false` means "no override": the `mcp.auth` rules apply as configured.
 */
export function mcpAccessRulesActive(config: ResolvedConfig): boolean {
  if (config.mcp.auth.authType === 'none') return false;
  const enforcement = config.mcp.authEnforcement;
  return !(enforcement.enabled && !enforcement.requireAuth);
}

/** MCP access rule 1: does tools/list need an authenticated caller? */
export function toolsListNeedsAuth(config: ResolvedConfig): boolean {
  return mcpAccessRulesActive(config) && config.mcp.auth.requireAuthForToolsList;
}

/**
 * Settings we do not honour because honouring them would weaken security: say so at start-up
 * instead of silently ignoring them. OAuth access tokens are always tied to a live session
 * (their `sid`): signing out, refresh-token reuse or a new encryption key revokes them.
 */
export function warnIgnoredAuthSettings(config: ResolvedConfig, logger: Pick<Logger, 'warn'>): void {
  const ignored: string[] = [];
  if (!config.mcp.auth.oauth.requireValidSession) ignored.push('mcp.auth.oauth.requireValidSession');
  if (config.mcp.authEnforcement.enabled && !config.mcp.authEnforcement.requireValidSession) ignored.push('mcp.authEnforcement.requireValidSession');
  if (ignored.length) {
    logger.warn(`${ignored.join(' and ')} false is not honoured: OAuth access tokens are only accepted while their session exists`, { see: 'docs/security.md' });
  }
}
