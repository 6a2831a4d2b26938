/**
 * An MCP server over stdio, written as raw JSON-RPC, that announces notifications/tools/list_changed
 * 50 ms after the client says it is initialized (as server-everything does when it registers its
 * conditional tools), and answers the tools/list that follows it slowly (1 s) while its first
 * tools/list, prompts/list and resources/list take 600 ms (the client may wait a little before
 * it refreshes): a refresh starts while the connect is
 * still listing and ends after it. One prompt `hello`, one resource `race://notes`, one tool `ping`.
 */
import { serveRawMcp } from './serveRawMcp.mjs';

let toolLists = 0;
const after = (ms, result) => new Promise((resolve) => setTimeout(() => resolve(result), ms));

serveRawMcp({
  name: 'list-changed-at-connect',
  capabilities: { tools: { listChanged: true }, prompts: {}, resources: {} },
  handlers: {
    'notifications/initialized': (_m, send) => setTimeout(() => send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }), 50),
    'tools/list': () =>
      after(++toolLists === 1 ? 600 : 1000, { tools: [{ name: 'ping', inputSchema: { type: 'object', properties: {} } }] }),
    'prompts/list': () => after(600, { prompts: [{ name: 'hello' }] }),
    'resources/list': () => after(600, { resources: [{ uri: 'race://notes', name: 'notes' }] }),
    'resources/templates/list': () => ({ resourceTemplates: [] }),
    'prompts/get': () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] }),
  },
});
