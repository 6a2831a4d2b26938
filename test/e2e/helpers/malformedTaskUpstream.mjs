/**
 * An MCP server over stdio, written as raw JSON-RPC lines, with two tools that run only as tasks
 * and answer what is no tool result (`content` a string): `at-once` in its tools/call answer (no
 * task created), `via-task` in tasks/result after a task that completes at once. `echo` is a
 * plain tool that works.
 */
import { createInterface } from 'node:readline';

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const schema = { type: 'object', properties: {} };
const task = {
  taskId: 't1',
  status: 'completed',
  ttl: 60000,
  createdAt: new Date().toISOString(),
  lastUpdatedAt: new Date().toISOString(),
};

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const answer = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  if (m.method === 'initialize')
    return answer({
      protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } } } },
      serverInfo: { name: 'malformed-task', version: '1' },
    });
  if (m.method === 'tools/list')
    return answer({
      tools: [
        { name: 'at-once', inputSchema: schema, execution: { taskSupport: 'required' } },
        { name: 'via-task', inputSchema: schema, execution: { taskSupport: 'required' } },
        { name: 'echo', inputSchema: schema },
      ],
    });
  if (m.method === 'tools/call' && m.params.name === 'at-once') return answer({ content: 'not blocks' });
  if (m.method === 'tools/call' && m.params.name === 'via-task') return answer({ task });
  if (m.method === 'tools/call') return answer({ content: [{ type: 'text', text: 'echoed' }] });
  if (m.method === 'tasks/get') return answer(task);
  if (m.method === 'tasks/result') return answer({ content: 'not blocks' });
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `no method ${m.method}` } });
});
