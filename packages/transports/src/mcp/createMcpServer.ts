import { McpServer, type CacheHint, type Server } from '@modelcontextprotocol/server';
import { packageVersion } from '@ai-backend/core/internal';
import type { RequestStateSeal } from './requestStateSeal.js';
import { closeWithoutStacks } from './closeWithoutStacks.js';
import { ParamsCheckingServer } from './ParamsCheckingServer.js';
import { registerCompletion } from './registerCompletion.js';
import { registerLogging } from './registerLogging.js';
import { registerPrompts } from './registerPrompts.js';
import { registerResources } from './registerResources.js';
import { registerTasks, TASKS_CAPABILITY } from './registerTasks.js';
import { registerTools } from './registerTools.js';
import { startRootsSync, type RootsSync } from './rootsSync.js';
import type { McpServeMode, McpServerDeps, McpServerServices, McpSessionState } from './sessionState.js';
import type { McpTasks } from './tasks/McpTasks.js';
import type { ToolCatalog } from './toolCatalog.js';

export type { McpRequestFacts } from './callContext.js';

/**
 * What `initialize` answers as `serverInfo`: the version is the published package's (its
 * manifest), not a literal a release would leave behind.
 */
export const SERVER_INFO = { name: 'ai-backend', version: packageVersion(import.meta.url, '@ai-backend/transports') } as const;

/**
 * How long a 2026-07-28 client may reuse a list (the spec's `ttlMs`/`cacheScope` on cacheable
 * results). The tool catalog is fixed once the server starts; prompts and resources can change
 * at run time (registrations, workspace files), so their lists live shorter and a change is
 * also announced on subscriptions/listen streams. 'private': what a list shows can depend on
 * who asks (access rules), so shared caches must not reuse it.
 */
export const LIST_CACHE_HINTS: Partial<Record<'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list', CacheHint>> = {
  'tools/list': { ttlMs: 300_000, cacheScope: 'private' },
  'prompts/list': { ttlMs: 30_000, cacheScope: 'private' },
  'resources/list': { ttlMs: 30_000, cacheScope: 'private' },
  'resources/templates/list': { ttlMs: 30_000, cacheScope: 'private' },
};

export interface McpServerHandle {
  /** What the SDK's per-request handler (2026-07-28) is given. */
  mcp: McpServer;
  /** The protocol server, with our handlers; 2025 sessions connect it to their transport. */
  server: Server;
  roots: RootsSync;
  /** The session's mutable state (log level, subscriptions, calls running). */
  state: McpSessionState;
}

/**
 * The SDK's high-level server, with our own handlers on its protocol server (tools come from
 * procedures, not registerTool). One hook is answered from our catalog: the JSON Schema of a
 * tool's input, which the SDK's HTTP entry reads to validate SEP-2243 `Mcp-Param-*` headers
 * (arguments mirrored into headers via `x-mcp-header`) before the call is dispatched.
 */
class CatalogMcpServer extends McpServer {
  constructor(
    private readonly catalog: ToolCatalog,
    ...args: ConstructorParameters<typeof McpServer>
  ) {
    super(...args);
    // Our protocol server instead of the one McpServer made (it has no handlers yet, since no
    // capabilities were given to McpServer): malformed params are -32602, not -32603.
    (this as { server: Server }).server = new ParamsCheckingServer(...args);
  }

  /**
   * The SDK walks the schema it is given on every 2026-07-28 tools/call, looking for
   * `x-mcp-header` declarations: a schema without one (the catalog knows, from its build) is not
   * given, which the SDK treats as a tool with no declared headers, its answer for that schema too.
   */
  override toolInputSchemaJson(name: string): Record<string, unknown> | undefined {
    const tool = this.catalog.byName.get(name);
    return tool?.declaresHeaders ? tool.inputSchema : undefined;
  }
}

