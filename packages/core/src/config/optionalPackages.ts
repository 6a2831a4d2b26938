/**
 * Optional peer dependencies: the database drivers, the AI SDK provider packages beyond the four
 * built-ins and the AWS credential chain. `npm i ai-backend` does not install them (they are
 * most of what an install weighed; docs/publishing.md), so a config that uses one needs it
 * installed beside ai-backend. `missingPackages` names what a config needs and is not installed,
 * checked when a server starts, before anything is opened; `importOptional` says the same if code
 * reaches a missing one another way (a store opened with createStorage, outside a server).
 */
import type { NamedProviderType } from './sections/aiProviders.js';
import { ConfigError, type ConfigProblem } from './ConfigError.js';
import type { ResolvedConfig } from './schema.js';
import { NODE_SQLITE_SINCE, nodeShipsSqlite } from '../lib/nodeShipsSqlite.js';

/** One optional package and the major version our peer range allows (what `npm i` should pick). */
export interface OptionalPackage {
  name: string;
  major: number;
}

/**
 * Every optional peer of @ai-backend/core that code loads at run time (its package.json's
 * peerDependenciesMeta, less TYPES_ONLY_PEERS; a test keeps them equal).
 */
export const OPTIONAL_PACKAGES = {
  pg: { name: 'pg', major: 8 },
  ioredis: { name: 'ioredis', major: 6 },
  'openai-compatible': { name: '@ai-sdk/openai-compatible', major: 2 },
  azure: { name: '@ai-sdk/azure', major: 3 },
  bedrock: { name: '@ai-sdk/amazon-bedrock', major: 4 },
  vertex: { name: '@ai-sdk/google-vertex', major: 4 },
  mistral: { name: '@ai-sdk/mistral', major: 3 },
  groq: { name: '@ai-sdk/groq', major: 3 },
  xai: { name: '@ai-sdk/xai', major: 3 },
  deepseek: { name: '@ai-sdk/deepseek', major: 2 },
  awsCredentials: { name: '@aws-sdk/credential-providers', major: 3 },
  // The SQLite driver before Node 22.13 (node:sqlite after). 12 is the line that builds on Node 20.
  betterSqlite3: { name: 'better-sqlite3', major: 12 },
  // The MCP gateway's upstream client (services/gateway/openUpstream.ts): only with mcpServers.
  mcpClient: { name: '@modelcontextprotocol/client', major: 2 },
} as const satisfies Record<'pg' | 'ioredis' | 'awsCredentials' | 'betterSqlite3' | 'mcpClient' | NamedProviderType, OptionalPackage>;

/**
 * Optional peers no code loads at run time: core's build inlines tRPC's server runtime, and apps
 * that write custom routers in TypeScript install @trpc/server for its types (docs/procedures.md).
 */
export const TYPES_ONLY_PEERS = ['@trpc/server'] as const;

/** The command that installs one, as the messages print it. */
export function installCommand(pkg: OptionalPackage): string {
  return `npm i ${pkg.name}@${pkg.major}`;
}

/** A package a config needs: where in the config, and why. */
export interface NeededPackage {
  pkg: OptionalPackage;
  /** The config path that needs it, e.g. `storage.type`. */
  path: string;
  /** What at `path` needs it, e.g. `'postgres'` (at `storage.type`). */
  need: string;
}

/** What a server started on `config` opens itself; a caller that hands in its own store needs no driver for it. */
export interface NeededPackagesOptions {
  storage?: boolean;
  shared?: boolean;
  signals?: boolean;
}

/** The optional packages `config` needs, in config order (duplicates kept: each path is named). */
export function neededPackages(config: ResolvedConfig, opens: NeededPackagesOptions = {}): NeededPackage[] {
  const { storage = true, shared = true, signals = true } = opens;
  const out: NeededPackage[] = [];
  const s = config.storage;
  if (storage && s.type === 'sqlite') {
    if (s.sqlite.driver === 'better-sqlite3')
      out.push({ pkg: OPTIONAL_PACKAGES.betterSqlite3, path: 'storage.sqlite.driver', need: "'better-sqlite3'" });
    else if (s.sqlite.driver === 'auto' && !nodeShipsSqlite()) {
      out.push({
        pkg: OPTIONAL_PACKAGES.betterSqlite3,
        path: 'storage.type',
        need: `'sqlite' on Node ${process.version} (node:sqlite needs Node ${NODE_SQLITE_SINCE}+)`,
      });
    }
  }
  if (storage && s.type === 'postgres') out.push({ pkg: OPTIONAL_PACKAGES.pg, path: 'storage.type', need: "'postgres'" });
  if (storage && s.type === 'redis') out.push({ pkg: OPTIONAL_PACKAGES.ioredis, path: 'storage.type', need: "'redis'" });
  // Shared state and cross-instance signals go through storage.redis (createRuntime, createSignals).
  else if ((shared || signals) && s.redis)
    out.push(
      s.type === 'redis'
        ? { pkg: OPTIONAL_PACKAGES.ioredis, path: 'storage.type', need: "'redis'" }
        : { pkg: OPTIONAL_PACKAGES.ioredis, path: 'storage.shared', need: "'redis'" },
    );
  for (const [id, p] of Object.entries(config.ai.providers)) {
    if (!('type' in p)) continue;
    const path = `ai.providers.${id}`;
    out.push({ pkg: OPTIONAL_PACKAGES[p.type], path, need: `type '${p.type}'` });
    // Without an API key or explicit credentials Bedrock signs with the AWS credential chain (namedProviders.ts).
    if (p.type === 'bedrock' && !p.apiKey && !(p.accessKeyId && p.secretAccessKey))
      out.push({
        pkg: OPTIONAL_PACKAGES.awsCredentials,
        path,
        need: "type 'bedrock' without apiKey or accessKeyId/secretAccessKey (the AWS credential chain)",
      });
  }
  // Gateway servers added at run time are remote and checked when added; the config's decide here.
  const gatewayServer = Object.entries(config.mcpServers).find(([, server]) => server.enabled !== false);
  if (gatewayServer) out.push({ pkg: OPTIONAL_PACKAGES.mcpClient, path: `mcpServers.${gatewayServer[0]}`, need: 'an MCP gateway server' });
  return out;
}

/** The problem text for one needed package that is missing (`need` may be empty: the path alone needs it). */
export function missingPackageMessage(n: Pick<NeededPackage, 'pkg' | 'need'>): string {
  return `${n.need ? `${n.need} ` : ''}needs the package ${n.pkg.name}, which is not installed. Install it: ${installCommand(n.pkg)}`;
}

/**
 * Resolvable from here, as an `import()` in this package would resolve it? Resolution only: the
 * package is not loaded (the provider packages cost tens of MB loaded; a start must not).
 */
export function isInstalled(name: string): boolean {
  try {
    import.meta.resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** The config's needed packages that are not installed, as config problems (empty: all there). */
export function missingPackages(config: ResolvedConfig, opens?: NeededPackagesOptions): ConfigProblem[] {
  return neededPackages(config, opens)
    .filter((n) => !isInstalled(n.pkg.name))
    .map((n) => ({ path: n.path, message: missingPackageMessage(n) }));
}

/**
 * `load()` (an `import()` of the package, written at the call site so the bundler keeps the
 * specifier), or, when the package is not installed, a ConfigError naming it and the install
 * command. A package that is installed but fails to load keeps its own error.
 */
export async function importOptional<T>(pkg: OptionalPackage, need: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (!isInstalled(pkg.name)) throw new ConfigError([{ path: need, message: missingPackageMessage({ pkg, need: '' }) }]);
    throw err;
  }
}
