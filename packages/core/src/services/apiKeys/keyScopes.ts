/**
 * The scopes that widen what an API key may call (docs/security.md "What an API key may call").
 * They name capabilities of a key, not of its owner: the owner may give them to any of their keys
 * (a key never does more than its owner could), unlike the administrator scope, which needs the
 * owner to be an administrator at every call.
 */
export const KEY_SCOPES = {
  /** keys.list / keys.get see the owner's other keys too (without it, a key sees only itself). */
  keysRead: 'keys:read',
  /** Read the owner's account: profile, status, stored provider keys (masked), BYOK status, purchases. */
  accountRead: 'account:read',
  /** system.writeFile: write files in a workspace. */
  filesWrite: 'files:write',
  /** Register and unregister the owner's client workspaces. */
  workspacesWrite: 'workspaces:write',
} as const;

export type KeyScope = (typeof KEY_SCOPES)[keyof typeof KEY_SCOPES];

/** Every built-in key scope. */
export const BUILT_IN_KEY_SCOPES: readonly string[] = Object.values(KEY_SCOPES);
