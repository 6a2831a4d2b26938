import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import type { Runtime } from '@ai-backend/core/internal';
import { waitFor } from '@ai-backend/test-utils';

const require = createRequire(import.meta.url);

/** The entry scripts of the real MCP servers from npm the gateway tests run. */
export const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

/**
 * Waits until every upstream MCP server of a server's gateway is connected and listed (or, with
 * `state: 'failed'`, has given up; with `'settled'`, is either: neither idle nor connecting), naming
 * what it waited for and each server's last status (state and error) when it times out.
 */
export async function waitForUpstreams(
  runtime: Pick<Runtime, 'gateway'>,
  { timeoutMs = 30_000, state = 'ready' }: { timeoutMs?: number; state?: 'ready' | 'failed' | 'settled' } = {},
): Promise<void> {
  const reached =
    state === 'settled'
      ? (s: { state: string }) => s.state !== 'idle' && s.state !== 'connecting'
      : (s: { state: string }) => s.state === state;
  await waitFor(
    () => {
      const status = runtime.gateway.status();
      // Thrown rather than returned false: waitFor's timeout then quotes the servers' status.
      if (!status.every(reached)) throw new Error(`upstream status: ${JSON.stringify(status)}`);
      return true;
    },
    { timeoutMs, what: `every upstream MCP server ${state}` },
  );
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * server-everything in its Streamable HTTP mode (`node dist/index.js streamableHttp`, PORT from the
 * environment), or in the legacy HTTP+SSE mode (`sse`: GET /sse, POST /message).
 */
export async function startEverythingHttp(
  port?: number,
  mode: 'streamableHttp' | 'sse' = 'streamableHttp',
): Promise<{ url: string; port: number; child: ChildProcess; sessions: UpstreamSessions; stop(): Promise<void> }> {
  const p = port ?? (await freePort());
  const child = spawn(process.execPath, [EVERYTHING, mode], {
    env: { ...process.env, PORT: String(p) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const sessions = countSessions(child);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server-everything did not start')), 30_000);
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      if (err.includes('listening on port') || err.includes('running on port')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited ${code}: ${err}`)));
  });
  return {
    url: `http://127.0.0.1:${p}/${mode === 'sse' ? 'sse' : 'mcp'}`,
    port: p,
    child,
    sessions,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

/** The sessions a Streamable HTTP server-everything opened and closed so far, from what it logs on stdout. */
export interface UpstreamSessions {
  opened: number;
  closed: number;
}

/**
 * Count the sessions server-everything logs ("Session initialized with ID …" when one opens,
 * "Transport closed for session … removing" when a DELETE or a close ends it). It keeps every
 * session it never hears the end of, for as long as it runs. Its stdout is read line by line
 * and dropped (it logs every request: an unread pipe would stall it).
 */
function countSessions(child: ChildProcess): UpstreamSessions {
  const counts = { opened: 0, closed: 0 };
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.startsWith('Session initialized with ID')) counts.opened++;
      else if (line.startsWith('Transport closed for session')) counts.closed++;
    }
  });
  return counts;
}
