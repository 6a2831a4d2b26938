/**
 * The floors of the house (docs/architecture.md), checked by dependency-cruiser in `test`
 * (test/architecture/dependencyRules.test.ts): no circular imports anywhere, no package importing
 * one above it, inside core each layer importing only the layers below it, inside core/services
 * each folder importing only the service floors below it, and the browser console's floors.
 *
 * Core, bottom to top:
 *   kernel, lib     errors, identity, logging, the storage and signals interfaces, the streamed
 *                   procedures' event contract; pure helpers
 *   config          the one zod schema and what is derived from it
 *   storage, net    store implementations; guarded outbound fetch
 *   observability   metrics, tracing, recent calls
 *   services        billing, ai, vault, keys, workspaces, registries … (never Runtime, never tRPC;
 *                   their own floors below)
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
 *   gateway         the MCP gateway: upstream servers and users' credentials for them (vault, metering, ...)
 *   retention       archives billing's histories under its ledger checkpoint (billing)
 */
const SERVICES = `${CORE}services/`;
const serviceFloors = [
  ['vault', 'rateLimit', 'security', 'governance', 'prompts', 'resources', 'workspaces', 'spend', 'metering', 'directory'],
  ['apiKeys'],
  ['billing', 'ai'],
  ['gateway', 'retention'],
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

/**
 * Packages, bottom to top: core < auth < transports (its browser console included) < cli; each
 * imports only those below it. test-utils stands apart: the tests use it, no package's source
 * does, and it imports no package.
 */
const PACKAGE_ORDER = ['core', 'auth', 'transports', 'cli'];
const NPM_NAMES = { core: '@ai-backend/core', auth: '@ai-backend/auth', transports: '@ai-backend/transports', cli: 'ai-backend', 'test-utils': '@ai-backend/test-utils' };
const packageRules = [...PACKAGE_ORDER, 'test-utils'].map((pkg) => {
  const others = pkg === 'test-utils' ? PACKAGE_ORDER : [...PACKAGE_ORDER.slice(PACKAGE_ORDER.indexOf(pkg) + 1), 'test-utils'];
  return {
    name: `package-${pkg}`,
    comment: pkg === 'test-utils' ? 'test-utils imports no package of ours' : `${NPM_NAMES[pkg]} imports only the packages below it, and never test-utils`,
    severity: 'error',
    from: { path: `^packages/${pkg}/` },
    to: { path: [`^packages/(${others.join('|')})/`, `node_modules/(${others.map((o) => NPM_NAMES[o]).join('|')})/`] },
  };
});

/**
 * The browser console (packages/transports/console), bottom to top:
 *   the parts      types (the server's answer types), dom, charts, schemaForm, auth (the session),
 *                  api and mcpClient (calls with its token), userParts (shared sections), view (the
 *                  View type)
 *   views/         one page each, none importing another
 *   main.ts        the shell: sign-in, navigation, picks a view by the address
 * From the server's packages it takes types only: anything else would be bundled into the page.
 */
const CONSOLE = '^packages/transports/console/src/';
const consoleRules = [
  {
    name: 'console-main-on-top',
    comment: 'nothing in the console imports main.ts, the shell (a view gets what it needs from view.ts and the parts)',
    severity: 'error',
    from: { path: CONSOLE },
    to: { path: `${CONSOLE}main\\.ts$` },
  },
  {
    name: 'console-views-apart',
    comment: 'a view imports no other view; what two views share is a part (userParts.ts)',
    severity: 'error',
    from: { path: `${CONSOLE}views/` },
    to: { path: `${CONSOLE}views/` },
  },
  {
    name: 'console-parts-below-views',
    comment: 'the parts (console/src/*.ts but main.ts) import no view',
    severity: 'error',
    from: { path: `${CONSOLE}[^/]+\\.ts$`, pathNot: `${CONSOLE}main\\.ts$` },
    to: { path: `${CONSOLE}views/` },
  },
  {
    name: 'console-server-types-only',
    comment: 'the console takes only types from the server packages: a value import would bundle server code into the page',
    severity: 'error',
    from: { path: CONSOLE },
    to: { path: ['^packages/(core|auth|transports/src|cli|test-utils)/', 'node_modules/(@ai-backend/[^/]+|ai-backend)/'], dependencyTypesNot: ['type-only'] },
  },
];

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
    ...consoleRules,
    {
      name: 'core-no-transport',
      comment: 'core knows no HTTP framework, no MCP SDK and no tRPC client: every entry point is a thin layer over it',
      severity: 'error',
      from: { path: CORE },
      to: { path: ['node_modules/(hono|@hono/[^/]+|@modelcontextprotocol/[^/]+|@trpc/client)/'], pathNot: ['node_modules/@modelcontextprotocol/client/'] },
    },
    {
      name: 'core-mcp-client-in-gateway',
      comment: 'the MCP client (an optional peer) is the gateway\'s connection to upstream servers, not an entry point: only services/gateway imports it',
      severity: 'error',
      from: { path: CORE, pathNot: `${CORE}services/gateway/` },
      to: { path: 'node_modules/@modelcontextprotocol/client/' },
    },
    {
      name: 'trpc-runtime-from-core',
      comment: "only core's code may use @trpc/server at run time: core's build inlines it and it is an optional peer of the published packages (docs/publishing.md), so the others take its runtime from @ai-backend/core/internal (pipeline/trpcRuntime.ts) and only its types from the package",
      severity: 'error',
      from: { path: '^packages/(?!core/)[^/]+/src/' },
      to: { path: 'node_modules/@trpc/server/', dependencyTypesNot: ['type-only'] },
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
    exclude: { path: ['\\.test\\.ts$', '/__tests__/', '^packages/[^/]+/dist/'] },
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: { conditionNames: ['ai-backend-source', 'import', 'types', 'default'], exportsFields: ['exports'] },
  },
};
