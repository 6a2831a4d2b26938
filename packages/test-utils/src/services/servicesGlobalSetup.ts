import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { probeServices, redisAnswers, servicesRequired, type ServiceMap, type ServiceName } from './probeServices.js';
import { waitFor } from '../waitFor.js';

declare module 'vitest' {
  export interface ProvidedContext {
    aiBackendServices: ServiceMap;
    /** A directory where test files record the services they had to skip. */
    aiBackendSkipDir: string;
  }
}

export const SKIP_FILE = 'skipped.jsonl';

let privateRedis: ChildProcess | undefined;
let skipDir: string | undefined;
let lastServices: ServiceMap | undefined;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Start a throwaway redis-server (no persistence) and wait until it answers PING. */
async function startPrivateRedis(bin: string, dir: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  const failed = new Promise<never>((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
  // Polling the child's port: no event says "listening".
  const ready = waitFor(() => redisAnswers('127.0.0.1', port), {
    timeoutMs: 5000,
    intervalMs: 50,
    what: 'the private redis-server answering PING',
  });
  await Promise.race([ready, failed]);
  return { child, port };
}

/**
 * Vitest globalSetup: probe Redis, PostgreSQL, the redis-server binary and Chromium once, start a
 * private Redis when none answers but the binary exists, and hand the result to the test files.
 * Under AI_BACKEND_REQUIRE_SERVICES=1 (CI) a missing service fails the run here.
 */
export async function setup(project: TestProject): Promise<void> {
  skipDir = mkdtempSync(path.join(os.tmpdir(), 'ai-backend-test-services-'));
  const services = await probeServices();
  const bin = services['redis-server'].path;
  if (!services.redis.ok && bin) {
    try {
      const started = await startPrivateRedis(bin, skipDir);
      privateRedis = started.child;
      services.redis = {
        ...services.redis,
        ok: true,
        host: '127.0.0.1',
        port: started.port,
        started: true,
        detail: `started ${bin} on 127.0.0.1:${started.port}`,
      };
    } catch (err) {
      services.redis = { ...services.redis, detail: `${services.redis.detail}; starting ${bin} failed: ${(err as Error).message}` };
    }
  }
  const missing = Object.values(services).filter((s) => !s.ok);
  if (servicesRequired() && missing.length > 0) {
    privateRedis?.kill();
    throw new Error(`AI_BACKEND_REQUIRE_SERVICES=1 but ${missing.map((s) => `${s.name} (${s.detail}; ${s.hint})`).join(', ')}`);
  }
  lastServices = services;
  project.provide('aiBackendServices', services);
  project.provide('aiBackendSkipDir', skipDir);
}

/** One line naming each service that suites skipped for, and how to get it. */
export function skipSummary(records: { service: ServiceName; file?: string }[], services: ServiceMap | undefined): string | undefined {
  if (records.length === 0) return undefined;
  const byService = new Map<ServiceName, Set<string>>();
  for (const r of records) {
    const files = byService.get(r.service) ?? new Set<string>();
    files.add(r.file ?? '?');
    byService.set(r.service, files);
  }
  const parts = [...byService].map(([name, files]) => {
    const s = services?.[name];
    return `${name} (${files.size} file${files.size === 1 ? '' : 's'}; ${s?.detail ?? 'missing'}; to run them: ${s?.hint ?? 'see docs/testing.md'})`;
  });
  return `Skipped for missing services: ${parts.join(' | ')}`;
}

export async function teardown(): Promise<void> {
  privateRedis?.kill();
  if (!skipDir) return;
  let lines: string[] = [];
  try {
    lines = readFileSync(path.join(skipDir, SKIP_FILE), 'utf8').split('\n').filter(Boolean);
  } catch {
    // nothing was skipped
  }
  const summary = skipSummary(
    lines.map((l) => JSON.parse(l) as { service: ServiceName; file?: string }),
    lastServices,
  );
  rmSync(skipDir, { recursive: true, force: true });
  if (summary) process.stdout.write(`\n${summary}\n`);
}
