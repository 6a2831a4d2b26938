/**
 * A raw MCP server, one JSON-RPC message a line, for the test upstreams that must send what an
 * SDK server would not (malformed, racy or hostile answers): written by hand so that nothing
 * between the script and the wire corrects them. It answers `initialize` (the client's protocol
 * version, the given capabilities) and `ping`; every other method goes to `handlers`, and a method
 * without one gets the JSON-RPC "method not found" error.
 *
 * A handler gets the message and `send` (to write notifications of its own) and returns the
 * result, or a promise of it (to answer late), or `answer(fields)` to send a response of its own
 * making (an error, or a malformed one). Notifications go to their handler too, if there is one,
 * and are not answered; the client's responses are dropped (no script here asks it anything).
 */
import { createInterface } from 'node:readline';

const RAW = Symbol('raw answer');

/** A response whose fields besides `jsonrpc` and `id` are `fields` as they are (`{}` is one with neither result nor error). */
export const answer = (fields) => ({ [RAW]: fields });

/** A JSON-RPC error response. */
export const errorAnswer = (code, message) => answer({ error: { code, message } });

/** The response to request `m` (a promise if its handler answers late). */
export function responseTo(m, { name, capabilities, handlers }, send) {
  const respond = (value) => ({ jsonrpc: '2.0', id: m.id, ...(value?.[RAW] ?? { result: value }) });
  if (m.method === 'initialize')
    return respond({ protocolVersion: m.params.protocolVersion, capabilities, serverInfo: { name, version: '1' } });
  const handler = handlers[m.method];
  if (handler) {
    const value = handler(m, send);
    return value instanceof Promise ? value.then(respond) : respond(value);
  }
  if (m.method === 'ping') return respond({});
  return respond(errorAnswer(-32601, `no method ${m.method}`));
}

/**
 * Serves `server` ({ name, capabilities, handlers }) over stdio. Each answer is written as soon
 * as its handler has it: a late one (a racy script's) does not hold back those after it.
 */
export function serveRawMcp(server) {
  const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    const m = JSON.parse(line);
    if (m.method === undefined) return;
    if (m.id === undefined) return void server.handlers[m.method]?.(m, send);
    const response = responseTo(m, server, send);
    if (response instanceof Promise) void response.then(send);
    else send(response);
  });
}
