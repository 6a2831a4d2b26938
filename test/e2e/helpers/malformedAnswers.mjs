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
import { answer, responseTo, serveRawMcp } from './serveRawMcp.mjs';

const args = process.argv.slice(2);
const http = args[0]?.startsWith('--http=') ? args.shift().slice('--http='.length) : undefined;
const [BAD_LIST, BAD_SHAPE] = args;

const SHAPES = ['null', 'text', 'list', 'number', 'empty', 'bad', 'bare'];
const NAMES = [...SHAPES, 'ok'];
const schema = { type: 'object', properties: {} };

/** The malformed answer of `shape`, where `field` is what the method's result must hold. */
function malformed(shape, field) {
  if (shape === 'bare') return answer({});
  return { null: null, text: 'a string', list: [1, 2], number: 42, empty: {}, bad: { [field]: 'not a list' } }[shape];
}

const LISTS = {
  'tools/list': ['tools', () => NAMES.map((name) => ({ name, inputSchema: schema }))],
  'prompts/list': ['prompts', () => NAMES.map((name) => ({ name }))],
  'resources/list': ['resources', () => NAMES.map((name) => ({ uri: `odd://${name}`, name }))],
  'resources/templates/list': ['resourceTemplates', () => [{ uriTemplate: 'odd://{name}', name: 'by name' }]],
};

/** The handler of a list method: its list, or a malformed answer if the arguments name the method. */
function list([field, items]) {
  return (m) => (BAD_LIST === m.method ? malformed(BAD_SHAPE, field) : { [field]: items() });
}
/** A malformed answer for the shape named `name`, else `good()`. */
const shaped = (name, field, good) => (SHAPES.includes(name) ? malformed(name, field) : good());

const SERVER = {
  name: 'malformed-answers',
  capabilities: { tools: {}, prompts: {}, resources: {} },
  handlers: {
    ...Object.fromEntries(Object.entries(LISTS).map(([method, spec]) => [method, list(spec)])),
    'tools/call': ({ params: { name } }) => shaped(name, 'content', () => ({ content: [{ type: 'text', text: `called ${name}` }] })),
    'prompts/get': ({ params: { name } }) =>
      shaped(name, 'messages', () => ({ messages: [{ role: 'user', content: { type: 'text', text: `prompt ${name}` } }] })),
    'resources/read': ({ params: { uri } }) => {
      const name = String(uri).replace('odd://', '');
      return shaped(name, 'contents', () => ({ contents: [{ uri, text: `read ${name}` }] }));
    },
  },
};

if (!http) serveRawMcp(SERVER);
else {
  const server = createServer((req, res) => {
    if (req.method !== 'POST') return res.writeHead(405).end();
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const m = JSON.parse(body);
      if (m.id === undefined || m.method === undefined) return res.writeHead(202).end();
      const text = JSON.stringify(responseTo(m, SERVER));
      if (http === 'json') return res.writeHead(200, { 'content-type': 'application/json' }).end(text);
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`event: message\ndata: ${text}\n\n`);
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
}
