import {
  isInputRequiredResult,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type InputRequiredResult,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { CoreError, invoke, logWireError, toJsonRpcError, toMcpToolError, toWireError, type Context } from '@ai-backend/core/internal';
import { clientCapabilitiesOf, mcpContext, taskCallContext, watchCallerCredential } from './callContext.js';
import { runnerOf, taskOwnerOf } from './requestStateSeal.js';
import { declaresTasks, longRunningOf, missingTasksCapability, type RunTool, type ToolOutcome } from './tasks/McpTasks.js';
import { withRequestRoots } from './requestRoots.js';
import { toolsListFor, type CatalogTool } from './toolCatalog.js';
import { counted, type McpServerDeps, type McpSessionState } from './sessionState.js';
import { callGatewayTool, identityOf, isGatewayTool, listWithGateway } from './gatewayTools.js';
import { recordRefusal } from './recordRefusal.js';

/**
 * Tool results: text for every client, structuredContent when the tool declares an output schema.
 * A tool answering with MCP content may also ask the client for input (an input-required
 * result): 2026-07-28 clients answer it by retrying; for 2025 sessions the SDK asks them with
 * server-to-client requests and calls the tool again.
 */
function toToolResult(tool: CatalogTool, data: unknown): CallToolResult | InputRequiredResult {
  if (tool.meta?.mcp?.result === 'content') {
    if (isInputRequiredResult(data)) return data;
    const r = data as Partial<CallToolResult> | null;
    if (r && Array.isArray(r.content)) return r as CallToolResult;
  }
  const text = typeof data === 'string' ? data : JSON.stringify(data ?? null);
  return {
    content: [{ type: 'text', text }],
    ...(tool.outputSchema && typeof data === 'object' && data !== null && !Array.isArray(data)
      ? { structuredContent: data as Record<string, unknown> }
      : {}),
  };
}

/** One run of a tool through core's invoke seam, as a task records it. */
async function runOnce(deps: McpServerDeps, tool: CatalogTool, args: unknown, callCtx: Context): Promise<ToolOutcome> {
  const result = await invoke(deps.services.router, tool.path, args ?? {}, callCtx);
  if (result.ok) return { kind: 'result', result: toToolResult(tool, result.data) };
  const wire = toWireError(result.error);
  logWireError(deps.services.logger, wire, { transport: 'mcp', path: tool.path });
  // An internal error is a protocol-level failure (task `failed`); any other failure is the
  // tool's own error the model can read (task `completed` with isError), as on a plain call.
  if (wire.internal) {
    const { code, message } = toJsonRpcError(wire);
    return { kind: 'failed', error: { code, message } };
  }
  return { kind: 'result', result: toMcpToolError(wire, { structuredContent: !tool.outputSchema }) as CallToolResult };
}

/**
 * A task's tool run: the caller of `ctx`, the task's signal, the round's answers (a sealed
 * requestState is verified for `ctx`'s caller and claimed for this tool and these arguments first).
 */
export function taskRunner(deps: McpServerDeps, server: Server, ctx: ServerContext, tool: CatalogTool, args: unknown): RunTool {
  const use = { kind: 'tool', name: tool.name, args } as const;
  return async (signal, round) => {
    let requestState = round.verifiedState;
    if (round.sealedState !== undefined) {
      try {
        requestState = await deps.seal.open(round.sealedState, ctx, use);
      } catch {
        return {
          kind: 'failed',
          error: {
            code: ProtocolErrorCode.InvalidParams,
            message: "the task's requestState expired, was used already or belongs to another caller or call",
          },
        };
      }
    }
    const report = deps.tasks!.statusReporter(round.taskId);
    // Access is checked when used, and a run is used for as long as it runs: as an open stream does,
    // it ends when the credential that started (or resumed) it is refused (a revoked or expired key or
    // token, a demoted administrator's), instead of running on to its end on the owner's account.
    const lost = new AbortController();
    const stopWatching = watchCallerCredential(ctx, () => lost.abort());
    try {
      const callCtx = taskCallContext(
        deps,
        server,
        ctx,
        use,
        AbortSignal.any([signal, lost.signal]),
        { taskId: round.taskId, inputResponses: round.inputResponses, requestState },
        report,
      );
      const outcome = await runOnce(deps, tool, args, callCtx);
      if (!lost.signal.aborted || signal.aborted) return outcome;
      const { code, message } = toJsonRpcError(toWireError(CREDENTIAL_LOST));
      return { kind: 'failed', error: { code, message } };
    } finally {
      stopWatching();
    }
  };
}

const CREDENTIAL_LOST = new CoreError(
  'INVALID_TOKEN',
  'the credential that started this task was revoked, expired or no longer grants it: the task was stopped',
);

/**
 * tools/list and tools/call. A call runs the procedure through core's invoke seam (auth, rate
 * limits, input validation). Failures of the tool itself, including invalid arguments, are
 * tool results with isError (MCP 2025-11-25, SEP-1303: the model can read and correct them);
 * an unknown tool name is a protocol error.
 */
export function registerTools(server: Server, deps: McpServerDeps, state: McpSessionState): void {
  const { services, catalog } = deps;
  server.setRequestHandler(
    'tools/list',
    (_request, ctx) => (services.gateway.active ? listWithGateway(deps, ctx) : toolsListFor(catalog, identityOf(ctx))) as never,
  );

  server.setRequestHandler('tools/call', async (request, ctx): Promise<never> => {
    const tool = catalog.byName.get(request.params.name);
    if (!tool && isGatewayTool(deps, ctx, request.params.name)) {
      const use = { kind: 'tool', name: request.params.name, args: request.params.arguments } as const;
      const callCtx = mcpContext(
        deps,
        state,
        server,
        ctx,
        { use, requestState: await deps.seal.claim(ctx, use) },
        request.params._meta?.progressToken as string | number | undefined,
      );
      return (await counted(state, () => callGatewayTool(deps, request.params.name, request.params.arguments, callCtx))) as never;
    }
    if (!tool) {
      // An upstream tool its API key may not call is answered as unknown; the refusal is recorded, as gateway.callTool's is.
      if (services.gateway.active)
        recordRefusal(deps, ctx, services.gateway.toolRefusal(identityOf(ctx), request.params.name), 'gateway.callTool');
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool: ${request.params.name.slice(0, 200)}`);
    }
    // A long-running procedure is a task for a 2026-07-28 client that speaks the Tasks extension.
    const longRunning = deps.mode === 'modern' && deps.tasks ? longRunningOf(tool.meta) : undefined;
    // A sealed state the request carries is good for this tool with these arguments, once.
    const use = { kind: 'tool', name: tool.name, args: request.params.arguments } as const;
    const requestState = await deps.seal.claim(ctx, use);
    if (longRunning) {
      if (declaresTasks(clientCapabilitiesOf(server))) {
        return (await deps.tasks!.start({
          owner: taskOwnerOf(ctx),
          runningKey: runnerOf(ctx),
          tool: tool.name,
          arguments: (request.params.arguments ?? {}) as Record<string, unknown>,
          meta: longRunning,
          run: taskRunner(deps, server, ctx, tool, request.params.arguments),
          ...(ctx.mcpReq.inputResponses ? { inputResponses: ctx.mcpReq.inputResponses } : {}),
          ...(requestState !== undefined ? { requestState } : {}),
        })) as never;
      }
      if (longRunning.taskSupport === 'required') throw missingTasksCapability(`the tool ${tool.name}`);
    }
    const progressToken = request.params._meta?.progressToken as string | number | undefined;
    const call = async (callDeps: McpServerDeps) => {
      const callCtx = mcpContext(callDeps, state, server, ctx, { use, requestState }, progressToken);
      const result = await invoke(services.router, tool.path, request.params.arguments ?? {}, callCtx);
      if (result.ok) return toToolResult(tool, result.data);
      if (callCtx.req.signal.aborted) services.logger.debug('tool call cancelled', { tool: tool.name });
      const wire = toWireError(result.error);
      logWireError(services.logger, wire, { transport: 'mcp', path: tool.path });
      // A declared output schema would make clients validate the error against it.
      return toMcpToolError(wire, { structuredContent: !tool.outputSchema }) as CallToolResult;
    };
    // 2025 sessions keep their roots (rootsSync); a 2026 request is asked for them in-band.
    if (deps.mode === 'modern' && tool.meta?.mcp?.roots) return (await withRequestRoots(deps, server, ctx, call)) as never;
    return (await counted(state, () => call(deps))) as never;
  });
}
