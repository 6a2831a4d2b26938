/**
 * An MCP server over stdio, written as raw JSON-RPC lines, whose tools/list is what a careless or
 * hostile upstream sends and an SDK server would not: output and input schemas with dangling,
 * remote and looping `$ref`s, a tool listed twice.
 * Beside them, tools any client can use (one with a recursive schema that is fine). Each call
 * answers the tool's name.
 */
import { createInterface } from 'node:readline';

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const linkedList = {
  type: 'object',
  properties: { head: { $ref: '#/$defs/node' } },
  $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } } } },
};
const tools = [
  { name: 'echo', description: 'the first echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } },
  {
    name: 'linked-list',
    description: 'a recursive schema',
    inputSchema: linkedList,
    outputSchema: { type: 'object', properties: { child: { $ref: '#' } } },
  },
  {
    name: 'dangling-output',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } },
  },
  { name: 'remote-ref', inputSchema: { type: 'object', properties: { a: { $ref: 'https://example.com/schema.json' } } } },
  { name: 'ref-cycle', inputSchema: { type: 'object', $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } } },
  { name: 'echo', description: 'the second echo', inputSchema: { type: 'object' } },
];

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize')
    return send({
      jsonrpc: '2.0',
      id: m.id,
      result: {
        protocolVersion: m.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'hostile-tool-list', version: '1' },
      },
    });
  if (m.method === 'tools/list') return send({ jsonrpc: '2.0', id: m.id, result: { tools } });
  if (m.method === 'tools/call') {
    // A tool with an output schema answers structured content too (clients require it).
    const structured = m.params.name === 'linked-list' ? { structuredContent: { child: {} } } : {};
    return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: `called ${m.params.name}` }], ...structured } });
  }
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `no method ${m.method}` } });
});
