/**
 * A process that embeds the server and stops it must end by itself: server.stop() with MCP 2025
 * sessions open (live and parked, each with its GET stream), a tool call in flight and a
 * 2026-07-28 subscriptions/listen stream returns within the grace period, and leaves no timer,
 * socket or handle that keeps Node's event loop alive (the script never calls process.exit).
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const SCRIPT = fileURLToPath(new URL('./helpers/stopWithOpenMcpServer.ts', import.meta.url));

describe('server.stop() with MCP sessions open', () => {
  it('returns within the grace period and the process then exits on its own', async () => {
    const proc = spawn(process.execPath, ['--conditions=ai-backend-source', '--import', tsxLoader, SCRIPT], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    let reported: { stopMs: number; listen: number } | undefined;
    const exited = await new Promise<number | null>((resolve) => {
      // Start-up from the sources takes a few seconds on a loaded machine; the exit after stop must not.
      const limit = setTimeout(() => {
        proc.kill('SIGKILL');
        resolve(null);
      }, 60_000);
      proc.stdout.on('data', () => {
        if (reported || !out.includes('\n')) return;
        reported = JSON.parse(out.split('\n')[0]!);
        // Reported: the process has 5 s to end by itself.
        clearTimeout(limit);
        setTimeout(() => {
          if (proc.exitCode === null) proc.kill('SIGKILL');
        }, 5000);
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(limit);
        resolve(signal ? null : code);
      });
    });
    expect(reported, `the script did not report its stop: ${err}`).toBeDefined();
    expect(reported!.listen).toBe(200);
    // The in-flight call is cut at the 1 s grace period, not waited for.
    expect(reported!.stopMs).toBeLessThan(3000);
    expect(exited, `the process did not end by itself after stop (stderr: ${err})`).toBe(0);
  }, 90_000);
});
