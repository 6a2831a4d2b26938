/**
 * An MCP server over stdio, written as raw JSON-RPC lines, that pages its tools/list:
 * `node pagedToolList.mjs <pages> <toolsPerPage> <descriptionChars>`. Page n holds tools
 * `p<n>_t<i>`; every page but the last names the next with a cursor.
 */
import { serveRawMcp } from './serveRawMcp.mjs';

const [pages, perPage, descriptionChars] = process.argv.slice(2).map(Number);
const page = (n) =>
  Array.from({ length: perPage }, (_, i) => ({
    name: `p${n}_t${i}`,
    description: `tool ${i} of page ${n} ${'x'.repeat(descriptionChars)}`,
    inputSchema: { type: 'object' },
  }));

serveRawMcp({
  name: 'paged',
  capabilities: { tools: {} },
  handlers: {
    'tools/list': (m) => {
      const n = m.params?.cursor ? Number(m.params.cursor.slice('page-'.length)) : 0;
      return { tools: page(n), ...(n + 1 < pages ? { nextCursor: `page-${n + 1}` } : {}) };
    },
    'tools/call': (m) => ({ content: [{ type: 'text', text: `called ${m.params.name}` }] }),
  },
});
