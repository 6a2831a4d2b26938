/**
 * An MCP server written as raw JSON-RPC, whose answers are JSON-RPC results of the wrong shape
 * for their method: a tool, a prompt or a resource per shape (`null`, `text` a string, `list` an
 * array, `number`, `empty` an object without the method's required field, `bad` that field of the
 * wrong type, `bare` a response with neither result nor error), and `ok` that answers properly.
 *
 * Over stdio by default. `--http=json` or `--http=sse`: a Streamable HTTP server (2025 revision,
 * without sessions) on 127.0.0.1 that answers each request as JSON or on an SSE stream, and
 * prints `listening <port>` once it listens. Then two more arguments, a list method (tools/list,
 * prompts/list, resources/list or resources/templates/list) and a shape, make that list's answer
 * malformed.
 */
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

const args = process.argv.slice(2);
const http = args[0]?.startsWith('--http=') ? args.shift().slice('--http='.length) : undefined;
const [BAD_LIST, BAD_SHAPE] = args;

const SHAPES = ['null', 'text', 'list', 'number', 'empty', 'bad', 'bare'];
const NAMES = [...SHAPES, 'ok'];
const schema = { type: 'object', properties: {} };

/** The malformed answer of `shape`, where `field` is what the method's result must hold. */
function malformed(id, shape, field) {
  if (shape === 'bare') return { jsonrpc: '2.0', id };
  const result = { null: null, text: 'a string', list: [1, 2], number: 42, empty: {}, bad: { [field]: 'not a list' } }[shape];
  return { jsonrpc: '2.0', id, result };
}

const LISTS = {
  'tools/list': ['tools', () => NAMES.map((name) => ({ name, inputSchema: schema }))],
  'prompts/list': ['prompts', () => NAMES.map((name) => ({ name }))],
  'resources/list': ['resources', () => NAMES.map((name) => ({ uri: `odd://${name}`, name }))],
  'resources/templates/list': ['resourceTemplates', () => [{ uriTemplate: 'odd://{name}', name: 'by name' }]],
};

/** The answer to request `m`. */
function answerOf(m) {
  const answer = (result) => ({ jsonrpc: '2.0', id: m.id, result });
  if (m.method === 'initialize')
    return answer({
      protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {}, prompts: {}, resources: {} },
      serverInfo: { name: 'malformed-answers', version: '1' },
    });
  const list = LISTS[m.method];
  if (list) return BAD_LIST === m.method ? malformed(m.id, BAD_SHAPE, list[0]) : answer({ [list[0]]: list[1]() });
  if (m.method === 'tools/call') {
    const name = m.params.name;
    if (SHAPES.includes(name)) return malformed(m.id, name, 'content');
    return answer({ content: [{ type: 'text', text: `called ${name}` }] });
  }
  if (m.method === 'prompts/get') {
    const name = m.params.name;
    if (SHAPES.includes(name)) return malformed(m.id, name, 'messages');
    return answer({ messages: [{ role: 'user', content: { type: 'text', text: `prompt ${name}` } }] });
  }
  if (m.method === 'resources/read') {
    const name = String(m.params.uri).replace('odd://', '');
    if (SHAPES.includes(name)) return malformed(m.id, name, 'contents');
    return answer({ contents: [{ uri: m.params.uri, text: `read ${name}` }] });
  }
  if (m.method === 'ping') return answer({});
  return { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `no method ${m.method}` } };
}

if (!http) {
  createInterface({ input: process.stdin }).on('line', (line) => {
    const m = JSON.parse(line);
    if (m.id !== undefined && m.method !== undefined) process.stdout.write(`${JSON.stringify(answerOf(m))}\n`);
  });
} else {
  const server = createServer((req, res) => {
    if (req.method !== 'POST') return res.writeHead(405).end();
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const m = JSON.parse(body);
      if (m.id === undefined || m.method === undefined) return res.writeHead(202).end();
      const text = JSON.stringify(answerOf(m));
      if (http === 'json') return res.writeHead(200, { 'content-type': 'application/json' }).end(text);
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`event: message\ndata: ${text}\n\n`);
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
}
