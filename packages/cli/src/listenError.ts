/** What Node's `listen` puts on the error it fails with. */
interface ListenFailure {
  code?: string;
  address?: string;
  port?: number;
  /** Set instead of `address` when the host name did not resolve (getaddrinfo). */
  hostname?: string;
}

/**
 * `serve`'s message for a listen that failed, saying what to change; undefined for any other error
 * (printed as it is). Node's own words (`listen EADDRINUSE: address already in use`) name the
 * errno, not the flag that fixes it. The address and port come from the error, so the metrics
 * listener's port is named when it is the one taken.
 */
export function listenErrorMessage(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const { code, address, port, hostname } = err as ListenFailure;
  if (code === 'ENOTFOUND' && hostname !== undefined) {
    // `[::1]` as written in URLs is the usual one: listen takes the address without the brackets.
    const bare = /^\[(.*)\]$/.exec(hostname)?.[1];
    return `cannot listen on ${hostname}: no address found for that name; --host takes an address of this machine${bare ? ` without brackets (--host ${bare})` : ' (127.0.0.1, ::1, 0.0.0.0) or a name that resolves to one'}`;
  }
  if (address === undefined) return undefined;
  // Node leaves the port out when it was 0 (any free one).
  const host = address.includes(':') ? `[${address}]` : address;
  const where = port ? `${host}:${port}` : host;
  switch (code) {
    case 'EADDRINUSE':
      return `${where} is already in use (another ai-backend server, or another program): stop it, or choose another port with --port N (or port in the config; --port 0 picks a free one)`;
    case 'EACCES':
      return `not allowed to listen on ${where}: ports below 1024 need privileges; choose another with --port N (the default is 8000)`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: ${address} is not an address of this machine; choose another with --host (127.0.0.1 for this machine only, 0.0.0.0 for every interface)`;
    default:
      return undefined;
  }
}
