import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as internal from './internal.js';
import * as publicEntry from './index.js';

/**
 * `@ai-backend/core` exports what the docs document, no more: adding a name to the public entry is
 * a decision made here (and in the docs), not a side effect of `export *`. Everything else stays
 * reachable for the workspace packages through `@ai-backend/core/internal`.
 */
const PUBLIC_VALUES = [
  'ALERT_SIGNATURE_HEADER',
  'ConfigError',
  'ConfigSchema',
  'CoreError',
  'ENV_VARIABLES',
  'KEY_SCOPES',
  'MemoryStorage',
  'adminProcedure',
  'checkConfig',
  'configFromEnv',
  'createHttpSchemeHandlers',
  'createStorage',
  'defineConfig',
  'handlePurchaseWebhook',
  'isCoreError',
  'mergeConfig',
  'mergeRouters',
  'middleware',
  'protectedProcedure',
  'publicProcedure',
  'redactConfig',
  'resolveConfig',
  'router',
  'signAlert',
  'verifyAlertSignature',
  'verifyPurchaseWebhook',
  'withServices',
];

describe('the public surface of @ai-backend/core', () => {
  it('exports exactly the documented values', () => {
    expect(Object.keys(publicEntry).sort()).toEqual([...PUBLIC_VALUES].sort());
  });

  it('is a subset of the internal entry, with the same objects (one CoreError class, one router builder)', () => {
    for (const name of PUBLIC_VALUES)
      expect((internal as Record<string, unknown>)[name], name).toBe((publicEntry as Record<string, unknown>)[name]);
    expect(Object.keys(internal).length).toBeGreaterThan(PUBLIC_VALUES.length * 4);
  });

  it('is what ai-backend re-exports from: the package users install never reaches into internal', () => {
    const cliEntry = readFileSync(new URL('../../cli/src/index.ts', import.meta.url), 'utf8');
    expect(cliEntry).toContain("from '@ai-backend/core';");
    expect(cliEntry).not.toContain('@ai-backend/core/internal');
  });
});
