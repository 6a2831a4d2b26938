/**
 * An MCP server over stdio, written as raw JSON-RPC lines, that pages its tools/list:
 * `node pagedToolList.mjs <pages> <toolsPerPage> <descriptionChars>`. Page n holds tools
 * `p<n>_t<i>`; every page but the last names the next with a cursor.
 */
import { createInterface } from 'node:readline';

const [pages, perPage, descriptionChars] = process.argv.slice(2).map(Number);
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const page = (n) =>
  Array.from({ length: perPage }, (_, i) => ({
    name: `p${n}_t${i}`,
    description: `tool ${i} of page ${n} ${'x'.repeat(descriptionChars)}`,
    inputSchema: { type: 'object' },
  }));

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize')
    return send({
      jsonrpc: '2.0',
      id: m.id,
      result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'paged', version: '1' } },
    });
  if (m.method === 'tools/list') {
    const n = m.params?.cursor ? Number(m.params.cursor.slice('page-'.length)) : 0;
    return send({ jsonrpc: '2.0', id: m.id, result: { tools: page(n), ...(n + 1 < pages ? { nextCursor: `page-${n + 1}` } : {}) } });
  }
  if (m.method === 'tools/call')
    return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: `called ${m.params.name}` }] } });
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `no method ${m.method}` } });
});
