import { createMcpHandler, type AuthInfo, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { RequestStateSeal } from './requestStateSeal.js';
import { createMcpServer } from './createMcpServer.js';
import type { McpServerServices } from './sessionState.js';
import { McpTasks, type McpTasksDeps } from './tasks/McpTasks.js';
import type { ToolCatalog } from './toolCatalog.js';

/**
 * MCP 2026-07-28 on /mcp: every request stands alone (no initialize, no Mcp-Session-Id), so any
 * instance can answer it and nothing is shared between instances. The SDK's per-request handler
 * validates the `_meta` envelope and the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers,
 * answers server/discover, encodes results for the revision (resultType, cache fields) and
 * serves subscriptions/listen; each request gets a fresh server from the same factory the 2025
 * sessions use, so both revisions expose the same tools, prompts and resources through the same
 * invoke seam. 2025 traffic never reaches it (`legacy: 'reject'`): McpHandler routes that to its
 * sessions first.
 */
export class ModernEndpoint {
  private readonly handler: McpHttpHandler;
  private readonly unsubscribe: Array<() => void>;
  /** The Tasks extension's state and runs, shared by every request of this instance. */
  readonly tasks: McpTasks;

  constructor(
    services: McpServerServices & McpTasksDeps,
    catalog: ToolCatalog,
    seal: RequestStateSeal,
    opts: { responseMode: 'sse' | 'json' | 'auto'; bodyLimit: number },
  ) {
    this.tasks = new McpTasks(services);
    const tasks = this.tasks;
    // The Mcp-Method header names the request's method (the SDK refuses a request whose header
    // and body disagree before it calls the factory); without one, the server gets every handler.
    const serverFor = (req: Request | undefined) =>
      createMcpServer(services, catalog, seal, () => undefined, 'modern', tasks, req?.headers.get('mcp-method') ?? undefined).mcp;
    this.handler = createMcpHandler(({ requestInfo }) => serverFor(requestInfo), {
      legacy: 'reject',
      // 'auto' (the default): a single JSON body unless the call emits progress or logs first, then SSE.
      responseMode: opts.responseMode,
      maxRequestBodySize: opts.bodyLimit,
      onerror: (err) => services.logger.debug('MCP 2026-07-28 request refused or failed', { error: err.message }),
    });
    // Registry changes reach open subscriptions/listen streams (this instance's).
    const notify = this.handler.notify;
    this.unsubscribe = [
      services.prompts.onListChanged(() => notify.promptsChanged()),
      services.resources.onListChanged(() => notify.resourcesChanged()),
      services.resources.onUpdated((uri) => notify.resourceUpdated(uri)),
      // An upstream's list changes (the MCP gateway), each as the same change of ours, as 2025 sessions hear them.
      services.gateway.onChange((kinds) => {
        if (kinds.has('tools')) notify.toolsChanged();
        if (kinds.has('prompts')) notify.promptsChanged();
        if (kinds.has('resources')) notify.resourcesChanged();
      }),
    ];
  }

  fetch(req: Request, parsedBody: unknown, authInfo: AuthInfo): Promise<Response> {
    return this.handler.fetch(req, { parsedBody, authInfo });
  }

  async close(): Promise<void> {
    for (const off of this.unsubscribe) off();
    await this.tasks.close();
    await this.handler.close();
  }
}