/**
 * One MCP server (per 2025 session, or per request: 2025 stateless and every 2026-07-28
 * request): tools from procedures with MCP metadata, prompts and resources from the server's
 * registries, completion, logging, and (2025 sessions) resource subscriptions and roots. Each
 * capability lives in its own register* file; the SDK does version negotiation, envelope and
 * header validation and the 2026 wire encoding (cache fields, resultType). `serves`: the one
 * method the server is made for (a 2026-07-28 request's, validated against its body by the SDK
 * before the factory runs); without it, every handler.
 */
export function createMcpServer(
  services: McpServerServices,
  catalog: ToolCatalog,
  seal: RequestStateSeal,
  sessionId: () => string | undefined,
  mode: McpServeMode = 'stateful',
  tasks?: McpTasks,
  serves?: string,
): McpServerHandle {
  const stateful = mode === 'stateful';
  // Capabilities are registered on the protocol server, not given to McpServer, which would
  // install its own registerTool-based handlers for them.
  const mcp = new CatalogMcpServer(catalog, SERVER_INFO, {
    instructions: 'ai-backend: AI text generation, server workspaces and helper tools. Call tools/list to see what is available.',
    cacheHints: LIST_CACHE_HINTS,
    // Tampered, expired or another caller's state is refused (-32602) before any handler runs;
    // the handlers then claim it for their own use (tool and arguments), once (requestStateSeal).
    requestState: { verify: seal.codec.verify },
  });
  const server = mcp.server;
  // Tasks (SEP-2663) are a 2026-07-28 extension: 2025 clients call long-running tools as before.
  const deps: McpServerDeps = { services, catalog, mode, sessionId, seal, ...(mode === 'modern' && tasks ? { tasks } : {}) };
  server.registerCapabilities({
    // Upstream servers (the MCP gateway) can change their tools at run time: 2025 sessions hear
    // of it as notifications/tools/list_changed, 2026-07-28 clients on subscriptions/listen
    // (whose SDK router honours a toolsListChanged opt-in only when this says so).
    tools: { listChanged: mode !== 'stateless' && services.gateway.active },
    prompts: { listChanged: mode !== 'stateless' },
    resources: { subscribe: mode !== 'stateless', listChanged: mode !== 'stateless' },
    logging: {},
    completions: {},
    ...(deps.tasks ? TASKS_CAPABILITY : {}),
  });
  // Until the client sets a level, debug chatter stays off.
  const state: McpSessionState = { logLevel: 'info', running: 0 };

  // A server made for one request registers the handlers of that request's family only: the
  // others would never run (a 2026-07-28 request is one message), and registering them was 6 %
  // of such a request's instructions. Capabilities above stay whole (server/discover reads them).
  const wants = (family: string) => serves === undefined || serves.startsWith(family);
  if (wants('logging/')) registerLogging(server, state);
  if (wants('tools/')) registerTools(server, deps, state);
  if (wants('tasks/')) registerTasks(server, deps);
  if (wants('prompts/')) registerPrompts(server, deps, state);
  if (wants('completion/')) registerCompletion(server, deps);
  const stopResources = wants('resources/') ? registerResources(server, deps, state) : () => undefined;
  const roots = startRootsSync(server, deps);
  const stopPrompts = stateful
    ? services.prompts.onListChanged(() => void server.sendPromptListChanged().catch(() => undefined))
    : () => undefined;
  const stopGateway =
    stateful && services.gateway.active
      ? services.gateway.onChange((kinds) => {
          // An upstream's list_changed reaches 2025 sessions as the same notification of ours.
          if (kinds.has('tools')) void server.sendToolListChanged().catch(() => undefined);
          if (kinds.has('prompts')) void server.sendPromptListChanged().catch(() => undefined);
          if (kinds.has('resources')) void server.sendResourceListChanged().catch(() => undefined);
        })
      : () => undefined;

  server.onclose = () => {
    stopResources();
    stopPrompts();
    stopGateway();
    roots.close();
  };
  if (!stateful) closeWithoutStacks(server);
  return { mcp, server, roots, state };
}
