/**
 * Per-user credentials of `perUser` servers (the credentials part of the gateway: static headers
 * in the vault, or OAuth tokens to the upstream). 'missing' and 'expired' reach the caller as a
 * tool error with `message`, which says how to (re)connect.
 */
export type Resolved = { kind: 'headers'; headers: Record<string, string> } | { kind: 'missing' | 'expired'; message: string };
export interface GatewayCredentials {
  resolve(req: { server: { name: string; url: string }; userId: string }): Promise<Resolved>;
  /** The upstream answered 401 to `headers`: fresh ones (a refreshed token), or why there are none. */
  rejected(req: { server: { name: string; url: string }; userId: string; headers: Record<string, string> }): Promise<Resolved>;
}
