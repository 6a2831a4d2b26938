import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from './ConfigError.js';
import {
  importOptional,
  installCommand,
  isInstalled,
  missingPackages,
  neededPackages,
  OPTIONAL_PACKAGES,
  TYPES_ONLY_PEERS,
} from './optionalPackages.js';
import { resolveConfig } from './resolveConfig.js';
import { nodeShipsSqlite } from '../lib/nodeShipsSqlite.js';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const catalog = readFileSync(new URL('../../../../pnpm-workspace.yaml', import.meta.url), 'utf8');
/** A peer range as published: `catalog:` resolved from pnpm-workspace.yaml. */
const range = (name: string): string => {
  const r = manifest.peerDependencies[name]!;
  if (r !== 'catalog:') return r;
  const m = new RegExp(`^\\s+'?${name.replace(/[/.]/g, '\\$&')}'?:\\s*'([^']+)'`, 'm').exec(catalog);
  if (!m) throw new Error(`${name} is not in the catalog`);
  return m[1]!;
};

describe('OPTIONAL_PACKAGES', () => {
  it('are exactly the optional peers of @ai-backend/core, and each install command picks the major the peer range allows', () => {
    const optional = Object.entries(manifest.peerDependenciesMeta)
      .filter(([name, m]) => m.optional && !(TYPES_ONLY_PEERS as readonly string[]).includes(name))
      .map(([name]) => name);
    for (const name of TYPES_ONLY_PEERS) expect(manifest.peerDependenciesMeta[name]?.optional, name).toBe(true);
    expect(
      Object.values(OPTIONAL_PACKAGES)
        .map((p) => p.name)
        .sort(),
    ).toEqual(optional.sort());
    for (const p of Object.values(OPTIONAL_PACKAGES)) expect(range(p.name), p.name).toMatch(new RegExp(`^\\^${p.major}\\.`));
  });
});

describe('neededPackages', () => {
  it('a default config needs none on Node 22.13+ (node:sqlite), and better-sqlite3 before', () => {
    const needs = neededPackages(resolveConfig({})).map((n) => `${n.path}: ${n.pkg.name}`);
    expect(needs).toEqual(nodeShipsSqlite() ? [] : ['storage.type: better-sqlite3']);
  });

  it('a forced better-sqlite3 driver needs it on every Node', () => {
    expect(
      neededPackages(resolveConfig({ storage: { sqlite: { driver: 'better-sqlite3' } } })).map((n) => `${n.path}: ${n.pkg.name}`),
    ).toEqual(['storage.sqlite.driver: better-sqlite3']);
    expect(neededPackages(resolveConfig({ storage: { sqlite: { driver: 'node:sqlite' } } }))).toEqual([]);
  });

  it('names the driver of the store, and ioredis for shared state', () => {
    const names = (input: Parameters<typeof resolveConfig>[0], opens?: Parameters<typeof neededPackages>[1]) =>
      neededPackages(resolveConfig(input), opens).map((n) => `${n.path}: ${n.pkg.name}`);
    expect(names({ storage: { type: 'postgres' } })).toEqual(['storage.type: pg']);
    expect(names({ storage: { type: 'redis' } })).toEqual(['storage.type: ioredis']);
    expect(names({ storage: { type: 'postgres', shared: 'redis' } })).toEqual(['storage.type: pg', 'storage.shared: ioredis']);
    // A caller that hands in its own store, shared state and signals needs no driver for them.
    expect(names({ storage: { type: 'postgres', shared: 'redis' } }, { storage: false, shared: false, signals: false })).toEqual([]);
    // Signals still go through Redis when only the store is handed in.
    expect(names({ storage: { type: 'redis' } }, { storage: false })).toEqual(['storage.type: ioredis']);
  });

  it('names the MCP client once for gateway servers, and not for disabled ones', () => {
    const names = (mcpServers: Record<string, unknown>) =>
      neededPackages(resolveConfig({ storage: { type: 'memory' }, mcpServers } as Parameters<typeof resolveConfig>[0])).map(
        (n) => `${n.path}: ${n.pkg.name}`,
      );
    expect(names({})).toEqual([]);
    expect(names({ off: { command: 'node', enabled: false } })).toEqual([]);
    expect(
      names({ off: { command: 'node', enabled: false }, a: { command: 'node' }, b: { type: 'http', url: 'http://127.0.0.1:1/mcp' } }),
    ).toEqual(['mcpServers.a: @modelcontextprotocol/client']);
  });

  it('names the provider package of each named provider, and the AWS credential chain for Bedrock without credentials', () => {
    const config = resolveConfig({
      // A store that needs no package on any Node (the default SQLite one needs better-sqlite3 on Node 20).
      storage: { type: 'memory' },
      ai: {
        providers: {
          local: { type: 'openai-compatible', baseUrl: 'http://127.0.0.1:11434/v1', defaultModel: 'm' },
          mis: { type: 'mistral', apiKey: 'k', defaultModel: 'm' },
          aws: { type: 'bedrock', region: 'us-east-1', defaultModel: 'm' },
          awskey: { type: 'bedrock', region: 'us-east-1', accessKeyId: 'a', secretAccessKey: 's', defaultModel: 'm' },
        },
      },
    });
    expect(neededPackages(config).map((n) => `${n.path}: ${n.pkg.name}`)).toEqual([
      'ai.providers.local: @ai-sdk/openai-compatible',
      'ai.providers.mis: @ai-sdk/mistral',
      'ai.providers.aws: @ai-sdk/amazon-bedrock',
      'ai.providers.aws: @aws-sdk/credential-providers',
      'ai.providers.awskey: @ai-sdk/amazon-bedrock',
    ]);
  });
});

describe('missingPackages and importOptional', () => {
  it('in this repository every optional package is installed, so no config misses one', () => {
    for (const p of Object.values(OPTIONAL_PACKAGES)) expect(isInstalled(p.name), p.name).toBe(true);
    expect(missingPackages(resolveConfig({ storage: { type: 'postgres', shared: 'redis' } }))).toEqual([]);
  });

  it('says what at each path needs the package', () => {
    const config = resolveConfig({
      storage: { type: 'postgres' },
      ai: { providers: { aws: { type: 'bedrock', region: 'us-east-1', defaultModel: 'm' } } },
    });
    expect(neededPackages(config).map((n) => `${n.path}: ${n.need}`)).toEqual([
      "storage.type: 'postgres'",
      "ai.providers.aws: type 'bedrock'",
      "ai.providers.aws: type 'bedrock' without apiKey or accessKeyId/secretAccessKey (the AWS credential chain)",
    ]);
  });

  it('a package that is not installed fails with its name and the install command', async () => {
    const absent = { name: 'ai-backend-no-such-package', major: 1 };
    expect(isInstalled(absent.name)).toBe(false);
    expect(installCommand(absent)).toBe('npm i ai-backend-no-such-package@1');
    // @ts-expect-error -- a package that does not exist, on purpose
    const err = await importOptional(absent, "storage.type 'postgres'", () => import('ai-backend-no-such-package')).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain(
      "storage.type 'postgres': needs the package ai-backend-no-such-package, which is not installed. Install it: npm i ai-backend-no-such-package@1",
    );
  });

  it('a package that is installed but fails to load keeps its own error', async () => {
    const boom = new Error('broken build');
    await expect(importOptional(OPTIONAL_PACKAGES.pg, 'x', () => Promise.reject(boom))).rejects.toBe(boom);
  });
});
