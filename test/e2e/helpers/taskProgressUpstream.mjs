/**
 * An MCP server over stdio built with the MCP SDK (1.x, as server-everything is), with one tool that
 * runs only as a task (`execution.taskSupport: "required"`) and reports progress while it runs:
 * three `notifications/progress` under the progress token of the `tools/call` that created the
 * task, sent after the task was created (MCP 2025-11-25 tasks: the token stays in use for the
 * task's lifetime), then the task completes.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';

const server = new McpServer(
  { name: 'task-progress', version: '1' },
  {
    capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore: new InMemoryTaskStore(),
    taskMessageQueue: new InMemoryTaskMessageQueue(),
  },
);

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

server.experimental.tasks.registerToolTask(
  'slow-count',
  { description: 'counts to three as a task, reporting progress', execution: { taskSupport: 'required' } },
  {
    createTask: async (extra) => {
      const task = await extra.taskStore.createTask({ ttl: 60_000, pollInterval: 100 });
      const token = extra._meta?.progressToken;
      void (async () => {
        for (let i = 1; i <= 3; i++) {
          await pause(150);
          if (token !== undefined)
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: i, total: 3, message: `step ${i}` },
            });
        }
        await pause(50);
        await extra.taskStore.storeTaskResult(task.taskId, 'completed', {
          content: [{ type: 'text', text: `counted to 3 (progress token ${token === undefined ? 'absent' : 'present'})` }],
        });
      })();
      return { task };
    },
    getTask: async (extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (extra) => extra.taskStore.getTaskResult(extra.taskId),
  },
);

await server.connect(new StdioServerTransport());
