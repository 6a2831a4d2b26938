import { mkdtemp, readFile, readdir, rm, stat, chmod, mkdir, truncate } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resolveConfig } from '../../config/index.js';
import { createLogger } from '../../kernel/Logger.js';
import { SecurityLog, type SecurityEvent, type SecurityLogSettings } from './SecurityLog.js';
import { mcpAccessRulesActive, toolsListNeedsAuth } from './accessRules.js';
import { checkConfig } from '../../config/resolveConfig.js';

let dir: string;
let lines: string[];
const logger = () => createLogger('debug', (l) => lines.push(l));
const settings = (over: Partial<SecurityLogSettings> = {}): SecurityLogSettings => ({
  enabled: true,
  logLevel: 'warn',
  logToFile: false,
  ...over,
});
const failure: SecurityEvent = {
  type: 'auth_failed',
  reason: 'INVALID_TOKEN',
  message: 'invalid signature',
  transport: 'rpc',
  ip: '10.0.0.9',
  path: 'admin.status',
};

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'seclog-'));
  lines = [];
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SecurityLog', () => {
  it('writes one structured JSON event to the server log', () => {
    new SecurityLog(settings(), logger()).record(failure);
    expect(lines).toHaveLength(1);
    const e = JSON.parse(lines[0]!);
    expect(e).toMatchObject({
      level: 'warn',
      msg: 'security event',
      event: 'security',
      type: 'auth_failed',
      reason: 'INVALID_TOKEN',
      transport: 'rpc',
      ip: '10.0.0.9',
      path: 'admin.status',
    });
  });

  it('records only events at or above logLevel, and nothing when disabled', () => {
    const warnOnly = new SecurityLog(settings({ logLevel: 'warn' }), logger());
    warnOnly.record({ type: 'auth_required', reason: 'UNAUTHORIZED', transport: 'mcp' });
    expect(lines).toHaveLength(0);
    new SecurityLog(settings({ logLevel: 'info' }), logger()).record({ type: 'auth_required', reason: 'UNAUTHORIZED', transport: 'mcp' });
    expect(lines).toHaveLength(1);
    new SecurityLog(settings({ enabled: false }), logger()).record(failure);
    expect(lines).toHaveLength(1);
    expect(warnOnly.wants('rate_limited')).toBe(true);
    expect(warnOnly.wants('auth_required')).toBe(false);
  });

  it('records once per request scope', () => {
    const log = new SecurityLog(settings(), logger());
    const req = {};
    for (let i = 0; i < 5; i++) log.recordOnce(req, failure);
    log.recordOnce({}, failure);
    expect(lines).toHaveLength(2);
  });

  it('clips long texts', () => {
    new SecurityLog(settings(), logger()).record({ ...failure, detail: { requestedPath: '../'.repeat(1000) } });
    expect(JSON.parse(lines[0]!).requestedPath.length).toBeLessThanOrEqual(301);
  });

  it('appends JSON lines to a file created with mode 0600, in order', async () => {
    const file = path.join(dir, 'sub', 'security.log');
    const log = new SecurityLog(settings({ logToFile: true, logFilePath: file }), logger());
    for (let i = 0; i < 50; i++) log.record({ ...failure, path: `p${i}` });
    await log.close();
    const mode = (await stat(file)).mode & 0o777;
    expect(mode).toBe(0o600);
    const written = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(written).toHaveLength(50);
    expect(written.map((e) => e.path)).toEqual(Array.from({ length: 50 }, (_, i) => `p${i}`));
    expect(written[0]).toMatchObject({ event: 'security', type: 'auth_failed', reason: 'INVALID_TOKEN', level: 'warn' });
    expect(typeof written[0].time).toBe('string');
  });

  it('keeps logging to the server log, with one error, when the file cannot be written', async () => {
    const locked = path.join(dir, 'locked');
    await mkdir(locked);
    await chmod(locked, 0o500);
    const log = new SecurityLog(settings({ logToFile: true, logFilePath: path.join(locked, 'x', 'security.log') }), logger());
    log.record(failure);
    log.record(failure);
    await log.close();
    await chmod(locked, 0o700);
    const parsed = lines.map((l) => JSON.parse(l));
    expect(parsed.filter((e) => e.msg === 'security event')).toHaveLength(2);
    // Root ignores directory permissions; then the file simply gets written.
    if (process.getuid?.() !== 0) expect(parsed.filter((e) => e.level === 'error')).toHaveLength(1);
  });

  it('rotates past maxFileBytes and keeps maxFiles rotated files: a flood never grows the disk past (maxFiles + 1) x maxFileBytes', async () => {
    const file = path.join(dir, 'security.log');
    const maxFileBytes = 64 * 1024;
    const log = new SecurityLog(settings({ logToFile: true, logFilePath: file, maxFileBytes, maxFiles: 2 }), logger());
    // About 200 bytes a line: 3,000 lines are about 9 files' worth.
    for (let i = 0; i < 3000; i++) log.record({ ...failure, path: `p${i}` });
    await log.close();
    expect((await readdir(dir)).sort()).toEqual(['security.log', 'security.log.1', 'security.log.2']);
    const read = async (f: string) =>
      (await readFile(f, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).path as string);
    const [oldest, older, live] = await Promise.all([read(`${file}.2`), read(`${file}.1`), read(file)]);
    for (const f of [file, `${file}.1`, `${file}.2`]) {
      expect((await stat(f)).size).toBeLessThanOrEqual(maxFileBytes);
      expect((await stat(f)).mode & 0o777).toBe(0o600);
    }
    // In order across the files, the newest lines kept, nothing cut in the middle of a line.
    const kept = [...oldest, ...older, ...live];
    expect(kept.at(-1)).toBe('p2999');
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => `p${3000 - kept.length + i}`));
  });

  it('does not rotate a file an outside tool truncated (copytruncate): its real size is read first', async () => {
    const file = path.join(dir, 'security.log');
    const log = new SecurityLog(settings({ logToFile: true, logFilePath: file, maxFileBytes: 64 * 1024 }), logger());
    for (let i = 0; i < 250; i++) log.record({ ...failure, path: `a${i}` });
    // Truncate only once all 250 lines are on disk (a fixed sleep raced a loaded machine's writes).
    await vi.waitFor(async () => expect((await readFile(file, 'utf8')).split('\n').length).toBe(251), {
      timeout: 5000,
    });
    await truncate(file, 0);
    for (let i = 0; i < 250; i++) log.record({ ...failure, path: `b${i}` });
    await log.close();
    expect(await readdir(dir)).toEqual(['security.log']);
  });

  it('defaults the file to <storage.dir>/security.log', () => {
    const config = resolveConfig({ storage: { type: 'memory', dir }, mcp: { securityLogging: { logToFile: true } } });
    expect(SecurityLog.fromConfig(config, logger()).settings.logFilePath).toBe(path.join(dir, 'security.log'));
  });
});

