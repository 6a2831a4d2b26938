/**
 * jose, loaded on first use: a server with authentication off (or one that never sees a token)
 * does not load its 180 modules at start-up.
 */
let loading: Promise<typeof import('jose')> | undefined;

export function loadJose(): Promise<typeof import('jose')> {
  return (loading ??= import('jose'));
}
