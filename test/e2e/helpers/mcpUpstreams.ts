import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The entry scripts of the real MCP servers from npm the gateway tests run. */
export const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

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
): Promise<{ url: string; port: number; child: ChildProcess; stop(): Promise<void> }> {
  const p = port ?? (await freePort());
  const child = spawn(process.execPath, [EVERYTHING, mode], {
    env: { ...process.env, PORT: String(p) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
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
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
