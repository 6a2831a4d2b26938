/**
 * The floors of the house (docs/architecture.md), checked by dependency-cruiser in `test`
 * (test/architecture/dependencyRules.test.ts): no circular imports anywhere, no package importing
 * one above it, and inside core each layer importing only the layers below it.
 *
 * Core, bottom to top:
 *   kernel, lib     errors, identity, logging, the storage and signals interfaces; pure helpers
 *   config          the one zod schema and what is derived from it
 *   storage, net    store implementations; guarded outbound fetch
 *   observability   metrics, tracing, recent calls
 *   services        billing, ai, vault, keys, workspaces, registries … (never Runtime, never tRPC)
 *   runtime         the Runtime type, statistics, signals, health
 *   pipeline        tRPC init, context, procedures, invoke, request scope, access policy, wire errors
 *   routers, apiDescription   the procedures, their MCP adapters, the API documents
 *   createRuntime.ts, index.ts, internal.ts   the composition root and the package's entries (public, workspace-internal)
 */
const CORE = '^packages/core/src/';
const layers = [
  ['kernel', 'lib'],
  ['config'],
  ['storage', 'net'],
  ['observability'],
  ['services'],
  ['runtime'],
  ['pipeline'],
  ['routers', 'apiDescription'],
];
const folders = (names) => `${CORE}(${names.join('|')})/`;

/** Layer i may import layers 0..i; anything above it is forbidden. */
const layerRules = layers.slice(0, -1).map((names, i) => ({
  name: `core-layer-${names.join('-')}`,
  comment: `core/${names.join(', core/')} imports only the layers below it`,
  severity: 'error',
  from: { path: folders(names) },
  to: { path: [folders(layers.slice(i + 1).flat()), `${CORE}(createRuntime|index|internal)\\.ts$`] },
}));

/**
 * Inside core/services, bottom to top: each folder imports only the folders of the floors below
 * it (never one beside it on its floor, never one above).
 *   the leaves      vault, rate limits, security log, alerts, prompts, resources, workspaces;
 *                   spend (the budgets' period arithmetic), metering (the AI engine's contract
 *                   with billing), directory (who called: profiles, the e-mail and search indexes)
 *   apiKeys         keys, their rules, limits and spend (directory, rateLimit, spend)
 *   billing, ai     billing implements metering; the AI engine uses it (apiKeys, metering)
 */
const SERVICES = `${CORE}services/`;
const serviceFloors = [
  ['vault', 'rateLimit', 'security', 'governance', 'prompts', 'resources', 'workspaces', 'spend', 'metering', 'directory'],
  ['apiKeys'],
  ['billing', 'ai'],
];
const serviceRules = serviceFloors.flatMap((floor, i) =>
  floor.map((name) => {
    const notBelow = serviceFloors.slice(i).flat().filter((other) => other !== name);
    return {
      name: `core-services-${name}`,
      comment: `core/services/${name} imports only the service floors below it`,
      severity: 'error',
      from: { path: `${SERVICES}${name}/` },
      to: { path: `${SERVICES}(${notBelow.join('|')})/` },
    };
  }),
);

/** Packages may import only those below them: core < auth < transports < cli. */
const packageRules = [
  ['core', ['auth', 'transports', 'cli']],
  ['auth', ['transports', 'cli']],
  ['transports', ['cli']],
].map(([pkg, above]) => ({
  name: `package-${pkg}-no-upward`,
  comment: `@ai-backend/${pkg} never imports a package built on it`,
  severity: 'error',
  from: { path: `^packages/${pkg}/src/` },
  to: { path: [`^packages/(${above.join('|')})/`, `node_modules/(@ai-backend/(${above.join('|')})|ai-backend)/`] },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import circle, in any package (type-only imports included)',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    ...serviceRules,
    ...packageRules,
    {
      name: 'core-no-transport',
      comment: 'core knows no HTTP framework, no MCP SDK and no tRPC client: every entry point is a thin layer over it',
      severity: 'error',
      from: { path: CORE },
      to: { path: ['node_modules/(hono|@hono/[^/]+|@modelcontextprotocol/[^/]+|@trpc/client)/'] },
    },
    {
      name: 'core-zod-through-lib',
      comment: 'core takes zod from lib/zod.ts, whose zod 4 check must run before any schema is built (the bundler does not keep the order of side effects across chunks)',
      severity: 'error',
      from: { path: CORE, pathNot: `${CORE}lib/zod\\.ts$` },
      to: { path: 'node_modules/zod/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Sources only: tests may reach across layers to set things up. node_modules is not excluded
    // (only not followed): the rules about packages (core-no-transport, core-zod-through-lib) need
    // its modules as the targets of our imports.
    exclude: { path: ['\\.test\\.ts$', '/__tests__/', '/dist/'] },
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: { conditionNames: ['ai-backend-source', 'import', 'types', 'default'], exportsFields: ['exports'] },
  },
};
