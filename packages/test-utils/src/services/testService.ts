import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { expect, inject } from 'vitest';
import { probeServices, servicesRequired, type ServiceMap, type ServiceName, type ServiceStatus } from './probeServices.js';

let fallback: Promise<ServiceMap> | undefined;

async function services(): Promise<ServiceMap> {
  // Provided by servicesGlobalSetup; probed here only when a file runs under another config.
  const provided = inject('aiBackendServices');
  return provided ?? (await (fallback ??= probeServices()));
}

/**
 * The service a suite needs, for `describe.skipIf(!svc.ok)` or `ctx.skip()`: call it at the top
 * of the test file (top-level await). When the service is missing, the file is recorded for the
 * end-of-run summary line; under AI_BACKEND_REQUIRE_SERVICES=1 this throws instead, so CI fails
 * rather than skips.
 *
 * @example
 * const redis = await testService('redis');
 * describe.skipIf(!redis.ok)('on redis', () => { ... redis.host, redis.port ... });
 */
export async function testService(name: ServiceName): Promise<ServiceStatus> {
  const status = (await services())[name];
  if (!status.ok) {
    if (servicesRequired()) throw new Error(`${name} is required (AI_BACKEND_REQUIRE_SERVICES=1): ${status.detail}; ${status.hint}`);
    const dir = inject('aiBackendSkipDir');
    const testPath = expect.getState().testPath;
    const file = testPath ? path.relative(process.cwd(), testPath) : undefined;
    if (dir) appendFileSync(path.join(dir, 'skipped.jsonl'), `${JSON.stringify({ service: name, file })}\n`);
  }
  return status;
}

/** Several services at once; `ok` only when all of them are there. */
export async function testServices(...names: ServiceName[]): Promise<{ ok: boolean } & Partial<Record<ServiceName, ServiceStatus>>> {
  const found = await Promise.all(names.map(testService));
  return { ok: found.every((s) => s.ok), ...Object.fromEntries(found.map((s) => [s.name, s])) };
}
