/**
 * An MCP server over stdio, written as raw JSON-RPC, whose prompts/list and resources/list fail
 * the first times they are asked (a JSON-RPC error, as a busy or still-starting server answers),
 * then answer: one prompt `hello` and one resource `flaky://notes/<the argument>`. Its tools list at once.
 * Argument: how many times each of the two lists fails first (default 1). Each list request is
 * written to stderr as `asked <method>`, for the test to count.
 */
import { errorAnswer, serveRawMcp } from './serveRawMcp.mjs';

const FAILURES = Number(process.argv[2] ?? 1);
const asked = { 'prompts/list': 0, 'resources/list': 0 };

/** The list's answer, after it failed FAILURES times. */
const flaky = (answer) => (m) => {
  process.stderr.write(`asked ${m.method}\n`);
  return asked[m.method]++ < FAILURES ? errorAnswer(-32603, 'not ready yet') : answer;
};

serveRawMcp({
  name: 'flaky-lists',
  capabilities: { tools: {}, prompts: {}, resources: {} },
  handlers: {
    'prompts/list': flaky({ prompts: [{ name: 'hello', description: 'says hello' }] }),
    'resources/list': flaky({ resources: [{ uri: `flaky://notes/${FAILURES}`, name: 'notes', mimeType: 'text/plain' }] }),
    'tools/list': () => ({ tools: [{ name: 'ping', inputSchema: { type: 'object', properties: {} } }] }),
    'tools/call': () => ({ content: [{ type: 'text', text: 'pong' }] }),
    'prompts/get': () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] }),
    'resources/read': (m) => ({ contents: [{ uri: m.params.uri, mimeType: 'text/plain', text: 'the notes' }] }),
    'resources/templates/list': () => ({ resourceTemplates: [] }),
  },
});
