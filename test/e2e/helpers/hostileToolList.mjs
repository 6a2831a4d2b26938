/**
 * An MCP server over stdio, written as raw JSON-RPC lines, whose tools/list is what a careless or
 * hostile upstream sends and an SDK server would not: output and input schemas with dangling,
 * remote and looping `$ref`s, a tool listed twice.
 * Beside them, tools any client can use (one with a recursive schema that is fine). Each call
 * answers the tool's name.
 */
import { serveRawMcp } from './serveRawMcp.mjs';

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

serveRawMcp({
  name: 'hostile-tool-list',
  capabilities: { tools: {} },
  handlers: {
    'tools/list': () => ({ tools }),
    // A tool with an output schema answers structured content too (clients require it).
    'tools/call': (m) => ({
      content: [{ type: 'text', text: `called ${m.params.name}` }],
      ...(m.params.name === 'linked-list' ? { structuredContent: { child: {} } } : {}),
    }),
  },
});
