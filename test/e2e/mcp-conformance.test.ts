/**
 * The official MCP conformance suite against examples/mcp-conformance, with no
 * expected-failures baseline: every server scenario must pass.
 *
 * Version: @modelcontextprotocol/conformance 0.1.13, the newest that runs on Node 20 (0.1.16
 * needs Node 22's fs.globSync). Its 32 server scenarios are the same as 0.1.16's (compared
 * side by side: the scenario code differs only in minified identifiers), so running 0.1.16 would
 * need a 185 MB Node 22 download on every CI run for no extra coverage.
 * We run `--suite all`: the active suite plus the two pending scenarios (json-schema-2020-12,
 * server-sse-polling).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConformanceServer } from '../../examples/mcp-conformance/start.js';

const CLI = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url));

function runCli(args: string[], timeoutMs = 120_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
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

describe('MCP conformance suite (0.1.13) against examples/mcp-conformance', () => {
  let stop: () => Promise<void>;
  let mcpUrl: string;

  beforeAll(async () => {
    const started = await startConformanceServer({ port: 0 });
    stop = () => started.server.stop();
    mcpUrl = started.mcpUrl;
  });
  afterAll(async () => stop?.());

  it('passes every server scenario (active and pending), no baseline', async () => {
    const list = await runCli(['list', '--server']);
    const scenarios = [...list.out.matchAll(/^\s+- (\S+)$/gm)].map((m) => m[1]!);
    expect(scenarios.length).toBeGreaterThanOrEqual(32);
    expect(scenarios).toContain('tools-call-sampling');

    const run = await runCli(['server', '--url', mcpUrl, '--suite', 'all']);
    const lines = [...run.out.matchAll(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed/gm)];
    const results = new Map(lines.map((m) => [m[2]!, { ok: m[1] === '✓', failed: Number(m[4]) }]));
    const missingOrFailed = scenarios.filter((s) => !results.get(s)?.ok || results.get(s)!.failed > 0);
    expect(missingOrFailed, run.out.slice(-4000)).toEqual([]);
    expect(run.out).toMatch(/Total: \d+ passed, 0 failed/);
    expect(run.code).toBe(0);
  }, 180_000);
});
