/**
 * An MCP server over stdio, written as raw JSON-RPC, whose prompts/list and resources/list fail
 * the first times they are asked (a JSON-RPC error, as a busy or still-starting server answers),
 * then answer: one prompt `hello` and one resource `flaky://notes/<the argument>`. Its tools list at once.
 * Argument: how many times each of the two lists fails first (default 1). Each list request is
 * written to stderr as `asked <method>`, for the test to count.
 */
import { createInterface } from 'node:readline';

const FAILURES = Number(process.argv[2] ?? 1);
const asked = { 'prompts/list': 0, 'resources/list': 0 };

function answerOf(m) {
  const answer = (result) => ({ jsonrpc: '2.0', id: m.id, result });
  if (m.method === 'initialize')
    return answer({
      protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {}, prompts: {}, resources: {} },
      serverInfo: { name: 'flaky-lists', version: '1' },
    });
  if (m.method in asked) {
    process.stderr.write(`asked ${m.method}\n`);
    if (asked[m.method]++ < FAILURES) return { jsonrpc: '2.0', id: m.id, error: { code: -32603, message: 'not ready yet' } };
    if (m.method === 'prompts/list') return answer({ prompts: [{ name: 'hello', description: 'says hello' }] });
    return answer({ resources: [{ uri: `flaky://notes/${FAILURES}`, name: 'notes', mimeType: 'text/plain' }] });
  }
  if (m.method === 'tools/list') return answer({ tools: [{ name: 'ping', inputSchema: { type: 'object', properties: {} } }] });
  if (m.method === 'tools/call') return answer({ content: [{ type: 'text', text: 'pong' }] });
  if (m.method === 'prompts/get') return answer({ messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] });
  if (m.method === 'resources/read') return answer({ contents: [{ uri: m.params.uri, mimeType: 'text/plain', text: 'the notes' }] });
  if (m.method === 'resources/templates/list') return answer({ resourceTemplates: [] });
  if (m.method === 'ping') return answer({});
  return { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `no method ${m.method}` } };
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id !== undefined && m.method !== undefined) process.stdout.write(`${JSON.stringify(answerOf(m))}\n`);
});
