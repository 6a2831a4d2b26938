import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * scripts/audit.mjs, CI's dependency audit (docs/publishing.md, "Supply chain"), against a local
 * registry whose audit endpoint answers what each case needs: the real `pnpm audit` reads this
 * repository's lockfile and posts it there, so the policy is checked end to end without
 * depending on what advisories exist today (or on the public endpoint, which answers 405 on
 * some networks).
 */
const ROOT = join(import.meta.dirname, '..', '..');
const advisory = (severity: string, id: string) => ({
  id: 1,
  github_advisory_id: id,
  module_name: 'hono',
  severity,
  title: `test advisory ${id}`,
  url: `https://github.com/advisories/${id}`,
  findings: [{ version: '4.0.0', paths: ['packages__core>hono'] }],
});
let answer: { status: number; body: unknown } = { status: 200, body: {} };
let posted = 0;
let server: Server;
let registry: string;
const dir = mkdtempSync(join(tmpdir(), 'audit-test-'));

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST' && req.url?.includes('/-/npm/v1/security/audits')) posted++;
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => {
  server?.close();
  rmSync(dir, { recursive: true, force: true });
});

function audit(allow: unknown[]): Promise<{ code: number; out: string }> {
  const file = join(dir, `allow-${Math.random()}.json`);
  writeFileSync(file, JSON.stringify(allow));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'scripts/audit.mjs')],
      { cwd: ROOT, env: { ...process.env, AI_BACKEND_AUDIT_REGISTRY: registry, AI_BACKEND_AUDIT_ALLOWLIST: file } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}
const report = (...advisories: Array<ReturnType<typeof advisory>>) => ({
  status: 200,
  body: {
    actions: [],
    advisories: Object.fromEntries(advisories.map((a, i) => [String(i + 1), a])),
    muted: [],
    metadata: {
      vulnerabilities: Object.fromEntries(
        ['info', 'low', 'moderate', 'high', 'critical'].map((s) => [s, advisories.filter((a) => a.severity === s).length]),
      ),
      dependencies: 1,
      devDependencies: 0,
      optionalDependencies: 0,
      totalDependencies: 1,
    },
  },
});

describe('dependency audit policy', () => {
  it('a high advisory in a production dependency fails, naming it', async () => {
    answer = report(advisory('high', 'GHSA-test-high-0001'));
    const before = posted;
    const r = await audit([]);
    expect(posted).toBeGreaterThan(before);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain('GHSA-test-high-0001');
  }, 60_000);

  it('moderate and low are printed, not failed', async () => {
    answer = report(advisory('moderate', 'GHSA-test-mod-0001'), advisory('low', 'GHSA-test-low-0001'));
    const r = await audit([]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('GHSA-test-mod-0001');
  }, 60_000);

  it('an allowlisted critical passes until its expiry; expired or without a reason it fails', async () => {
    answer = report(advisory('critical', 'GHSA-test-crit-0001'));
    const ok = await audit([{ id: 'GHSA-test-crit-0001', reason: 'not reachable: we never call the affected API', expires: '2999-01-01' }]);
    expect(ok.code, ok.out).toBe(0);
    expect(ok.out).toContain('accepted until 2999-01-01');
    const expired = await audit([{ id: 'GHSA-test-crit-0001', reason: 'was not reachable', expires: '2020-01-01' }]);
    expect(expired.code, expired.out).toBe(1);
    expect(expired.out).toContain('expired on 2020-01-01');
    const noReason = await audit([{ id: 'GHSA-test-crit-0001', expires: '2999-01-01' }]);
    expect(noReason.code, noReason.out).toBe(1);
  }, 60_000);

  it('an endpoint that does not answer usably is NOT RUN (exit 2), never a pass', async () => {
    answer = { status: 405, body: {} };
    const r = await audit([]);
    expect(r.code, r.out).toBe(2);
    expect(r.out).toContain('audit: NOT RUN');
  }, 60_000);
});