describe('access rules and mcp.authEnforcement', () => {
  const cfg = (mcp: Record<string, unknown>) => resolveConfig({ storage: { type: 'memory' }, mcp });

  it('are on by default and off with authType none', () => {
    expect(mcpAccessRulesActive(cfg({}))).toBe(true);
    expect(mcpAccessRulesActive(cfg({ auth: { authType: 'none' } }))).toBe(false);
    expect(toolsListNeedsAuth(cfg({ auth: { requireAuthForToolsList: true } }))).toBe(true);
  });

  it('are lifted by authEnforcement { enabled: true, requireAuth: false } only', () => {
    expect(mcpAccessRulesActive(cfg({ authEnforcement: { enabled: true, requireAuth: false } }))).toBe(false);
    expect(toolsListNeedsAuth(cfg({ auth: { requireAuthForToolsList: true }, authEnforcement: { requireAuth: false } }))).toBe(false);
    // enabled: false means "no override": mcp.auth applies as configured.
    expect(mcpAccessRulesActive(cfg({ authEnforcement: { enabled: false, requireAuth: false } }))).toBe(true);
  });

  it('refuses requireValidSession false (removed: OAuth tokens always need a live session) and accepts true', () => {
    const r = checkConfig({
      storage: { type: 'memory' },
      mcp: { auth: { oauth: { requireValidSession: false } }, authEnforcement: { requireValidSession: false } },
    });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problems.map((p) => p.path).sort()).toEqual([
        'mcp.auth.oauth.requireValidSession',
        'mcp.authEnforcement.requireValidSession',
      ]);
      for (const p of r.problems) expect(p.message).toMatch(/no longer accepted.*oauth\.sessionCacheMs/);
    }
    const ok = cfg({ auth: { oauth: { requireValidSession: true } }, authEnforcement: { requireValidSession: true } });
    expect('requireValidSession' in ok.mcp.auth.oauth).toBe(false);
    expect('requireValidSession' in ok.mcp.authEnforcement).toBe(false);
  });
});
