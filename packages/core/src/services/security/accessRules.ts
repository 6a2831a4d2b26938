import type { ResolvedConfig } from '../../config/schema.js';

/**
 * Are the MCP access rules (requireAuthForToolsList, requireAuthForToolsCall) in force?
 *
 * Off with authType 'none', and when the operator switches them off through
 * `mcp.authEnforcement: { enabled: true, requireAuth: false }`. Either way only the MCP rules
 * are lifted: a presented credential is still verified (and refused when invalid), protected
 * procedures still need an identity and administrator procedures an administrator.
 * `authEnforcement.enabled: false` means "no override": the `mcp.auth` rules apply as configured.
 * Resolved once in the config (`config.auth`, see config/resolveAuth.ts); this reads it.
 */
export function mcpAccessRulesActive(config: Pick<ResolvedConfig, 'auth'>): boolean {
  return config.auth.mcpAccessRulesActive;
}

/** MCP access rule 1: does tools/list need an authenticated caller? */
export function toolsListNeedsAuth(config: Pick<ResolvedConfig, 'auth'>): boolean {
  return config.auth.toolsListNeedsAuth;
}
