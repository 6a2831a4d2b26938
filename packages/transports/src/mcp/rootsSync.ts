import type { Server } from '@modelcontextprotocol/server';
import type { McpServerDeps } from './sessionState.js';

export interface RootsSync {
  /** The session's GET stream is open: a pending roots/list can go out now. */
  streamOpened(): void;
  /**
   * This server is done. The roots it received stay with the session (a parked session keeps
   * them); McpHandler clears them when the session itself ends.
   */
  close(): void;
}

/**
 * MCP roots → client workspaces. When the client declared `capabilities.roots`, the server
 * asks roots/list once the session is initialized and the client's GET stream is open (a
 * server-initiated request needs that channel), and again on notifications/roots/list_changed.
 * The roots are handed to the client-workspace service for this session.
 */
export function startRootsSync(server: Server, deps: McpServerDeps): RootsSync {
  const { services } = deps;
  let wanted = false;
  let initialized = false;
  let streamOpen = false;
  let inFlight: Promise<void> | undefined;
  let closed = false;

  const fetchRoots = () => {
    if (!wanted || !initialized || !streamOpen || closed) return;
    if (inFlight) {
      // A change arrived while asking: ask again afterwards so the last answer wins.
      void inFlight.then(() => fetchRoots());
      wanted = true;
      return;
    }
    wanted = false;
    inFlight = (async () => {
      const sessionId = deps.sessionId();
      try {
        const { roots } = await server.listRoots(undefined, { timeout: 30_000 });
        if (sessionId && !closed) {
          const kept = services.clientWorkspaces.setSessionRoots(sessionId, roots);
          services.logger.debug('MCP roots received', { sessionId, roots: roots.length, kept });
        }
      } catch (err) {
        services.logger.debug('roots/list failed', { sessionId, error: err instanceof Error ? err.message : String(err) });
      } finally {
        inFlight = undefined;
      }
    })();
  };

  const supportsRoots = () => deps.mode === 'stateful' && Boolean(server.getClientCapabilities()?.roots);
  server.oninitialized = () => {
    initialized = true;
    if (!supportsRoots()) return;
    wanted = true;
    fetchRoots();
  };
  server.setNotificationHandler('notifications/roots/list_changed', () => {
    if (!supportsRoots()) return;
    wanted = true;
    fetchRoots();
  });

  return {
    streamOpened() {
      streamOpen = true;
      fetchRoots();
    },
    close() {
      closed = true;
    },
  };
}
