/**
 * An MCP server over stdio, written as raw JSON-RPC lines, with two tools that run only as tasks
 * and answer what is no tool result (`content` a string): `at-once` in its tools/call answer (no
 * task created), `via-task` in tasks/result after a task that completes at once. `echo` is a
 * plain tool that works.
 */
import { serveRawMcp } from './serveRawMcp.mjs';

const schema = { type: 'object', properties: {} };
const task = {
  taskId: 't1',
  status: 'completed',
  ttl: 60000,
  createdAt: new Date().toISOString(),
  lastUpdatedAt: new Date().toISOString(),
};

serveRawMcp({
  name: 'malformed-task',
  capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } } } },
  handlers: {
    'tools/list': () => ({
      tools: [
        { name: 'at-once', inputSchema: schema, execution: { taskSupport: 'required' } },
        { name: 'via-task', inputSchema: schema, execution: { taskSupport: 'required' } },
        { name: 'echo', inputSchema: schema },
      ],
    }),
    'tools/call': (m) => {
      if (m.params.name === 'at-once') return { content: 'not blocks' };
      if (m.params.name === 'via-task') return { task };
      return { content: [{ type: 'text', text: 'echoed' }] };
    },
    'tasks/get': () => task,
    'tasks/result': () => ({ content: 'not blocks' }),
  },
});
