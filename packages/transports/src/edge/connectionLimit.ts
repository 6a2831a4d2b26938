import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';

/**
 * This process's soft open-file limit (Linux `/proc/self/limits`; Node raises the soft limit to
 * the hard one at start), or undefined where it cannot be read or is unlimited.
 */
export function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m && m[1] !== 'unlimited') return Number(m[1]);
  } catch {
    // Not Linux: no cheap way to read RLIMIT_NOFILE from Node.
  }
  return undefined;
}

/**
 * The default of `limits.maxConnections` for a process that may open `soft` descriptors: half of
 * them, so connections that only sit there (idle keep-alive, a slow client, a flood) can never take
 * the descriptors storage, upstream calls and the streams' upstream sides need (the streams are at
 * most a third, `limits.maxSseStreams`). Between 64 and 32768; 4096 where the limit is unknown.
 */
export function connectionLimitFor(soft: number | undefined): number {
  if (soft === undefined || !Number.isFinite(soft)) return 4096;
  return Math.max(64, Math.min(32_768, Math.floor(soft / 2)));
}

/** How often a server at its connection limit says so in the log. */
const DROP_WARN_MS = 10_000;

/**
 * Apply `limits.maxConnections` to a listening Node server: connections past the limit are closed
 * by Node as they arrive (its `drop` event), and a warning says so at most every 10 s.
 */
export function limitConnections(
  server: Server,
  max: number | undefined,
  warn: (msg: string, fields: Record<string, unknown>) => void,
): void {
  const limit = max ?? connectionLimitFor(openFileLimit());
  server.maxConnections = limit;
  let dropped = 0;
  let lastWarn = -Infinity;
  server.on('drop', () => {
    dropped++;
    const now = performance.now();
    if (now - lastWarn < DROP_WARN_MS) return;
    lastWarn = now;
    warn('connection limit reached: new connections are closed (limits.maxConnections)', { limit, dropped });
    dropped = 0;
  });
}
