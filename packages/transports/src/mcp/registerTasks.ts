import { z } from 'zod';
import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server';
import { clientCapabilitiesOf } from './callContext.js';
import { runnerOf, taskOwnerOf } from './requestStateSeal.js';
import { taskRunner } from './registerTools.js';
import { declaresTasks, missingTasksCapability } from './tasks/McpTasks.js';
import { detailedTask, TASKS_EXTENSION } from './tasks/TaskStore.js';
import type { McpServerDeps } from './sessionState.js';

const TaskIdParams = z.looseObject({ taskId: z.string().min(1).max(200) });

/**
 * The capability a server with tasks announces (under `capabilities.extensions`). createMcpServer
 * registers it with the others in one call: each registerCapabilities merges the whole set
 * again, per 2026-07-28 request.
 */
export const TASKS_CAPABILITY = { extensions: { [TASKS_EXTENSION]: {} } } as const;

/**
 * The MCP Tasks extension (SEP-2663) on a 2026-07-28 request's server (its capability is
 * TASKS_CAPABILITY): tasks/get (status, with the result or error inlined once
 * finished), tasks/update (answers for a task waiting for input) and tasks/cancel. Each is
 * refused with -32021 when the request did not declare the extension. tasks/result and
 * tasks/list, removed by SEP-2663, stay unknown methods (-32601). Tasks themselves are created
 * by tools/call of a long-running tool (registerTools).
 */
export function registerTasks(server: Server, deps: McpServerDeps): void {
  const tasks = deps.tasks;
  if (!tasks) return;
  const negotiated = (method: string) => {
    if (!declaresTasks(clientCapabilitiesOf(server))) throw missingTasksCapability(method);
  };

  server.setRequestHandler('tasks/get', { params: TaskIdParams }, async (params, ctx) => {
    negotiated('tasks/get');
    return detailedTask(await tasks.get(params.taskId, taskOwnerOf(ctx))) as never;
  });

  server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, async (params, ctx) => {
    negotiated('tasks/cancel');
    await tasks.cancel(params.taskId, taskOwnerOf(ctx));
    return {} as never;
  });

  server.setRequestHandler('tasks/update', { params: TaskIdParams }, async (params, ctx) => {
    negotiated('tasks/update');
    // The SDK lifts `inputResponses` off the params of every 2026-07-28 request (and validates it).
    const responses = ctx.mcpReq.inputResponses;
    if (!responses) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'tasks/update needs inputResponses');
    await tasks.update(
      params.taskId,
      taskOwnerOf(ctx),
      responses,
      (rec) => {
        const tool = deps.catalog.byName.get(rec.tool);
        if (!tool) throw new Error(`task tool ${rec.tool} is no longer served`);
        return taskRunner(deps, server, ctx, tool, rec.arguments ?? {});
      },
      runnerOf(ctx),
    );
    return {} as never;
  });
}
