// `node scripts/audit.mjs` (or `pnpm audit-deps`): the dependency audit of CI (docs/publishing.md,
// "Supply chain"). Policy: an advisory of severity high or critical in a production dependency
// (what users install: `pnpm audit --prod`) fails, unless audit-allowlist.json accepts it with a
// reason and an expiry date; an expired or incomplete entry fails too, so an acceptance is
// re-decided rather than forgotten. Moderate and low advisories are printed, not failed.
// Exit codes: 0 passed, 1 failed (advisories or allowlist), 2 NOT RUN (the registry's audit
// endpoint did not answer usably): never a silent pass; .ci/run reports it in its summary.
// Env: AI_BACKEND_AUDIT_ALLOWLIST (the allowlist file; default audit-allowlist.json at the root),
// AI_BACKEND_AUDIT_REGISTRY (another registry's audit endpoint, for a mirror; only the audit uses it,
// not npx fetching pnpm).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FAILING = new Set(['high', 'critical']);
const viaPnpm = process.env.npm_execpath?.includes('pnpm');
const PNPM = viaPnpm ? [process.execPath, [process.env.npm_execpath]] : ['npx', ['-y', 'pnpm@10.34.9']];

const allowFile = path.resolve(process.env.AI_BACKEND_AUDIT_ALLOWLIST ?? path.join(ROOT, 'audit-allowlist.json'));
const allowlist = existsSync(allowFile) ? JSON.parse(readFileSync(allowFile, 'utf8')) : [];
const problems = [];
const today = new Date().toISOString().slice(0, 10);
const accepted = new Map();
for (const [i, e] of allowlist.entries()) {
  if (!e?.id || !e.reason || !/^\d{4}-\d{2}-\d{2}$/.test(e.expires ?? ''))
    problems.push(`${path.basename(allowFile)} entry ${i}: needs id, reason and expires (YYYY-MM-DD)`);
  else if (e.expires < today)
    problems.push(`${path.basename(allowFile)}: the acceptance of ${e.id} expired on ${e.expires} (${e.reason}): fix it or decide again`);
  else accepted.set(e.id, e);
}

const r = spawnSync(
  PNPM[0],
  [
    ...PNPM[1],
    'audit',
    '--prod',
    '--json',
    ...(process.env.AI_BACKEND_AUDIT_REGISTRY ? ['--registry', process.env.AI_BACKEND_AUDIT_REGISTRY] : []),
  ],
  { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
);
let report;
try {
  report = JSON.parse(r.stdout);
} catch {
  report = { error: { message: `no JSON from pnpm audit (exit ${r.status}): ${(r.stderr || r.stdout).slice(0, 500)}` } };
}
if (report.error || !report.advisories) {
  console.error(`audit: NOT RUN: ${report.error?.message ?? 'no advisories in the answer'}`);
  process.exit(2);
}

for (const a of Object.values(report.advisories)) {
  const id = a.github_advisory_id ?? String(a.id);
  const where = `${a.module_name} ${(a.findings ?? []).map((f) => f.version).join(', ')}`;
  const line = `${a.severity} ${id} ${where}: ${a.title} (${a.url})`;
  if (!FAILING.has(a.severity)) console.log(`audit: ${line} (below the failing severity)`);
  else if (accepted.has(id)) console.log(`audit: ${line} accepted until ${accepted.get(id).expires}: ${accepted.get(id).reason}`);
  else problems.push(line);
}
for (const p of problems) console.error(`audit: ${p}`);
if (problems.length) process.exit(1);
console.log(
  `audit: passed (${Object.keys(report.advisories).length} advisories in production dependencies, none high or critical unaccepted)`,
);
