/**
 * An MCP server over stdio, written as raw JSON-RPC, that announces notifications/tools/list_changed
 * 50 ms after the client says it is initialized (as server-everything does when it registers its
 * conditional tools), and answers the tools/list that follows it slowly (1 s) while its first
 * tools/list, prompts/list and resources/list take 600 ms (the client may wait a little before
 * it refreshes): a refresh starts while the connect is
 * still listing and ends after it. One prompt `hello`, one resource `race://notes`, one tool `ping`.
 */
import { createInterface } from 'node:readline';

let toolLists = 0;
const send = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);

function answer(m) {
  const result = (r) => ({ jsonrpc: '2.0', id: m.id, result: r });
  switch (m.method) {
    case 'initialize':
      return [
        0,
        result({
          protocolVersion: m.params.protocolVersion,
          capabilities: { tools: { listChanged: true }, prompts: {}, resources: {} },
          serverInfo: { name: 'list-changed-at-connect', version: '1' },
        }),
      ];
    case 'tools/list':
      return [++toolLists === 1 ? 600 : 1000, result({ tools: [{ name: 'ping', inputSchema: { type: 'object', properties: {} } }] })];
    case 'prompts/list':
      return [600, result({ prompts: [{ name: 'hello' }] })];
    case 'resources/list':
      return [600, result({ resources: [{ uri: 'race://notes', name: 'notes' }] })];
    case 'resources/templates/list':
      return [0, result({ resourceTemplates: [] })];
    case 'prompts/get':
      return [0, result({ messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] })];
    case 'ping':
      return [0, result({})];
    default:
      return [0, { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `no method ${m.method}` } }];
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'notifications/initialized') setTimeout(() => send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }), 50);
  if (m.id === undefined || m.method === undefined) return;
  const [delay, reply] = answer(m);
  setTimeout(() => send(reply), delay);
});
